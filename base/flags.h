// Command-line set-up shared by the binaries: usage text, and a `--help` that lists Arbor's
// own flags (abseil's default shows only flags defined in a file named after the program).
#ifndef ARBOR_BASE_FLAGS_H_
#define ARBOR_BASE_FLAGS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace arbor::base {

// Sets the usage message, makes --help list every flag defined in Arbor's sources, parses the
// command line and returns the positional arguments. Exits 0 after printing --help (or
// --helpfull, --version), non-zero on a bad flag.
std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage);

}  // namespace arbor::base

#endif  // ARBOR_BASE_FLAGS_H_
