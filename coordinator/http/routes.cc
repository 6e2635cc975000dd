#include "coordinator/http/routes.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace arbor::coordinator::http {
namespace {

constexpr Route kRoutes[] = {
    {RouteId::kCompletions, "/v1/completions", "/v1/completions"},
    {RouteId::kChatCompletions, "/v1/chat/completions", "/v1/chat/completions"},
    {RouteId::kModels, "/v1/models", "/v1/models"},
    {RouteId::kTokenize, "/tokenize", "/tokenize"},
    {RouteId::kDetokenize, "/detokenize", "/detokenize"},
    {RouteId::kHealth, "/health", "/health"},
    {RouteId::kJobs, "/v1/jobs", "/v1/jobs"},
    {RouteId::kJob, R"(/v1/jobs/([^/]+))", "/v1/jobs/{id}"},
    {RouteId::kJobTree, R"(/v1/jobs/([^/]+)/tree)", "/v1/jobs/{id}/tree"},
    {RouteId::kJobReplay, R"(/v1/jobs/([^/]+)/replay)", "/v1/jobs/{id}/replay"},
    {RouteId::kJobEvents, R"(/v1/jobs/([^/]+)/events)", "/v1/jobs/{id}/events"},
    {RouteId::kMetrics, "/metrics", "/metrics"},
    {RouteId::kRoot, "/", "/"},
    {RouteId::kUi, "/ui", "/ui"},
    {RouteId::kUiIndex, "/ui/", "/ui"},
    {RouteId::kUiPalette, "/ui/palette\\.json", "/ui"},
    {RouteId::kUiFile, R"(/ui/([A-Za-z0-9_.-]+))", "/ui"},
};

// Listed in RouteId's order, so PatternOf indexes the table; the compiler checks it.
constexpr bool InIdOrder() {
  for (size_t i = 0; i < std::size(kRoutes); ++i) {
    if (static_cast<size_t>(kRoutes[i].id) != i) return false;
  }
  return static_cast<size_t>(RouteId::kUiFile) + 1 == std::size(kRoutes);
}
static_assert(InIdOrder(), "kRoutes must list every RouteId once, in order");

constexpr absl::string_view kOther = "other";

// A pattern without regex syntax matches only itself: a string comparison decides it, so the
// common requests (completions, models, health) are labelled without running a regex.
bool IsLiteral(absl::string_view pattern) {
  return pattern.find_first_of("\\()[]{}.*+?^$|") == absl::string_view::npos;
}

// The patterns that need a regex, compiled once, in kRoutes' order; none for literal ones.
const std::vector<std::optional<std::regex>>& Compiled() {
  static const auto* compiled = [] {
    auto* all = new std::vector<std::optional<std::regex>>();
    for (const Route& route : kRoutes) {
      if (IsLiteral(route.pattern)) {
        all->emplace_back();
      } else {
        all->emplace_back(std::in_place, route.pattern, std::regex::optimize);
      }
    }
    return all;
  }();
  return *compiled;
}

}  // namespace

std::span<const Route> Routes() { return kRoutes; }

const char* PatternOf(RouteId id) { return kRoutes[static_cast<size_t>(id)].pattern; }

absl::string_view RouteOf(absl::string_view path) {
  const size_t query = path.find('?');
  if (query != absl::string_view::npos) path = path.substr(0, query);
  const std::vector<std::optional<std::regex>>& compiled = Compiled();
  for (size_t i = 0; i < compiled.size(); ++i) {
    const bool matches = compiled[i].has_value()
                             ? std::regex_match(path.begin(), path.end(), *compiled[i])
                             : path == kRoutes[i].pattern;
    if (matches) return kRoutes[i].label;
  }
  return kOther;
}

const std::vector<std::string>& RouteLabels() {
  static const auto* labels = [] {
    auto* all = new std::vector<std::string>();
    for (const Route& route : kRoutes) {
      if (std::find(all->begin(), all->end(), route.label) == all->end()) {
        all->push_back(route.label);
      }
    }
    all->push_back(std::string(kOther));
    return all;
  }();
  return *labels;
}

}  // namespace arbor::coordinator::http
