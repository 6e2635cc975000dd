// The web viewer's routes on the coordinator's HTTP server: its pages under /ui (HTML, CSS and
// JavaScript compiled into the binary, no build step, nothing fetched from elsewhere) and the
// strategy palette they colour tokens with, taken from tree_display.h so the viewer, the DOT
// export and the terminal agree. The pages read jobs and trees through the JSON API
// (/v1/jobs, /v1/jobs/{id}, /v1/jobs/{id}/tree); docs/VIEWER.md describes what they show.
#ifndef ARBOR_COORDINATOR_HTTP_VIEWER_ROUTES_H_
#define ARBOR_COORDINATOR_HTTP_VIEWER_ROUTES_H_

#include "httplib.h"

namespace arbor::coordinator::http {

// GET /ui (redirects to /ui/), /ui/ (the viewer), /ui/{file}, /ui/palette.json.
void AddViewerRoutes(httplib::Server& server);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_VIEWER_ROUTES_H_
