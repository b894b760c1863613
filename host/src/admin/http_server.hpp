// A small HTTP/1.1 server (Boost.Asio) on the daemon's control io_context: one request
// at a time per connection, keep-alive, bounded requests, time and connections. It knows
// nothing about sluice: a handler maps each request to a response, on the control thread.
//
// Requests are read by HttpRequestReader (lib/http/http_request_reader.hpp,
// shared with from_http_server and the fuzz target): header, each chunk line and the
// trailers <= 16 KiB each (else 431), body <= 64 KiB (else 413), obs-fold or a missing
// Host in HTTP/1.1 is 400; a refusal closes the connection. Nothing a client sends, and
// nothing the handler throws, leaves the server: a failing handler answers 500.
//
// Limits: at most k_max_connections (64) connections; at the limit a new client takes the
// place of the connection idle the longest, or is answered 503 and closed when none is
// idle. A connection may wait k_idle_timeout (30 s) for a request; once its first byte
// came, the request must be complete within k_request_timeout (10 s). When accept fails
// for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), accepting pauses
// 100 ms (logged once per minute), rather than spinning on a listener that stays readable.
#pragma once

#include "common/result.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sluice::host {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query, as sent
  std::string authorization;
  std::string origin;  // the Origin header, if any (browsers send it on POST)
  std::string host;    // the Host header ("" when absent)
  std::string body;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  static constexpr size_t k_max_connections = 64;
  static constexpr size_t k_max_body = size_t{64} * 1024;  // requests are small: a pause, a GET
  static constexpr auto k_idle_timeout = std::chrono::seconds(30);
  static constexpr auto k_request_timeout = std::chrono::seconds(10);

  HttpServer(boost::asio::io_context& io, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. Returns the bound port (the chosen one when
  // `port` is 0).
  Result<uint16_t> listen(const std::string& address, uint16_t port);
  // Stops accepting; open connections end after their current request.
  void close();

  struct Sessions;  // http_server.cc: the open connections, shared with them

 private:
  void accept();
  void on_accept_error(const boost::system::error_code& ec);

  boost::asio::io_context& io_;
  std::shared_ptr<HttpHandler> handler_;  // shared with the sessions
  std::shared_ptr<Sessions> sessions_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;  // accept back-off
  std::chrono::steady_clock::time_point last_accept_warning_{};
  uint64_t accept_failures_ = 0;  // since the last warning
};

}  // namespace sluice::host
