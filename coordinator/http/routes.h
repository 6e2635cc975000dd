// The HTTP server's routes, listed once: the path pattern httplib serves for each and the label
// it carries in the request metrics (http_metrics.h). The gateway and the viewer register their
// handlers by RouteId and the metrics label a request by matching the same patterns, so a route
// added here is served and labelled alike, and one that is not here cannot be registered.
#ifndef ARBOR_COORDINATOR_HTTP_ROUTES_H_
#define ARBOR_COORDINATOR_HTTP_ROUTES_H_

#include <span>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace arbor::coordinator::http {

// Ends with kUiFile: routes.cc checks at compile time that its table lists each id in order.
enum class RouteId {
  kCompletions,
  kChatCompletions,
  kModels,
  kTokenize,
  kDetokenize,
  kHealth,
  kJobs,
  kJob,
  kJobTree,
  kJobReplay,
  kJobEvents,
  kMetrics,  // Served by the metrics exporter (metrics/http_exporter.h) on the same server.
  kRoot,
  kUi,
  kUiIndex,
  kUiPalette,
  kUiFile,
};

struct Route {
  RouteId id;
  const char* pattern;  // httplib's pattern: the whole path, an ECMAScript regex.
  const char* label;    // The metrics' route label; the viewer's files share "/ui".
};

// Every route, in the order they are matched.
std::span<const Route> Routes();

// The pattern of `id`, for registering its handler.
const char* PatternOf(RouteId id);

// The route label of a request path (its query ignored): the label of the first route whose
// pattern matches it, "other" for anything else (404s).
absl::string_view RouteOf(absl::string_view path);

// Every label RouteOf can return, "other" last: the metrics' fixed label set.
const std::vector<std::string>& RouteLabels();

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_ROUTES_H_
