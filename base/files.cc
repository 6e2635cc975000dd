#include "base/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace arbor::base {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  // The pid keeps two processes writing the same path from sharing one temporary.
  const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", path, "'"));
  }
  const bool written = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  const int write_errno = errno;
  const bool closed = std::fclose(file) == 0;
  int error = written ? (closed ? 0 : errno) : write_errno;
  if (error == 0 && std::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error == 0) return absl::OkStatus();
  std::remove(temporary.c_str());
  return absl::ErrnoToStatus(error, absl::StrCat("cannot write '", path, "'"));
}

}  // namespace arbor::base
