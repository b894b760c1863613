#include "admin/http_server.hpp"

#include "http/http_request_reader.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <exception>
#include <set>

namespace sluice::host {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class AdminSession;

// The open connections (evicted ones are no longer counted). Control thread only.
struct HttpServer::Sessions {
  std::set<AdminSession*> open;
};

namespace {

constexpr size_t k_header_limit = size_t{16} * 1024;
constexpr size_t k_max_drain = size_t{1024} * 1024;
constexpr auto k_accept_backoff = std::chrono::milliseconds(100);
constexpr auto k_accept_warning_period = std::chrono::seconds(60);

}  // namespace

// One connection: read a request, answer it, repeat while keep-alive.
class AdminSession : public std::enable_shared_from_this<AdminSession> {
 public:
  AdminSession(tcp::socket socket, std::shared_ptr<HttpHandler> handler,
               std::shared_ptr<HttpServer::Sessions> sessions)
      : stream_(std::move(socket)),
        handler_(std::move(handler)),
        sessions_(std::move(sessions)),
        reader_(net::HttpLimits{k_header_limit, HttpServer::k_max_body}) {}
  ~AdminSession() { sessions_->open.erase(this); }
  AdminSession(const AdminSession&) = delete;
  AdminSession& operator=(const AdminSession&) = delete;

  void start() {
    sessions_->open.insert(this);
    wait_request();
  }

  // Between requests (none begun): the first to go when the server is full.
  [[nodiscard]] bool idle() const noexcept { return idle_; }
  [[nodiscard]] Clock::time_point idle_since() const noexcept { return idle_since_; }

  // Closes the connection to make room; its pending read ends with an error.
  void evict() {
    sessions_->open.erase(this);
    stream_.close();
  }

 private:
  void wait_request() {
    idle_ = reader_.between_requests();
    idle_since_ = Clock::now();
    stream_.expires_after(idle_ ? HttpServer::k_idle_timeout : HttpServer::k_request_timeout);
    step();
  }

  void step() {
    for (;;) {
      switch (reader_.next()) {
        case net::HttpRequestReader::Step::need_more: read_some(); return;
        case net::HttpRequestReader::Step::header: continue;  // no 100-continue: bodies are small
        case net::HttpRequestReader::Step::request: answer(reader_.take()); return;
        case net::HttpRequestReader::Step::error:
          spdlog::debug("admin endpoint: refused a request: {}", reader_.message());
          refused_ = true;
          write(make_response(reader_.status(), "text/plain; charset=utf-8",
                              reader_.message() + "\n", 11, false));
          return;
      }
    }
  }

  void read_some() {
    stream_.async_read_some(
        asio::buffer(buf_), [self = shared_from_this()](beast::error_code ec, size_t n) {
          if (ec) return;  // end of input, timeout, reset or evicted: drop the connection
          if (self->idle_) {
            self->idle_ = false;
            self->stream_.expires_after(HttpServer::k_request_timeout);
          }
          self->reader_.feed(std::string_view(self->buf_.data(), n));
          self->step();
        });
  }

  void answer(const net::HttpRequestReader::Request& req) {
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
    } catch (...) {
      spdlog::error("admin endpoint: {} {}: unknown exception", in.method, in.target);
      out = HttpResponse{500, "text/plain; charset=utf-8", "internal error\n", {}};
    }
    auto res = make_response(out.status, out.content_type, std::move(out.body), req.version(),
                             req.keep_alive());
    for (const auto& [name, value] : out.headers) res->set(name, value);
    write(std::move(res));
  }

  static std::shared_ptr<http::response<http::string_body>> make_response(
      unsigned status, const std::string& content_type, std::string body, unsigned version,
      bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(status), version);
    res->set(http::field::server, "sluiced");
    res->set(http::field::content_type, content_type);
    res->set(http::field::cache_control, "no-store");
    res->body() = std::move(body);
    res->keep_alive(keep_alive);
    res->prepare_payload();
    return res;
  }

  void write(std::shared_ptr<http::response<http::string_body>> res) {
    stream_.expires_after(HttpServer::k_request_timeout);
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code e, size_t) {
      if (e) return;
      if (!res->keep_alive()) {
        self->stream_.socket().shutdown(tcp::socket::shutdown_send, e);
        if (self->refused_) self->drain();
        return;
      }
      self->wait_request();
    });
  }

  // After a refusal: read and drop what the client still sends (up to k_max_drain, within
  // the request timeout), since closing with unread input resets the connection and can
  // destroy the answer before the client reads it.
  void drain() {
    stream_.async_read_some(asio::buffer(buf_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->drained_ += n;
                              if (!ec && self->drained_ < k_max_drain) self->drain();
                            });
  }

  beast::tcp_stream stream_;
  std::shared_ptr<HttpHandler> handler_;
  std::shared_ptr<HttpServer::Sessions> sessions_;
  net::HttpRequestReader reader_;
  std::array<char, 8192> buf_{};
  bool idle_ = true;
  Clock::time_point idle_since_;
  bool refused_ = false;  // the reader refused a request: the answer closes the connection
  size_t drained_ = 0;
};

HttpServer::HttpServer(boost::asio::io_context& io, HttpHandler handler)
    : io_(io),
      handler_(std::make_shared<HttpHandler>(std::move(handler))),
      sessions_(std::make_shared<Sessions>()),
      acceptor_(io),
      retry_(io) {}

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
  retry_.cancel();
}

void HttpServer::accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      on_accept_error(ec);
      return;
    }
    auto& open = sessions_->open;
    if (open.size() >= k_max_connections) {
      AdminSession* idlest = nullptr;
      for (AdminSession* s : open) {
        if (s->idle() && (!idlest || s->idle_since() < idlest->idle_since())) idlest = s;
      }
      if (idlest) {
        idlest->evict();
      } else {
        // Every connection has a request in progress: refuse this one at once rather than
        // let it wait unseen. The socket is new and the answer small: one try suffices.
        static constexpr std::string_view busy =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 40\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
            "too many admin connections; retry later\n";
        boost::system::error_code ignored;
        socket.non_blocking(true, ignored);
        socket.write_some(asio::buffer(busy.data(), busy.size()), ignored);
        socket.shutdown(tcp::socket::shutdown_send, ignored);
        socket.close(ignored);
        accept();
        return;
      }
    }
    std::make_shared<AdminSession>(std::move(socket), handler_, sessions_)->start();
    accept();
  });
}

void HttpServer::on_accept_error(const boost::system::error_code& ec) {
  if (ec == boost::asio::error::connection_aborted) {  // the client left first
    accept();
    return;
  }
  // Out of descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM), or anything else: the
  // listener stays readable, so accepting again at once would spin. Pause, and say so once
  // a minute, not on every try.
  ++accept_failures_;
  const auto now = Clock::now();
  if (last_accept_warning_ == Clock::time_point{} ||
      now - last_accept_warning_ >= k_accept_warning_period) {
    spdlog::warn(
        "admin endpoint: accept failed: {}; retrying every {} ms ({} failure{} since the last "
        "warning)",
        ec.message(), k_accept_backoff.count(), accept_failures_, accept_failures_ == 1 ? "" : "s");
    last_accept_warning_ = now;
    accept_failures_ = 0;
  }
  retry_.expires_after(k_accept_backoff);
  retry_.async_wait([this](const boost::system::error_code& e) {
    if (e || !acceptor_.is_open()) return;
    accept();
  });
}

}  // namespace sluice::host
