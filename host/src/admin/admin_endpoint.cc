#include "admin/admin_endpoint.hpp"

#include "admin/graph_page.hpp"
#include "daemon/pipeline_runner.hpp"
#include "graph/graph_export.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sluice::host {

namespace {

HttpResponse text(unsigned status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

HttpResponse json(unsigned status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body), {}};
}

// Compares without an early exit, so the time taken does not tell how much of
// a guessed token was right.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

AdminEndpoint::AdminEndpoint(boost::asio::io_context& io, AdminSettings settings,
                             AdminBackend backend)
    : settings_(std::move(settings)),
      backend_(std::move(backend)),
      server_(io, [this](const HttpRequest& r) { return handle(r); }) {}

Result<uint16_t> AdminEndpoint::start() {
  return server_.listen(settings_.address, settings_.port);
}

bool AdminEndpoint::authorized(const HttpRequest& request) const {
  if (settings_.token.empty()) return true;
  constexpr std::string_view scheme = "Bearer ";
  std::string_view given = request.authorization;
  if (!given.starts_with(scheme)) return false;
  return same_secret(given.substr(scheme.size()), settings_.token);
}

HttpResponse AdminEndpoint::handle(const HttpRequest& request) {
  std::string_view path = request.target;
  if (auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";

  if (path == "/" || path == "/index.html") {
    if (!get) return text(405, "method not allowed\n");
    return HttpResponse{200, "text/html; charset=utf-8", std::string(graph_page_html()), {}};
  }
  if (path == "/healthz") return get ? text(200, "ok\n") : text(405, "method not allowed\n");
  if (path == "/readyz") {
    if (!get) return text(405, "method not allowed\n");
    if (backend_.ready()) return text(200, "ready\n");
    return text(503, fmt::format("not ready: {}\n", backend_.facts().state));
  }

  if (!authorized(request)) {
    HttpResponse r = text(401, "unauthorized: send \"Authorization: Bearer TOKEN\"\n");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"sluiced\"");
    return r;
  }
  PipelineRunner* runner = backend_.runner();

  if (path == "/metrics") {
    if (!get) return text(405, "method not allowed\n");
    std::string body = render_prometheus(runner, backend_.facts());
    if (backend_.extra_metrics) body += backend_.extra_metrics();
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", std::move(body), {}};
  }
  if (path == "/stats") {
    if (!get) return text(405, "method not allowed\n");
    return json(200, render_stats_json(runner, backend_.facts()));
  }
  if (path == "/graph" || path == "/graph.json" || path == "/graph.dot") {
    if (!get) return text(405, "method not allowed\n");
    if (!runner) return text(503, "no graph is running (reloading)\n");
    if (path == "/graph.dot") {
      return HttpResponse{200, "text/vnd.graphviz; charset=utf-8", to_dot(runner->spec()), {}};
    }
    return json(200, to_json(runner->spec()));
  }

  constexpr std::string_view prefix = "/sources/";
  if (path.starts_with(prefix)) {
    std::string_view rest = path.substr(prefix.size());
    auto slash = rest.rfind('/');
    std::string_view action = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    std::string_view id = slash == std::string_view::npos ? rest : rest.substr(0, slash);
    if (action != "pause" && action != "resume") return text(404, "not found\n");
    if (!post) {
      HttpResponse r = text(405, "method not allowed: use POST\n");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    if (!request.origin.empty() && request.origin != "http://" + request.host) {
      return text(403, "forbidden: cross-origin request\n");
    }
    if (!runner || runner->stopping()) return text(503, "no graph is running\n");
    Status s = runner->set_source_paused(id, action == "pause");
    if (!s.is_ok()) return text(s.code() == SL_NOT_FOUND ? 404 : 400, s.message() + "\n");
    spdlog::info("admin endpoint: source '{}' {}", id, action == "pause" ? "paused" : "resumed");
    return json(200, fmt::format("{{\"source\":\"{}\",\"paused\":{}}}", id,
                                 action == "pause" ? "true" : "false"));
  }
  return text(404, "not found\n");
}

}  // namespace sluice::host
