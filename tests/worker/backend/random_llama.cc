#include "tests/worker/backend/random_llama.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "base/status_macros.h"
#include "model/llama_tensors.h"
#include "tests/support/rope_reference.h"
#include "worker/kv/kv_cache.h"

namespace arbor::worker::testing {

model::ModelConfig TinyConfig() {
  model::ModelConfig c;
  c.name = "tiny";
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.vocab_size = 512;
  c.max_position_embeddings = 4096;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.rope_scaling = {model::RopeScaling::Type::kLlama3, 4.0f, 1.0f, 4.0f, 64, {}};
  return c;
}

RandomLlama::RandomLlama(const model::ModelConfig& c, bool bf16, std::mt19937& rng)
    : config_(c), bf16_(bf16) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  Add("model.embed_tokens.weight", {c.vocab_size, h}, 1.0, 0.0, rng);
  if (!c.tie_word_embeddings) Add("lm_head.weight", {c.vocab_size, h}, 1.0 / std::sqrt(h), 0, rng);
  Add("model.norm.weight", {h}, 0.1, 1.0, rng);
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    Add(p + "input_layernorm.weight", {h}, 0.1, 1.0, rng);
    Add(p + "post_attention_layernorm.weight", {h}, 0.1, 1.0, rng);
    // Larger q/k scales give peaked attention, which exercises the softmax.
    Add(p + "self_attn.q_proj.weight", {q, h}, 2.0 / std::sqrt(h), 0, rng);
    Add(p + "self_attn.k_proj.weight", {kv, h}, 2.0 / std::sqrt(h), 0, rng);
    Add(p + "self_attn.v_proj.weight", {kv, h}, 1.0 / std::sqrt(h), 0, rng);
    if (c.qkv_bias()) {
      // Qwen2's biases are as large as the projections' outputs (its k biases more so).
      Add(p + "self_attn.q_proj.bias", {q}, 1.0, 0, rng);
      Add(p + "self_attn.k_proj.bias", {kv}, 2.0, 0, rng);
      Add(p + "self_attn.v_proj.bias", {kv}, 1.0, 0, rng);
    }
    Add(p + "self_attn.o_proj.weight", {h, q}, 1.0 / std::sqrt(q), 0, rng);
    if (model::Describe(c.architecture).qk_norm) {
      // Qwen3's per-head q/k norm weights; spread wide so that a missing norm shows.
      Add(p + "self_attn.q_norm.weight", {c.head_dim}, 0.5, 1.0, rng);
      Add(p + "self_attn.k_norm.weight", {c.head_dim}, 0.5, 1.0, rng);
    }
    Add(p + "mlp.gate_proj.weight", {f, h}, 1.0 / std::sqrt(h), 0, rng);
    Add(p + "mlp.up_proj.weight", {f, h}, 1.0 / std::sqrt(h), 0, rng);
    Add(p + "mlp.down_proj.weight", {h, f}, 1.0 / std::sqrt(f), 0, rng);
  }
}

void RandomLlama::Add(const std::string& name, std::vector<int64_t> shape, double scale,
                      double offset, std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::normal_distribution<double> normal(offset, scale);
  std::vector<float>& values = f32_[name];
  values.resize(n);
  for (float& v : values) v = static_cast<float>(normal(rng));
  if (bf16_) {
    std::vector<uint16_t>& b = bf16_data_[name];
    for (float v : values) b.push_back(base::FloatToBf16(v));
  }
  shapes_[name] = std::move(shape);
}

double RandomLlama::At(const std::string& name, int64_t i) const {
  if (bf16_) return base::Bf16ToFloat(bf16_data_.at(name)[i]);
  return f32_.at(name)[i];
}

int64_t RandomLlama::bytes() const {
  int64_t total = 0;
  for (const auto& [name, values] : f32_) total += values.size() * (bf16_ ? 2 : 4);
  return total;
}

namespace {

// The largest |integer · sub-scale| of a type's weights.
float LargestProduct(model::DType dtype) {
  switch (dtype) {
    case model::DType::kQ8_0:
      return 127;
    case model::DType::kQ4_0:
    case model::DType::kQ4_1:
      return 16;
    case model::DType::kQ5_0:
    case model::DType::kQ5_1:
      return 32;
    case model::DType::kQ4_K:
      return 63 * 15;
    case model::DType::kQ5_K:
      return 63 * 31;
    default:
      return 128 * 32;  // Q6_K: int8 sub-scales × 6-bit integers.
  }
}

}  // namespace

RandomBlockLlama::RandomBlockLlama(const model::ModelConfig& c,
                                   const std::vector<model::DType>& types, std::mt19937& rng)
    : base_(c, /*bf16=*/true, rng) {
  const int64_t h = c.hidden_size, f = c.intermediate_size;
  const int64_t q = int64_t{c.num_heads} * c.head_dim, kv = int64_t{c.num_kv_heads} * c.head_dim;
  for (int l = 0; l < c.num_layers; ++l) {
    const model::LlamaLayerNames n = model::LlamaLayerTensorNames(l);
    SetBlocks(n.q, types[0], q, h, rng);
    SetBlocks(n.k, types[1], kv, h, rng);
    SetBlocks(n.v, types[2], kv, h, rng);
    SetBlocks(n.o, types[3], h, q, rng);
    SetBlocks(n.gate, types[4], f, h, rng);
    SetBlocks(n.up, types[5], f, h, rng);
    SetBlocks(n.down, types[6], h, f, rng);
  }
  // The head's type: its own matrix's, or the tied embedding table's (as GGUF files store it).
  SetBlocks(c.tie_word_embeddings ? model::kEmbedTokensName : model::kLmHeadName, types[7],
            c.vocab_size, h, rng);
}

void RandomBlockLlama::SetBlocks(const std::string& name, model::DType dtype, int64_t rows,
                                 int64_t cols, std::mt19937& rng) {
  const model::DTypeLayout layout = model::Layout(dtype);
  Blocks& blocks = blocks_[name];
  blocks.dtype = dtype;
  blocks.shape = {rows, cols};
  blocks.bytes.resize(rows * model::RowBytes(dtype, cols));
  for (uint8_t& b : blocks.bytes) b = static_cast<uint8_t>(rng());
  const float largest = 0.2f / LargestProduct(dtype);
  std::uniform_real_distribution<float> scale(largest / 4, largest);
  for (size_t at = 0; at < blocks.bytes.size(); at += layout.block_bytes) {
    for (int offset : model::HalfFieldOffsets(dtype)) {
      const uint16_t half = base::FloatToHalf((rng() & 1 ? 1 : -1) * scale(rng));
      std::memcpy(&blocks.bytes[at + offset], &half, 2);
    }
  }
}

TensorLookup RandomBlockLlama::Lookup() const {
  const TensorLookup base = base_.Lookup();
  return [this, base](const std::string& name) -> absl::StatusOr<model::TensorView> {
    auto it = blocks_.find(name);
    if (it == blocks_.end()) return base(name);
    const Blocks& b = it->second;
    return model::TensorView{name, b.dtype, b.shape, b.bytes.data(), b.bytes.size()};
  };
}

TensorLookup RandomLlama::Lookup() const {
  return [this](const std::string& name) -> absl::StatusOr<model::TensorView> {
    auto shape = shapes_.find(name);
    if (shape == shapes_.end()) return absl::NotFoundError(absl::StrCat("no tensor ", name));
    model::TensorView t;
    t.name = name;
    t.shape = shape->second;
    if (bf16_) {
      const std::vector<uint16_t>& data = bf16_data_.at(name);
      t.dtype = model::DType::kBF16;
      t.data = data.data();
      t.nbytes = data.size() * 2;
    } else {
      const std::vector<float>& data = f32_.at(name);
      t.dtype = model::DType::kF32;
      t.data = data.data();
      t.nbytes = data.size() * 4;
    }
    return t;
  };
}

namespace {

// out[t, n] = Σ_k in[t, k] · W[n, k] (+ b[n] when `bias` names a tensor)
std::vector<double> Linear(const RandomLlama& m, const std::string& name,
                           const std::vector<double>& in, int64_t tokens, int64_t in_dim,
                           int64_t out_dim, const std::string& bias = "") {
  std::vector<double> out(tokens * out_dim, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t n = 0; n < out_dim; ++n) {
      double sum = bias.empty() ? 0.0 : m.At(bias, n);
      for (int64_t k = 0; k < in_dim; ++k) sum += in[t * in_dim + k] * m.At(name, n * in_dim + k);
      out[t * out_dim + n] = sum;
    }
  }
  return out;
}

std::vector<double> Norm(const RandomLlama& m, const std::string& name,
                         const std::vector<double>& in, int64_t tokens, int64_t dim, double eps) {
  std::vector<double> out(in.size());
  for (int64_t t = 0; t < tokens; ++t) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += in[t * dim + i] * in[t * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) out[t * dim + i] = in[t * dim + i] * inv * m.At(name, i);
  }
  return out;
}

double InvFreq(const model::ModelConfig& c, int i) {
  const double base = std::pow(double{c.rope_theta}, -2.0 * i / c.head_dim);
  const model::RopeScaling& s = c.rope_scaling;
  if (s.type == model::RopeScaling::Type::kNone) return base;
  if (s.type == model::RopeScaling::Type::kLinear) return base / s.factor;
  return kernels::reference::Llama3ScaledInvFreq64(
      base, s.factor, s.low_freq_factor, s.high_freq_factor, s.original_max_position_embeddings);
}

void Rope(const model::ModelConfig& c, std::vector<double>& x, int64_t tokens, int64_t heads) {
  const int64_t hd = c.head_dim, half = hd / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      double* v = &x[(t * heads + h) * hd];
      for (int64_t i = 0; i < half; ++i) {
        const double angle = t * InvFreq(c, i);
        const double a = v[i], b = v[i + half];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
}

// Causal attention of n tokens' rotated q and k over v, each head against its kv head; the last
// token's scaled scores (before the softmax) appended to `last_scores` where it is given.
std::vector<double> Attend(const model::ModelConfig& c, const std::vector<double>& q,
                           const std::vector<double>& k, const std::vector<double>& v, int64_t n,
                           std::vector<double>* last_scores) {
  const int64_t hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads, group = nh / nkv;
  std::vector<double> attn(n * nh * hd, 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t head = 0; head < nh; ++head) {
      const int64_t kvh = head / group;
      std::vector<double> s(t + 1);
      double max = -INFINITY;
      for (int64_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d)
          dot += q[(t * nh + head) * hd + d] * k[(j * nkv + kvh) * hd + d];
        s[j] = dot / std::sqrt(double(hd));
        max = std::max(max, s[j]);
      }
      if (last_scores != nullptr && t == n - 1) {
        last_scores->insert(last_scores->end(), s.begin(), s.end());
      }
      double sum = 0;
      for (double& e : s) sum += (e = std::exp(e - max));
      for (int64_t j = 0; j <= t; ++j) {
        for (int64_t d = 0; d < hd; ++d) {
          attn[(t * nh + head) * hd + d] += s[j] / sum * v[(j * nkv + kvh) * hd + d];
        }
      }
    }
  }
  return attn;
}

}  // namespace

Float64Forward ForwardFloat64(const RandomLlama& m, const std::vector<int32_t>& tokens) {
  const model::ModelConfig& c = m.config();
  const int64_t n = tokens.size(), h = c.hidden_size, f = c.intermediate_size, hd = c.head_dim;
  const int64_t nh = c.num_heads, nkv = c.num_kv_heads;
  Float64Forward result;
  auto& out = result.tensors;
  std::vector<double> x(n * h);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < h; ++i)
      x[t * h + i] = m.At("model.embed_tokens.weight", tokens[t] * h + i);
  }
  out["embed"] = x;
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    const std::string tap = absl::StrCat("layer", l, ".");
    const std::vector<double> a = Norm(m, p + "input_layernorm.weight", x, n, h, c.rms_norm_eps);
    out[tap + "attn_norm"] = a;
    auto bias = [&](const char* proj) {
      return c.qkv_bias() ? absl::StrCat(p, "self_attn.", proj, ".bias") : std::string();
    };
    std::vector<double> q =
        Linear(m, p + "self_attn.q_proj.weight", a, n, h, nh * hd, bias("q_proj"));
    std::vector<double> k =
        Linear(m, p + "self_attn.k_proj.weight", a, n, h, nkv * hd, bias("k_proj"));
    const std::vector<double> v =
        Linear(m, p + "self_attn.v_proj.weight", a, n, h, nkv * hd, bias("v_proj"));
    if (model::Describe(c.architecture).qk_norm) {
      // Each head's vector is one norm row of head_dim.
      q = Norm(m, p + "self_attn.q_norm.weight", q, n * nh, hd, c.rms_norm_eps);
      k = Norm(m, p + "self_attn.k_norm.weight", k, n * nkv, hd, c.rms_norm_eps);
    }
    Rope(c, q, n, nh);
    Rope(c, k, n, nkv);
    out[tap + "q"] = q;
    out[tap + "k"] = k;
    out[tap + "v"] = v;
    const std::vector<double> attn =
        Attend(c, q, k, v, n, l == c.num_layers - 1 ? &result.last_scores : nullptr);
    out[tap + "attn"] = attn;
    const std::vector<double> o = Linear(m, p + "self_attn.o_proj.weight", attn, n, nh * hd, h);
    out[tap + "attn_out"] = o;
    for (int64_t i = 0; i < n * h; ++i) x[i] += o[i];
    out[tap + "attn_residual"] = x;
    const std::vector<double> b =
        Norm(m, p + "post_attention_layernorm.weight", x, n, h, c.rms_norm_eps);
    out[tap + "mlp_norm"] = b;
    std::vector<double> g = Linear(m, p + "mlp.gate_proj.weight", b, n, h, f);
    const std::vector<double> u = Linear(m, p + "mlp.up_proj.weight", b, n, h, f);
    for (int64_t i = 0; i < n * f; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    out[tap + "mlp_act"] = g;
    const std::vector<double> d = Linear(m, p + "mlp.down_proj.weight", g, n, f, h);
    out[tap + "mlp_out"] = d;
    for (int64_t i = 0; i < n * h; ++i) x[i] += d[i];
  }
  const std::vector<double> fin = Norm(m, "model.norm.weight", x, n, h, c.rms_norm_eps);
  out["final_norm"] = fin;
  out["logits"] = Linear(m, c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight",
                         fin, n, h, c.vocab_size);
  return result;
}

absl::StatusOr<std::vector<float>> LastLogits(Backend& backend,
                                              const std::vector<int32_t>& tokens) {
  KvCache kv(&backend);
  RETURN_IF_ERROR(kv.Create(0));
  RETURN_IF_ERROR(kv.Append(0, tokens).status());
  ASSIGN_OR_RETURN(const KvSequence* sequence, kv.Find(0));
  std::vector<float> logits(backend.config().vocab_size);
  ForwardRow row{
      .tokens = tokens, .start_pos = 0, .block_table = sequence->blocks, .logits = logits.data()};
  RETURN_IF_ERROR(backend.Forward({&row, 1}));
  return logits;
}

}  // namespace arbor::worker::testing
