// A small HTTP/1.1 server (Boost.Beast) on the daemon's control io_context:
// one request at a time per connection, keep-alive, bounded request size and
// idle time. It knows nothing about sluice: a handler maps each request to a
// response, on the control thread.
#pragma once

#include "common/result.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

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
  std::string host;    // the Host header
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
  HttpServer(boost::asio::io_context& io, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. Returns the bound port (the chosen one when
  // `port` is 0).
  Result<uint16_t> listen(const std::string& address, uint16_t port);
  // Stops accepting; open connections end after their current request.
  void close();

 private:
  void accept();

  boost::asio::io_context& io_;
  std::shared_ptr<HttpHandler> handler_;  // shared with the sessions
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace sluice::host
