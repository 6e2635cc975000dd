// The viewer's static files (coordinator/http/ui/), compiled in by arbor_embed_files.
#ifndef ARBOR_COORDINATOR_HTTP_VIEWER_FILES_H_
#define ARBOR_COORDINATOR_HTTP_VIEWER_FILES_H_

#include "absl/types/span.h"
#include "base/embedded_file.h"

namespace arbor::coordinator::http {

absl::Span<const base::EmbeddedFile> ViewerFiles();

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_VIEWER_FILES_H_
