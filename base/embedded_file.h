// A file compiled into a binary (cmake/ArborEmbed.cmake generates the tables), such as the web
// viewer's pages: served without an installed folder, and always the version the binary was
// built with.
#ifndef ARBOR_BASE_EMBEDDED_FILE_H_
#define ARBOR_BASE_EMBEDDED_FILE_H_

#include <string_view>

namespace arbor::base {

struct EmbeddedFile {
  std::string_view name;     // The file's base name, e.g. "index.html".
  std::string_view content;  // Its bytes (not NUL-terminated).
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_EMBEDDED_FILE_H_
