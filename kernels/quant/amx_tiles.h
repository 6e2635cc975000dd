// What the AMX kernels (quant_dot_amx.cc over the file's blocks, repacked_kquant_amx.cc over the
// K-quants' repacked rows) share: the tile configuration that LDTILECFG
// reads, and the activation rows laid out as A tiles load them.
//
// Every tile product here is C[i][j] += Σ_k A[i][k]·B[k / 4][j][k % 4] over 8-bit integers into
// 32-bit sums: exact, so a kernel's result depends only on the float work it does with the sums,
// which is what lets the repacked kernels reproduce the vector kernels' bits.
#ifndef ARBOR_KERNELS_QUANT_AMX_TILES_H_
#define ARBOR_KERNELS_QUANT_AMX_TILES_H_

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace arbor::kernels::amx {

// Rows of a tile, and of the A operand's activation rows and the C operand's sums.
inline constexpr int kTileRows = 16;

// The tile palette 1 configuration (64 bytes, the layout LDTILECFG reads).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  // Tile `tile` as `rows` rows of `bytes` bytes.
  void Set(int tile, int tile_rows, int bytes) {
    rows[tile] = static_cast<uint8_t>(tile_rows);
    colsb[tile] = static_cast<uint16_t>(bytes);
  }
  // Pairs of tiles C (16 × 16 int32), A (16 activation rows × `k` bytes) and B (k / 4 rows of
  // 16 weight rows × 4 bytes), numbered c0, c1, a0, a1, b0, b1 from 0: the repacked kernels'.
  static TileConfig Products(int k) {
    TileConfig config;
    for (int tile : {0, 1}) config.Set(tile, kTileRows, 64);
    for (int tile : {2, 3}) config.Set(tile, kTileRows, k);
    for (int tile : {4, 5}) config.Set(tile, k / 4, 64);
    return config;
  }
};

// Activation rows as A tiles read them: for each tile of 16 rows and each block of k, the
// tile's 16 rows of that block side by side (`block_bytes` apart), rows past the caller's zeros.
// A tile load then reads 16 nearby rows: from the rows' own layout, 16 rows k bytes apart fall
// into a few sets of the L1 cache when k is a multiple of 4 KiB, and each load evicted the last
// (measured: Q6_K's tile products at k = 8192 ran 1.4× faster from the copy). The copy is once
// per call, as large as the activations.
class ActivationTiles {
 public:
  // `rows` rows of `blocks` blocks, row i's first byte at row(i); `storage` is kept between
  // calls by the caller so that a call does not allocate.
  template <typename Row>
  ActivationTiles(int64_t rows, int64_t blocks, int block_bytes, const Row& row,
                  std::vector<int8_t>& storage)
      : blocks_(blocks), block_bytes_(block_bytes) {
    const int64_t tiles = (rows + kTileRows - 1) / kTileRows;
    storage.resize(tiles * blocks * kTileRows * block_bytes);
    data_ = storage.data();
    for (int64_t t = 0; t < tiles; ++t) {
      for (int j = 0; j < kTileRows; ++j) {
        const int64_t i = t * kTileRows + j;
        const int8_t* src = i < rows ? row(i) : nullptr;
        for (int64_t b = 0; b < blocks; ++b) {
          int8_t* dst = data_ + ((t * blocks + b) * kTileRows + j) * block_bytes;
          if (src == nullptr) {
            std::memset(dst, 0, block_bytes);
          } else {
            std::memcpy(dst, src + b * block_bytes, block_bytes);
          }
        }
      }
    }
  }
  // Block `block` of the tile from activation row `row0` (a multiple of 16): 16 rows, stride()
  // bytes apart.
  const int8_t* Tile(int64_t row0, int64_t block) const {
    return data_ + ((row0 / kTileRows * blocks_ + block) * kTileRows) * block_bytes_;
  }
  int64_t stride() const { return block_bytes_; }

 private:
  int64_t blocks_;
  int block_bytes_;
  int8_t* data_;
};

}  // namespace arbor::kernels::amx

#endif  // ARBOR_KERNELS_QUANT_AMX_TILES_H_
