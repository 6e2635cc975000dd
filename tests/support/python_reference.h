// Runs one of the tests' Python reference scripts (float64 forwards, metric references) under the
// project Python: one JSON request in through a file, one JSON answer out, as those scripts'
// command lines define. Header-only, for any test binary.
#ifndef ARBOR_TESTS_SUPPORT_PYTHON_REFERENCE_H_
#define ARBOR_TESTS_SUPPORT_PYTHON_REFERENCE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "base/subprocess.h"
#include "nlohmann/json.hpp"

namespace arbor::testing {

// The answer of `script` (relative to the source tree) to `request`; null (with a test failure)
// when it fails. One BLAS thread: ctest runs two tests at once on small machines.
inline nlohmann::json RunPythonReference(const std::string& script, const nlohmann::json& request,
                                         absl::Duration timeout = absl::Seconds(280)) {
  const std::string base =
      absl::StrCat(std::filesystem::temp_directory_path().string(), "/python-reference-", getpid());
  EXPECT_TRUE(base::WriteFileAtomically(base + ".in", request.dump()).ok());
  const std::string command =
      absl::StrCat("OPENBLAS_NUM_THREADS=1 ", ARBOR_PYTHON, " ", ARBOR_SOURCE_DIR, "/", script,
                   " < ", base, ".in > ", base, ".out");
  absl::StatusOr<base::Subprocess> child = base::Subprocess::Start({"/bin/sh", "-c", command});
  EXPECT_TRUE(child.ok()) << child.status();
  if (!child.ok()) return nullptr;
  EXPECT_EQ(child->Wait(timeout), 0) << script;
  absl::StatusOr<std::string> text = base::ReadFile(base + ".out");
  std::filesystem::remove(base + ".in");
  std::filesystem::remove(base + ".out");
  return text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nullptr;
}

}  // namespace arbor::testing

#endif  // ARBOR_TESTS_SUPPORT_PYTHON_REFERENCE_H_
