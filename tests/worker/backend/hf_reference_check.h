// The checks the Hugging Face reference tests of each Llama-family architecture share (Qwen2,
// Qwen3): a model directory (config.json + model.safetensors of random f32 weights) served on the
// CPU backend as a user's directory is, against the independent float64 PyTorch forward
// (tests/model/llama_reference.py); and the same weights written as llama.cpp's converter writes a
// GGUF of that architecture, against the directory. Each test writes its own directory and checks
// what its architecture adds; what is the same for every architecture lives here once.
//
// Tolerance: the backend computes in fp32 from f32 weights, the reference in float64; over two
// layers they agree to ~1e-6, held to 1e-4 · (1 + |logit|) as the in-memory float64 comparison
// (cpu_backend_test.cc) is.
#ifndef ARBOR_TESTS_WORKER_BACKEND_HF_REFERENCE_CHECK_H_
#define ARBOR_TESTS_WORKER_BACKEND_HF_REFERENCE_CHECK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/config.h"
#include "tests/model/gguf_builder.h"
#include "worker/backend/backend.h"
#include "worker/backend/cpu_backend.h"

namespace arbor::worker::testing {

// The CPU backend over the checkpoint at `path` (a Hugging Face directory or a GGUF file), opened
// as a user's model is: 64 KV blocks of 16 tokens, two threads.
absl::StatusOr<std::unique_ptr<CpuBackend>> ServeOnCpu(const std::string& path);

// `stem`-PID in the temporary directory: a suite's model path, its own per process because ctest
// runs a binary's cases in parallel processes.
std::string SuiteModelPath(absl::string_view stem);

// Expects `backend`, serving the directory `dir`, to give llama_reference.py's last-position
// logits within the tolerance above, for random prompts of 1, 9, 40 and 130 tokens drawn from
// `seed`.
void ExpectMatchesFloat64Reference(Backend& backend, const std::string& dir, uint32_t seed);

// Adds the keys of `arch`'s GGUF that only some architectures have (Qwen3's key_length).
using ExtraGgufKeys =
    std::function<void(const model::ModelConfig& config, model::testing::GgufBuilder& gguf)>;

// Writes the f32 Hugging Face directory `dir` to `path` as llama.cpp's converter writes a GGUF of
// `arch` ("qwen2"): general.architecture and general.name, the `arch`.* shape keys (those of
// `extra` after the head counts) and every tensor under its llama.cpp name, q/k rows in Hugging
// Face's order as the converter leaves them for the Qwen architectures. Fatal failures on error.
void WriteGgufOfDirectory(const std::string& dir, const std::string& arch, const std::string& name,
                          const std::string& path, const ExtraGgufKeys& extra = nullptr);

// Expects `backend` to give bit for bit the logits the directory `dir` served directly gives, for
// one random 57-token prompt drawn from `seed`: the GGUF reader must hand the backend the very
// weights and config the directory has.
void ExpectSameLogitsAsDirectory(Backend& backend, const std::string& dir, uint32_t seed);

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_BACKEND_HF_REFERENCE_CHECK_H_
