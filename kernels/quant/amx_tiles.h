// What the AMX kernels (quant_dot_amx.cc over the file's blocks; repacked_amx.cc and
// repacked_kquant_amx.cc over the repacked rows) share: the tile configuration that LDTILECFG
// reads, and the activation rows an A tile loads, padded to whole tiles.
//
// Every tile product here is C[i][j] += Σ_k A[i][k]·B[k / 4][j][k % 4] over 8-bit integers into
// 32-bit sums: exact, so a kernel's result depends only on the float work it does with the sums,
// which is what lets the repacked kernels reproduce the vector kernels' bits.
#ifndef ARBOR_KERNELS_QUANT_AMX_TILES_H_
#define ARBOR_KERNELS_QUANT_AMX_TILES_H_

#include <algorithm>
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

// Activation rows as A tiles read them: `rows` rows `stride` bytes apart. The rows of a last,
// partial tile are copied into a zeroed buffer of whole tiles, so that no tile load reads past
// the caller's rows.
class ActivationTiles {
 public:
  ActivationTiles(const int8_t* q, int64_t rows, int64_t stride)
      : q_(q), rows_(rows), stride_(stride) {
    const int64_t whole = rows / kTileRows * kTileRows;
    if (whole == rows) return;
    tail_.assign(kTileRows * stride, 0);
    std::memcpy(tail_.data(), q + whole * stride, (rows - whole) * stride);
  }
  // The first byte of tile row 0 of the tile from activation row `row0` (a multiple of 16).
  const int8_t* Tile(int64_t row0) const {
    return row0 + kTileRows <= rows_ ? q_ + row0 * stride_ : tail_.data();
  }
  int64_t stride() const { return stride_; }

 private:
  const int8_t* q_;
  int64_t rows_, stride_;
  std::vector<int8_t> tail_;
};

}  // namespace arbor::kernels::amx

#endif  // ARBOR_KERNELS_QUANT_AMX_TILES_H_
