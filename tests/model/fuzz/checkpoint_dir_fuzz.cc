// libFuzzer target: a Hugging Face checkpoint directory from fuzzer bytes, opened the way a
// worker opens one (Checkpoint::Open: config.json, model.safetensors.index.json, the shards, the
// tensor-spec checks against the config, the finite-weights scan). The input is cut at each
// "\n@@\n" into config.json, the index (no index file when this part is empty: the next part
// is then model.safetensors) and shards "a.safetensors", "b.safetensors". Open must answer a
// status with a message; an opened checkpoint must serve exactly the tensors the config implies,
// with those shapes, each a view whose every byte can be read.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "model/checkpoint.h"
#include "model/llama_tensors.h"

namespace {

const std::string& Directory() {
  static const std::string* dir = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "arbor-checkpoint-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    // Removed when the run ends normally; a crash keeps the inputs it wrote.
    std::atexit([] { std::filesystem::remove_all(Directory()); });
    return new std::string(pattern);
  }();
  return *dir;
}

void Write(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::abort();
}

void Check(const arbor::model::Checkpoint& checkpoint) {
  const std::vector<arbor::model::TensorSpec> specs =
      arbor::model::LlamaTensorSpecs(checkpoint.config(), arbor::model::DType::kF32);
  if (checkpoint.TensorNames().size() != specs.size()) std::abort();
  uint64_t bytes = 0;
  for (const arbor::model::TensorSpec& spec : specs) {
    absl::StatusOr<arbor::model::TensorView> tensor = checkpoint.Tensor(spec.name);
    if (!tensor.ok() || tensor->shape != spec.shape) std::abort();
    const char* data = static_cast<const char*>(tensor->data);
    char sum = 0;
    for (size_t i = 0; i < tensor->nbytes; ++i) sum = static_cast<char>(sum ^ data[i]);
    volatile char sink = sum;  // Keeps the reads for AddressSanitizer.
    (void)sink;
    bytes += tensor->nbytes;
  }
  if (bytes != checkpoint.weight_bytes()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = Directory();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::remove(entry.path());
  }
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(reinterpret_cast<const char*>(data), size), "\n@@\n");
  Write(dir + "/config.json", parts[0]);
  const bool indexed = parts.size() > 1 && !parts[1].empty();
  if (indexed) Write(dir + "/model.safetensors.index.json", parts[1]);
  const char* const shards[] = {"a.safetensors", "b.safetensors"};
  for (size_t i = 2; i < parts.size() && i < 4; ++i) {
    Write(dir + "/" + (indexed ? shards[i - 2] : (i == 2 ? "model.safetensors" : shards[1])),
          parts[i]);
  }
  absl::StatusOr<std::unique_ptr<arbor::model::Checkpoint>> checkpoint =
      arbor::model::Checkpoint::Open(dir);
  if (!checkpoint.ok()) {
    if (checkpoint.status().message().empty()) std::abort();
    return 0;
  }
  Check(**checkpoint);
  return 0;
}
