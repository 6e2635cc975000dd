// TreeFromJson (the `arbor tree --json` format read back, e.g. by `arbor tree --from`) on
// arbitrary bytes: it parses or answers an error, and whatever it parses writes back to JSON
// that parses to the same tree.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "views/tree_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<arbor::v1::Tree> tree = arbor::views::TreeFromJson(json);
  if (!tree.ok()) return 0;
  const std::string written = arbor::views::TreeToJson(*tree);
  absl::StatusOr<arbor::v1::Tree> again = arbor::views::TreeFromJson(written);
  if (!again.ok()) abort();
  if (arbor::views::TreeToJson(*again) != written) abort();
  return 0;
}
