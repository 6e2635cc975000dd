// The GGUF reader on files built byte by byte (tests/model/gguf_builder.h): every metadata type
// and arrays read back; the llama mapping (config keys, tensor names, the RoPE row permutation
// undone); and malformed files refused with a message naming the problem, including every
// truncation of a valid file.
#include "model/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model/gguf_llama.h"
#include "tests/model/gguf_builder.h"

namespace arbor::model {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;

constexpr uint32_t kF32 = 0, kQ4_1 = 3, kQ8_0 = 8, kQ4_K = 12, kQ3_K = 11;

std::string Floats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
}

std::string Message(absl::string_view bytes) {
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(bytes, "t.gguf");
  return file.ok() ? "OK" : std::string(file.status().message());
}

TEST(GgufTest, ReadsEveryValueTypeAndTensors) {
  GgufBuilder b(3, 64);
  b.Raw("u8", 0, "\x07").Raw("i8", 1, "\xfe").Raw("u16", 2, GgufBuilder::PodBytes<uint16_t>(513));
  b.Raw("i16", 3, GgufBuilder::PodBytes<int16_t>(-300)).U32("general.alignment", 64);
  b.I32("i32", -70000).F32("f32", 1.5f).Bool("yes", true).String("s", "héllo");
  b.Raw("u64", 10, GgufBuilder::PodBytes<uint64_t>(1ull << 40));
  b.Raw("i64", 11, GgufBuilder::PodBytes<int64_t>(-(1ll << 40)));
  b.Raw("f64", 12, GgufBuilder::PodBytes<double>(0.25));
  b.Strings("strs", {"a", "", "ccc"}).I32s("ints", {1, -2, 3});
  // An array of arrays of uint8.
  std::string nested = GgufBuilder::PodBytes<uint32_t>(9) + GgufBuilder::PodBytes<uint64_t>(2);
  for (int i = 0; i < 2; ++i) {
    nested += GgufBuilder::PodBytes<uint32_t>(0) + GgufBuilder::PodBytes<uint64_t>(1);
    nested += std::string(1, static_cast<char>(i + 5));
  }
  b.Raw("nested", 9, nested);
  // An array of float32 (SentencePiece scores).
  b.Raw("floats", 9,
        GgufBuilder::PodBytes<uint32_t>(6) + GgufBuilder::PodBytes<uint64_t>(2) +
            GgufBuilder::PodBytes<float>(-1.5f) + GgufBuilder::PodBytes<float>(0.25f));
  b.Tensor("w", kF32, {3, 2}, Floats({1, 2, 3, 4, 5, 6}));
  b.Tensor("v", kF32, {4}, Floats({7, 8, 9, 10}));
  const std::string bytes = b.Build();
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(bytes, "t.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.GetInt("u8").value(), 7);
  EXPECT_EQ(f.GetInt("i8").value(), -2);
  EXPECT_EQ(f.GetInt("u16").value(), 513);
  EXPECT_EQ(f.GetInt("i16").value(), -300);
  EXPECT_EQ(f.GetInt("i32").value(), -70000);
  EXPECT_EQ(f.GetInt("u64").value(), 1ll << 40);
  EXPECT_EQ(f.GetInt("i64").value(), -(1ll << 40));
  EXPECT_EQ(f.GetFloat("f32").value(), 1.5);
  EXPECT_EQ(f.GetFloat("f64").value(), 0.25);
  EXPECT_TRUE(f.GetBool("yes").value());
  EXPECT_EQ(f.GetString("s").value(), "héllo");
  EXPECT_EQ(f.GetStrings("strs").value(), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.GetInts("ints").value(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(f.GetFloats("floats").value(), (std::vector<double>{-1.5, 0.25}));
  EXPECT_FALSE(f.GetFloats("ints").ok());
  const GgufValue* array = f.Find("nested");
  ASSERT_NE(array, nullptr);
  ASSERT_EQ(array->elements.size(), 2u);
  EXPECT_EQ(array->elements[1].elements[0].integer, 6);
  // Type mismatches and absent keys name the key.
  EXPECT_THAT(f.GetString("u8").status().message(), HasSubstr("'u8' is a uint8"));
  EXPECT_TRUE(absl::IsNotFound(f.GetInt("absent").status()));

  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorView& w = f.tensors()[0];
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));  // ne [3, 2] is 2 rows of 3.
  EXPECT_EQ(w.nbytes, 24u);
  EXPECT_EQ(static_cast<const float*>(w.data)[5], 6.0f);
  EXPECT_EQ((static_cast<const char*>(w.data) - bytes.data()) % 64, 0);
  EXPECT_EQ(static_cast<const float*>(f.tensors()[1].data)[3], 10.0f);
}

TEST(GgufTest, ReadsVersion2) {
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(
      GgufBuilder(2).String("k", "v").Tensor("t", kF32, {2}, Floats({1, 2})).Build(), "v2.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->version(), 2u);
  EXPECT_EQ((*file)->GetString("k").value(), "v");
  EXPECT_EQ(static_cast<const float*>((*file)->tensors()[0].data)[1], 2.0f);
}

TEST(GgufTest, QuantizedTensorsAreWholeBlocks) {
  GgufBuilder b;
  b.Tensor("q8", kQ8_0, {64, 3}, std::string(3 * 2 * 34, '\0'));
  b.Tensor("q41", kQ4_1, {32, 1}, std::string(20, '\0'));
  b.Tensor("q4k", kQ4_K, {512, 2}, std::string(2 * 2 * 144, '\0'));
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(b.Build(), "t.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->tensors()[0].dtype, DType::kQ8_0);
  EXPECT_EQ((*file)->tensors()[0].nbytes, 3u * 2 * 34);
  EXPECT_EQ((*file)->tensors()[1].nbytes, 20u);
  EXPECT_EQ((*file)->tensors()[2].dtype, DType::kQ4_K);
  EXPECT_EQ((*file)->tensors()[2].nbytes, 2u * 2 * 144);
  // A row of 48 weights is not a whole number of 32-weight blocks (llama.cpp refuses it too).
  GgufBuilder odd;
  odd.Tensor("odd", kQ8_0, {48, 2}, std::string(200, '\0'));
  EXPECT_THAT(Message(odd.Build()), HasSubstr("rows of 48 weights, not a whole number of Q8_0"));
}

TEST(GgufTest, RefusesMalformedHeaders) {
  const std::string valid =
      GgufBuilder().String("k", "v").Tensor("t", kF32, {2}, Floats({1, 2})).Build();
  ASSERT_EQ(Message(valid), "OK");
  EXPECT_THAT(Message("GGML" + valid.substr(4)), HasSubstr("not a GGUF file"));
  EXPECT_THAT(Message(GgufBuilder(1).Build()), HasSubstr("version 1 is not supported"));
  EXPECT_THAT(Message(GgufBuilder(0x03000000).Build()), HasSubstr("big-endian"));
  // Every truncation fails cleanly, naming what it ran into.
  for (size_t n = 0; n < valid.size(); ++n) {
    EXPECT_NE(Message(valid.substr(0, n)), "OK") << n;
  }
  // Counts and lengths that overrun the file fail before anything is allocated.
  std::string huge_count = valid;
  huge_count[8] = '\xff';
  huge_count[15] = '\x7f';  // tensor_count ~ 2^63.
  EXPECT_THAT(Message(huge_count), HasSubstr("tensor count claims"));
  EXPECT_THAT(
      Message(GgufBuilder().Raw("s", 8, GgufBuilder::PodBytes<uint64_t>(1ull << 60)).Build()),
      HasSubstr("claims 1152921504606846976 bytes"));
  const std::string array_header =
      GgufBuilder::PodBytes<uint32_t>(4) + GgufBuilder::PodBytes<uint64_t>(1ull << 50);
  EXPECT_THAT(Message(GgufBuilder().Raw("a", 9, array_header).Build()),
              HasSubstr("array 'a' claims"));
  EXPECT_THAT(Message(GgufBuilder().Raw("x", 13, "").Build()), HasSubstr("unknown value type 13"));
  EXPECT_THAT(Message(GgufBuilder().Raw("b", 7, "\x02").Build()), HasSubstr("bool holding 2"));
  EXPECT_THAT(Message(GgufBuilder().U32("k", 1).U32("k", 2).Build()),
              HasSubstr("repeats metadata key 'k'"));
  EXPECT_THAT(Message(GgufBuilder().U32("general.alignment", 48).Build()),
              HasSubstr("power of two"));
  // Arrays nested past the limit.
  std::string deep = GgufBuilder::PodBytes<uint32_t>(0) + GgufBuilder::PodBytes<uint64_t>(0);
  for (int i = 0; i < kGgufMaxArrayDepth + 1; ++i) {
    deep = GgufBuilder::PodBytes<uint32_t>(9) + GgufBuilder::PodBytes<uint64_t>(1) + deep;
  }
  EXPECT_THAT(Message(GgufBuilder().Raw("deep", 9, deep).Build()),
              HasSubstr("nests arrays deeper"));
}

TEST(GgufTest, RefusesBadTensors) {
  const std::string two = Floats({1, 2});
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", kQ3_K, {256}, std::string(110, '\0')).Build()),
              HasSubstr("tensor 't' has type Q3_K (11), which Arbor cannot load"));
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", 77, {2}, two).Build()),
              HasSubstr("number 77 (unknown)"));
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", kF32, {}, two).Build()), HasSubstr("0 dimensions"));
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", kF32, {1, 1, 1, 1, 2}, two).Build()),
              HasSubstr("5 dimensions"));
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", kF32, {2, 0}, two).Build()),
              HasSubstr("dimension 1 of size 0"));
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", kF32, {1ull << 39, 1ull << 39}, two).Build()),
              HasSubstr("too large"));
  EXPECT_THAT(
      Message(GgufBuilder().Tensor("t", kF32, {2}, two).Tensor("t", kF32, {2}, two).Build()),
      HasSubstr("repeats tensor 't'"));
  EXPECT_THAT(Message(GgufBuilder().Tensor("t", kF32, {2}, two, /*offset=*/4).Build()),
              HasSubstr("not a multiple of the alignment"));
  EXPECT_THAT(Message(GgufBuilder()
                          .Tensor("a", kF32, {16}, std::string(64, '\0'))
                          .Tensor("b", kF32, {2}, two, /*offset=*/32)
                          .Build()),
              HasSubstr("'a' and 'b' overlap"));
  std::string cut = GgufBuilder().Tensor("t", kF32, {8}, std::string(32, '\0')).Build();
  cut.resize(cut.size() - 4);
  EXPECT_THAT(Message(cut), HasSubstr("truncated file?"));
}

// A two-layer Llama with 2 query heads and 1 KV head of 4 dimensions, as a GGUF; `arch` names
// the architecture and prefixes the keys, "qwen2" adds the q/k/v biases and "qwen3" the per-head
// q/k norm weights.
GgufBuilder TinyLlama(const std::string& arch = "llama", uint32_t kv_heads = 1) {
  GgufBuilder b;
  const std::string k = arch + ".";
  b.String("general.architecture", arch).String("general.name", "tiny-gguf");
  b.U32(k + "block_count", 2).U32(k + "embedding_length", 8);
  b.U32(k + "feed_forward_length", 12).U32(k + "attention.head_count", 2);
  b.U32(k + "attention.head_count_kv", kv_heads).U32(k + "context_length", 64);
  b.F32(k + "attention.layer_norm_rms_epsilon", 1e-6f).F32(k + "rope.freq_base", 5e5f);
  b.U32(k + "vocab_size", 10).U32("tokenizer.ggml.bos_token_id", 1);
  b.U32("tokenizer.ggml.eos_token_id", 2).U32("tokenizer.ggml.eot_token_id", 3);
  auto tensor = [&](const std::string& name, uint64_t cols, uint64_t rows) {
    std::vector<float> values(cols * rows);
    std::iota(values.begin(), values.end(), 0.0f);
    b.Tensor(name, kF32,
             rows == 1 ? std::vector<uint64_t>{cols} : std::vector<uint64_t>{cols, rows},
             Floats(values));
  };
  tensor("token_embd.weight", 8, 10);
  tensor("output_norm.weight", 8, 1);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tensor(p + "attn_norm.weight", 8, 1);
    tensor(p + "ffn_norm.weight", 8, 1);
    tensor(p + "attn_q.weight", 8, 8);
    tensor(p + "attn_k.weight", 8, 4);
    tensor(p + "attn_v.weight", 8, 4);
    if (arch == "qwen2") {
      tensor(p + "attn_q.bias", 8, 1);
      tensor(p + "attn_k.bias", 4, 1);
      tensor(p + "attn_v.bias", 4, 1);
    }
    if (arch == "qwen3") {
      tensor(p + "attn_q_norm.weight", 4, 1);
      tensor(p + "attn_k_norm.weight", 4, 1);
    }
    tensor(p + "attn_output.weight", 8, 8);
    tensor(p + "ffn_gate.weight", 8, 12);
    tensor(p + "ffn_up.weight", 8, 12);
    tensor(p + "ffn_down.weight", 12, 8);
  }
  return b;
}

TEST(GgufLlamaTest, MapsConfigAndTensorNames) {
  const std::string bytes = TinyLlama().Build();
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(bytes, "tiny.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<GgufLlama> model = MapGgufLlama(**file);
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = model->config;
  EXPECT_EQ(c.name, "tiny-gguf");
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.hidden_size, 8);
  EXPECT_EQ(c.intermediate_size, 12);
  EXPECT_EQ(c.num_heads, 2);
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.vocab_size, 10);
  EXPECT_EQ(c.max_position_embeddings, 64);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 5e5f);
  EXPECT_TRUE(c.tie_word_embeddings);  // No output.weight.
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{2, 3}));
  ASSERT_EQ(model->tensors.count("model.layers.1.mlp.down_proj.weight"), 1u);
  EXPECT_EQ(model->tensors.at("model.layers.1.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{8, 12}));
  // k_proj (1 head of 4 rows, 8 columns): HF row t·2 + i is GGUF row 2i + t.
  const float* k =
      static_cast<const float*>(model->tensors.at("model.layers.0.self_attn.k_proj.weight").data);
  const int gguf_row_of[4] = {0, 2, 1, 3};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(k[r * 8], gguf_row_of[r] * 8.0f) << r;
}

// qwen2: its own key prefix, the biases under Hugging Face names, and q/k rows as stored (its
// converter does not permute them).
TEST(GgufLlamaTest, MapsQwen2WithBiasesAndUnpermutedRows) {
  const std::string bytes = TinyLlama("qwen2").Build();
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(bytes, "qwen.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<GgufLlama> model = MapGgufLlama(**file);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.architecture, Architecture::kQwen2);
  EXPECT_EQ(model->config.num_layers, 2);
  EXPECT_FLOAT_EQ(model->config.rope_theta, 5e5f);
  for (const char* name :
       {"model.layers.1.self_attn.q_proj.bias", "model.layers.1.self_attn.k_proj.bias",
        "model.layers.1.self_attn.v_proj.bias"}) {
    EXPECT_EQ(model->tensors.count(name), 1u) << name;
  }
  EXPECT_EQ(model->tensors.at("model.layers.0.self_attn.k_proj.bias").shape,
            (std::vector<int64_t>{4}));
  const float* k =
      static_cast<const float*>(model->tensors.at("model.layers.0.self_attn.k_proj.weight").data);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(k[r * 8], r * 8.0f) << r;
  EXPECT_TRUE(model->owned.empty());
}

// qwen3: no biases, each layer's per-head q/k norm weights under Hugging Face names, q/k rows as
// stored (NEOX RoPE), and a head size from key_length that is not hidden / heads.
TEST(GgufLlamaTest, MapsQwen3WithQkNormsAndItsHeadSize) {
  const std::string bytes = TinyLlama("qwen3").Build();
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(bytes, "qwen3.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  absl::StatusOr<GgufLlama> model = MapGgufLlama(**file);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.architecture, Architecture::kQwen3);
  EXPECT_FALSE(model->config.qkv_bias());
  for (const char* name :
       {"model.layers.0.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight"}) {
    ASSERT_EQ(model->tensors.count(name), 1u) << name;
    EXPECT_EQ(model->tensors.at(name).shape, (std::vector<int64_t>{4})) << name;
  }
  const float* k =
      static_cast<const float*>(model->tensors.at("model.layers.0.self_attn.k_proj.weight").data);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(k[r * 8], r * 8.0f) << r;
  EXPECT_TRUE(model->owned.empty());

  // 2 heads of 6 (key_length) beside a hidden size of 8.
  GgufBuilder wide;
  wide.String("general.architecture", "qwen3").U32("qwen3.block_count", 1);
  wide.U32("qwen3.embedding_length", 8).U32("qwen3.feed_forward_length", 12);
  wide.U32("qwen3.attention.head_count", 2).U32("qwen3.attention.head_count_kv", 1);
  wide.U32("qwen3.attention.key_length", 6).U32("qwen3.attention.value_length", 6);
  wide.U32("qwen3.context_length", 64).U32("qwen3.vocab_size", 10);
  const std::string wide_bytes = wide.Build();
  file = GgufFile::Parse(wide_bytes, "wide.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  model = MapGgufLlama(**file);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->config.head_dim, 6);
}

TEST(GgufLlamaTest, RefusesWhatArborCannotServe) {
  auto refuse = [](const GgufBuilder& b) {
    const std::string bytes = b.Build();
    absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Parse(bytes, "m.gguf");
    if (!file.ok()) return std::string(file.status().message());
    absl::StatusOr<GgufLlama> model = MapGgufLlama(**file);
    return model.ok() ? std::string("OK") : std::string(model.status().message());
  };
  EXPECT_EQ(refuse(TinyLlama()), "OK");
  EXPECT_THAT(refuse(TinyLlama("gemma2")),
              HasSubstr("is 'gemma2'; Arbor serves the 'llama' architecture (Llama 2/3, SmolLM, "
                        "TinyLlama, Mistral without sliding window), 'qwen2' (Qwen2, Qwen2.5) "
                        "and 'qwen3' (Qwen3 dense models)"));
  EXPECT_THAT(refuse(TinyLlama("qwen2").String("qwen2.rope.scaling.type", "yarn")),
              HasSubstr("'qwen2.rope.scaling.type' = 'yarn' is not supported"));
  EXPECT_THAT(
      refuse(TinyLlama("qwen2").Tensor("blk.0.attn_output.bias", kF32, {8}, std::string(32, '\0'))),
      HasSubstr("'blk.0.attn_output.bias' is not part of a Qwen2 model"));
  EXPECT_THAT(refuse(TinyLlama().Tensor("blk.0.attn_q.bias", kF32, {8}, std::string(32, '\0'))),
              HasSubstr("'blk.0.attn_q.bias' is not part of a Llama model"));
  EXPECT_THAT(refuse(TinyLlama("qwen2").Tensor("blk.0.attn_q_norm.weight", kF32, {4},
                                               std::string(16, '\0'))),
              HasSubstr("'blk.0.attn_q_norm.weight' is not part of a Qwen2 model"));
  EXPECT_THAT(
      refuse(TinyLlama("qwen3").Tensor("blk.0.attn_q.bias", kF32, {8}, std::string(32, '\0'))),
      HasSubstr("'blk.0.attn_q.bias' is not part of a Qwen3 model"));
  EXPECT_THAT(refuse(TinyLlama().Tensor("rope_freqs.weight", kF32, {3}, std::string(12, '\0'))),
              HasSubstr("'rope_freqs.weight' must be F32 with head_dim / 2"));
  EXPECT_THAT(refuse(TinyLlama().Tensor("rope_freqs.weight", kF32, {2}, std::string(8, '\0'))),
              HasSubstr("'rope_freqs.weight'[0] = 0 must be positive and finite"));
  EXPECT_THAT(refuse(TinyLlama().String("llama.rope.scaling.type", "yarn")),
              HasSubstr("'yarn' is not supported"));
  EXPECT_THAT(refuse(TinyLlama().U32("llama.expert_count", 8)), HasSubstr("mixture-of-experts"));
  EXPECT_THAT(refuse(TinyLlama().U32("llama.rope.dimension_count", 2)),
              HasSubstr("partial rotary"));
  GgufBuilder no_layers;
  no_layers.String("general.architecture", "llama");
  EXPECT_THAT(refuse(no_layers), HasSubstr("'llama.block_count' is missing"));
  EXPECT_THAT(refuse(TinyLlama("llama", 3)), HasSubstr("outside [1, 2]"));
}

}  // namespace
}  // namespace arbor::model
