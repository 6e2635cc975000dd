#include "coordinator/http/viewer_routes.h"

#include <string>
#include <string_view>

#include "arbor/v1/entropix.pb.h"
#include "coordinator/http/routes.h"
#include "coordinator/http/viewer_files.h"
#include "nlohmann/json.hpp"
#include "views/tree_display.h"

namespace arbor::coordinator::http {
namespace {

std::string ContentType(std::string_view name) {
  const auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// Token text is model output, so the pages insert it as text only; the policy below also keeps
// any script but the viewer's own from running should that ever slip.
void SetPageHeaders(httplib::Response& response) {
  response.set_header("Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                      "base-uri 'none'; frame-ancestors 'none'");
  response.set_header("X-Content-Type-Options", "nosniff");
  // The files change only with the binary; revalidating keeps an upgraded server's pages fresh.
  response.set_header("Cache-Control", "no-cache");
}

// Every strategy's name and colour, in enum order, for the legend and the token colours.
std::string PaletteJson() {
  nlohmann::json strategies = nlohmann::json::array();
  for (int s = 1; s < v1::Strategy_ARRAYSIZE; ++s) {
    if (!v1::Strategy_IsValid(s)) continue;
    const auto strategy = static_cast<v1::Strategy>(s);
    strategies.push_back(
        {{"name", views::StrategyName(strategy)}, {"color", views::StrategyHexColor(strategy)}});
  }
  return nlohmann::json{{"strategies", strategies}}.dump();
}

bool ServeFile(std::string_view name, httplib::Response& response) {
  for (const base::EmbeddedFile& file : ViewerFiles()) {
    if (file.name != name) continue;
    response.set_content(std::string(file.content), ContentType(name));
    SetPageHeaders(response);
    return true;
  }
  return false;
}

}  // namespace

void AddViewerRoutes(httplib::Server& server) {
  // The server's root leads a browser to the viewer rather than to a bare 404.
  server.Get(PatternOf(RouteId::kRoot), [](const httplib::Request&, httplib::Response& response) {
    response.set_redirect("/ui/");
  });
  server.Get(PatternOf(RouteId::kUi), [](const httplib::Request&, httplib::Response& response) {
    response.set_redirect("/ui/");
  });
  server.Get(PatternOf(RouteId::kUiIndex),
             [](const httplib::Request&, httplib::Response& response) {
               ServeFile("index.html", response);
             });
  server.Get(PatternOf(RouteId::kUiPalette),
             [](const httplib::Request&, httplib::Response& response) {
               response.set_content(PaletteJson(), "application/json");
             });
  server.Get(PatternOf(RouteId::kUiFile),
             [](const httplib::Request& request, httplib::Response& response) {
               // Unknown names fall through to the server's 404 in the API's error shape.
               if (!ServeFile(request.matches[1].str(), response)) response.status = 404;
             });
}

}  // namespace arbor::coordinator::http
