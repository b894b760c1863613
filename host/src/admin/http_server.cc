#include "admin/http_server.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

namespace sluice::host {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr size_t k_max_body = 64 * 1024;  // requests are small: a pause, a GET
constexpr auto k_idle_timeout = std::chrono::seconds(30);

// One connection: read a request, answer it, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<HttpHandler> handler)
      : stream_(std::move(socket)), handler_(std::move(handler)) {}

  void read() {
    parser_.emplace();
    parser_->body_limit(k_max_body);
    stream_.expires_after(k_idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream) {
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      return;
    }
    if (ec) return;  // timeout, reset, malformed: drop the connection
    const auto& req = parser_->get();
    HttpRequest in;
    in.method = std::string(req.method_string());
    in.target = std::string(req.target());
    in.authorization = std::string(req[http::field::authorization]);
    in.origin = std::string(req[http::field::origin]);
    in.host = std::string(req[http::field::host]);
    in.body = req.body();
    HttpResponse out;
    try {
      out = (*handler_)(in);
    } catch (const std::exception& e) {
      spdlog::error("admin endpoint: {} {}: {}", in.method, in.target, e.what());
      out = HttpResponse{500, "text/plain; charset=utf-8", "internal error\n", {}};
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(out.status), req.version());
    res->set(http::field::server, "sluiced");
    res->set(http::field::content_type, out.content_type);
    res->set(http::field::cache_control, "no-store");
    for (const auto& [name, value] : out.headers) res->set(name, value);
    res->body() = std::move(out.body);
    res->keep_alive(req.keep_alive());
    res->prepare_payload();
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code e, size_t) {
      if (e) return;
      if (!res->keep_alive()) {
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, e);
        return;
      }
      self->read();
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpHandler> handler_;
};

}  // namespace

HttpServer::HttpServer(boost::asio::io_context& io, HttpHandler handler)
    : io_(io), handler_(std::make_shared<HttpHandler>(std::move(handler))), acceptor_(io) {}

HttpServer::~HttpServer() { close(); }

Result<uint16_t> HttpServer::listen(const std::string& address, uint16_t port) {
  boost::system::error_code ec;
  auto ip = boost::asio::ip::make_address(address, ec);
  if (ec) return Status(SL_INVALID_ARGUMENT, fmt::format("'{}' is not an IP address", address));
  tcp::endpoint endpoint(ip, port);
  auto fail = [&](const char* what) {
    return Status(SL_UNAVAILABLE, fmt::format("admin endpoint: cannot {} {}:{}: {}", what, address,
                                              port, ec.message()));
  };
  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (ec) return fail("configure");
  acceptor_.bind(endpoint, ec);
  if (ec) {
    Status s = fail("bind");
    acceptor_.close(ec);
    return s;
  }
  acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  uint16_t bound = acceptor_.local_endpoint(ec).port();
  if (ec) return fail("read the port of");
  accept();
  return bound;
}

void HttpServer::close() {
  boost::system::error_code ec;
  if (acceptor_.is_open()) acceptor_.close(ec);
}

void HttpServer::accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), handler_)->read();
    accept();
  });
}

}  // namespace sluice::host
