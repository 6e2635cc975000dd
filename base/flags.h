// Command-line set-up shared by the binaries: usage text, a `--help` that lists Arbor's own
// flags (abseil's default shows only flags defined in a file named after the program), and a
// flag as a command-line argument for a process to hand on.
#ifndef ARBOR_BASE_FLAGS_H_
#define ARBOR_BASE_FLAGS_H_

#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace arbor::base {

// Sets the usage message, makes --help list every flag defined in Arbor's sources, parses the
// command line and returns the positional arguments. Exits 0 after printing --help (or
// --helpfull, --version), non-zero on a bad flag.
std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage);

// "--NAME=VALUE" for `flag` under its own name: how a process hands a flag on to one it starts.
template <typename T, typename V>
std::string FlagArg(const absl::Flag<T>& flag, const V& value) {
  return absl::StrCat("--", absl::GetFlagReflectionHandle(flag).Name(), "=", value);
}

}  // namespace arbor::base

#endif  // ARBOR_BASE_FLAGS_H_
