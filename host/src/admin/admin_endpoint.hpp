// The admin endpoint's routes ([admin] in the config):
//   GET  /                    the live graph page (static, no token needed)
//   GET  /healthz             200 while the control loop answers
//   GET  /readyz              200 while a graph runs; 503 starting, reloading, stopping
//   GET  /metrics             Prometheus text
//   GET  /graph, /graph.dot   the running graph (JSON as `sluiced graph --format json`, DOT)
//   GET  /stats               counters as JSON for the live page
//   POST /sources/ID/pause    stop polling source ID (every task); /resume polls again
// With `token` set, everything but /, /healthz and /readyz needs
// "Authorization: Bearer TOKEN". POSTs that carry an Origin header must come
// from the endpoint's own origin (a page elsewhere cannot pause a source).
// Every request needs a Host header; bound to a loopback address, only
// localhost, 127.0.0.1, [::1] and the bound address (any port) are answered,
// others get 421, so a DNS-rebinding page cannot reach the endpoint. Bound
// beyond the loopback, a token is required (`sluiced validate` refuses the
// config without one; without it /graph and the POSTs would answer 403).
// Control thread.
#pragma once

#include "admin/http_server.hpp"
#include "admin/metrics.hpp"
#include "graph/graph_spec.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace sluice::host {

class PipelineRunner;

// What the endpoint reads from the daemon.
struct AdminBackend {
  std::function<PipelineRunner*()> runner;  // the current graph, or null between graphs
  std::function<DaemonFacts()> facts;
  std::function<bool()> ready;
  // More Prometheus text from other subsystems (e.g. checkpoints); may be empty.
  std::function<std::string()> extra_metrics;
};

class AdminEndpoint {
 public:
  AdminEndpoint(boost::asio::io_context& io, AdminSettings settings, AdminBackend backend);

  // Binds; returns the port (chosen by the system when settings.port is 0).
  Result<uint16_t> start();
  void stop() { server_.close(); }

  // One request (public for tests).
  [[nodiscard]] HttpResponse handle(const HttpRequest& request);

 private:
  [[nodiscard]] bool authorized(const HttpRequest& request) const;
  [[nodiscard]] bool host_allowed(std::string_view host) const;

  AdminSettings settings_;
  AdminBackend backend_;
  bool loopback_;  // bound to a loopback address
  HttpServer server_;
};

}  // namespace sluice::host
