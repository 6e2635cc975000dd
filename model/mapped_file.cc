#include "model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace arbor::model {

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string message = absl::StrCat(path, ": cannot open: ", strerror(error));
    return error == ENOENT ? absl::NotFoundError(message) : absl::PermissionDeniedError(message);
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const size_t size = static_cast<size_t>(info.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int error = errno;
      close(fd);
      return absl::InternalError(absl::StrCat(path, ": mmap failed: ", strerror(error)));
    }
  }
  close(fd);  // The mapping keeps the file alive.
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (size_ > 0) munmap(data_, size_);
}

}  // namespace arbor::model
