#include "admin/admin_endpoint.hpp"

#include "admin/graph_page.hpp"
#include "graph/graph_export.hpp"
#include "pipeline/pipeline_runner.hpp"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

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

bool is_loopback(const std::string& address) {
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(address, ec);
  return !ec && ip.is_loopback();
}

}  // namespace

AdminEndpoint::AdminEndpoint(boost::asio::io_context& io, AdminSettings settings,
                             AdminBackend backend)
    : settings_(std::move(settings)),
      backend_(std::move(backend)),
      loopback_(is_loopback(settings_.address)),
      server_(io, [this](const HttpRequest& r) { return handle(r); }) {}

Result<uint16_t> AdminEndpoint::start() {
  return server_.listen(settings_.address, settings_.port);
}

bool AdminEndpoint::host_allowed(std::string_view host) const {
  // NAME or NAME:PORT, NAME being a name, an IPv4 literal or a bracketed IPv6 literal.
  std::string_view name = host;
  if (host.starts_with('[')) {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = host.substr(0, close + 1);
  } else if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
    name = host.substr(0, colon);
  }
  std::string_view port = host.substr(name.size());
  if (!port.empty()) {
    port.remove_prefix(1);  // ':'
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
  }
  const bool v6 = settings_.address.find(':') != std::string::npos;
  const std::string bound = v6 ? "[" + settings_.address + "]" : settings_.address;
  for (std::string_view allowed : {std::string_view("localhost"), std::string_view("127.0.0.1"),
                                   std::string_view("[::1]"), std::string_view(bound)}) {
    if (boost::algorithm::iequals(name, allowed)) return true;
  }
  return false;
}

bool AdminEndpoint::authorized(const HttpRequest& request) const {
  if (settings_.token.empty()) return true;
  constexpr std::string_view scheme = "Bearer ";
  std::string_view given = request.authorization;
  if (!given.starts_with(scheme)) return false;
  return same_secret(given.substr(scheme.size()), settings_.token);
}

HttpResponse AdminEndpoint::handle(const HttpRequest& request) {
  // The Host header is what a DNS-rebinding page cannot fake: its requests name the
  // attacker's host. Bound to the loopback, only the loopback's own names are answered.
  if (request.host.empty()) return text(400, "bad request: no Host header\n");
  if (loopback_ && !host_allowed(request.host)) {
    return text(421,
                "misdirected request: the Host header does not name this endpoint (it answers "
                "to localhost, 127.0.0.1, [::1] and its bound address, with any port)\n");
  }
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
  // Beyond the loopback without a token (`sluiced validate` refuses such a config; this
  // guards an endpoint built otherwise): no graph and no state change for anyone.
  const bool open_to_all = !loopback_ && settings_.token.empty();
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
    if (open_to_all) return text(403, "forbidden: set [admin] token to serve the graph\n");
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
    if (open_to_all) return text(403, "forbidden: set [admin] token to pause or resume\n");
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
