// from_http_server: each request body is one element; HTTP/1.1 parsed by Boost.Beast's
// request_parser over the connection's own buffer (no Beast streams: the socket is driven
// by the task's io_watch).
//
// Flow of one request: bytes are read into Conn::in and fed to the parser; a complete
// request on `path` with POST/PUT either gets 503 (max_pending bodies already wait) or
// joins pending_, and the connection stops reading (pipelined requests wait) until poll()
// emitted the body and queued the 200. Answers are written at once when the socket takes
// them, else a write watch finishes them. Memory: max_connections connections, each with at
// most one request (headers <= 16 KiB, body <= max_body_bytes), and max_pending bodies.
#include <sluice/sluice.hpp>

#include "net.hpp"

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <system_error>

namespace sluice::net {

namespace http = boost::beast::http;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;

namespace {

constexpr size_t k_chunk = size_t{64} * 1024;
constexpr uint32_t k_header_limit = 16 * 1024;
// After answering 413 the rest of the body is read and dropped (closing with unread input
// would reset the connection and could destroy the answer before the client reads it),
// but only this much.
constexpr size_t k_max_discard = size_t{4} * 1024 * 1024;

Config config_of(const sl_node_init& init) { return Config(init); }

const char* reason_of(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

}  // namespace

struct FromHttpServer::Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string in;   // received, not yet parsed
  std::string out;  // answer bytes not yet written
  std::optional<http::request_parser<http::string_body>> parser;
  bool waiting = false;      // its body is in pending_: no further request is handled
  bool keep_alive = true;    // of the request being answered
  bool close_after = false;  // close once `out` is written
  bool discarding = false;   // after 413: read and drop input until EOF
  size_t discarded = 0;
  bool sent_continue = false;  // "100 Continue" already sent for the current request
};

FromHttpServer::FromHttpServer(const sl_node_init& init) : FromHttpServer(init, config_of(init)) {}

FromHttpServer::FromHttpServer(const sl_node_init& init, const Config& cfg)
    : ServerSource(init, cfg, k_name),
      path_(cfg.get_string("path")),
      format_(static_cast<Format>(cfg.get_choice("format", {"text", "bytes", "json"}))),
      max_body_(0),
      max_pending_(0),
      chunk_(k_chunk) {
  if (path_.empty() || path_[0] != '/') {
    cfg.fail("path", "must start with '/' (got \"" + path_ + "\")");
  }
  const int64_t body = cfg.get_int("max_body_bytes");
  if (body < 0)
    cfg.fail("max_body_bytes", "must not be negative (got " + std::to_string(body) + ")");
  max_body_ = static_cast<uint64_t>(body);
  const int64_t pending = cfg.get_int("max_pending");
  if (pending < 1) {
    cfg.fail("max_pending", "must be at least 1 (got " + std::to_string(pending) + ")");
  }
  max_pending_ = static_cast<size_t>(pending);
}

FromHttpServer::~FromHttpServer() { close_all(); }

Status FromHttpServer::accepted(Context ctx, uint64_t id, int fd) {
  auto c = std::make_unique<Conn>();
  c->id = id;
  c->fd = fd;
  conns_.emplace(id, std::move(c));
  return ctx.io_watch(fd, SL_IO_READ, id);
}

Status FromHttpServer::connection_ready(Context ctx, uint64_t id, uint32_t ready) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return {};
  Conn& c = *it->second;
  if ((ready & SL_IO_READ) != 0 && !c.waiting && c.out.empty()) {
    for (;;) {
      const ssize_t n = ::read(c.fd, chunk_.data(), chunk_.size());
      if (n > 0) {
        if (c.discarding) {
          c.discarded += static_cast<size_t>(n);
          if (c.discarded > k_max_discard) {
            close_conn(ctx, id);
            return {};
          }
          continue;
        }
        c.in.append(chunk_.data(), static_cast<size_t>(n));
        break;  // parse what came before reading more
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // End of input or a failure: a half-received request is dropped (it got no answer).
      close_conn(ctx, id);
      return {};
    }
  }
  return advance(ctx, id);
}

Status FromHttpServer::advance(Context ctx, uint64_t id) {
  Conn& c = *conns_.at(id);
  for (;;) {
    const bool starving = parse(c);
    // Write what can be written now; a write watch finishes the rest.
    while (!c.out.empty()) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close_conn(ctx, id);  // the client went away
      return {};
    }
    if (!c.out.empty()) return ctx.io_watch(c.fd, SL_IO_WRITE, id);
    if (c.close_after) {
      if (!c.discarding) {
        close_conn(ctx, id);
        return {};
      }
      // 413: stop sending, keep reading (and dropping) until the client closes.
      ::shutdown(c.fd, SHUT_WR);
      c.close_after = false;
    }
    if (c.waiting) return {};  // poll() resumes it after emitting the body
    if (starving || c.discarding) return ctx.io_watch(c.fd, SL_IO_READ, id);
    // Otherwise parsing stopped for an answer now written: pipelined requests go next.
  }
}

bool FromHttpServer::parse(Conn& c) {
  while (!c.waiting && c.out.empty() && !c.close_after && !c.discarding) {
    if (c.in.empty()) return true;
    if (!c.parser) {
      c.parser.emplace();
      c.parser->header_limit(k_header_limit);
      c.parser->body_limit(max_body_);
      c.parser->eager(true);
      c.sent_continue = false;
    }
    boost::beast::error_code ec;
    const size_t used = c.parser->put(boost::asio::buffer(c.in.data(), c.in.size()), ec);
    c.in.erase(0, used);
    if (ec == http::error::need_more) ec = {};  // handled by the checks below
    if (ec == http::error::body_limit) {
      respond(c, 413, "body larger than max_body_bytes (" + std::to_string(max_body_) + ")\n",
              true);
      c.discarding = true;
      c.in.clear();
      return false;
    }
    if (ec) {
      respond(c, 400, "malformed request: " + ec.message() + "\n", true);
      return false;
    }
    if (c.parser->is_done()) {
      handle_request(c);
      continue;
    }
    // Expect: 100-continue: answer the header before the client sends the body.
    if (c.parser->is_header_done() && !c.sent_continue) {
      c.sent_continue = true;
      const auto& req = c.parser->get();
      auto expect = req.find(http::field::expect);
      if (expect != req.end() && boost::beast::iequals(expect->value(), "100-continue")) {
        c.out = "HTTP/1.1 100 Continue\r\n\r\n";
        return false;
      }
    }
    if (used == 0 || c.in.empty()) return true;  // the rest of the request is still to come
  }
  return false;
}

void FromHttpServer::handle_request(Conn& c) {
  http::request<http::string_body> req = c.parser->release();
  c.parser.reset();
  c.keep_alive = req.keep_alive();
  std::string_view target(req.target().data(), req.target().size());
  target = target.substr(0, target.find('?'));
  if (target != path_) {
    respond(c, 404, "no such path; bodies go to " + path_ + "\n", !c.keep_alive);
  } else if (req.method() != http::verb::post && req.method() != http::verb::put) {
    respond(c, 405, "use POST or PUT\n", !c.keep_alive);
  } else if (pending_.size() >= max_pending_) {
    respond(c, 503, "the pipeline is busy (back-pressure); retry later\n", !c.keep_alive, true);
  } else {
    std::string& body = req.body();
    Value element;
    if (format_ == Format::bytes) {
      element = Value::bytes(body);
    } else if (!valid_utf8(body)) {
      respond(c, 400, "the body is not valid UTF-8\n", !c.keep_alive);
      return;
    } else if (format_ == Format::text) {
      element = Value::string(body);
    } else {
      auto parsed = sdk::parse_json(body);
      if (!parsed.is_ok()) {
        respond(c, 400, "the body is not valid JSON\n", !c.keep_alive);
        return;
      }
      element = std::move(parsed).value();
    }
    pending_.push_back({c.id, std::move(element)});
    c.waiting = true;
  }
}

void FromHttpServer::respond(Conn& c, int status, std::string_view body, bool close,
                             bool retry_after) {
  std::string& o = c.out;
  o.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(reason_of(status));
  o.append("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ");
  o.append(std::to_string(body.size())).append("\r\n");
  if (status == 405) o.append("Allow: POST, PUT\r\n");
  if (retry_after) o.append("Retry-After: 1\r\n");
  o.append(close ? "Connection: close\r\n" : "Connection: keep-alive\r\n");
  o.append("\r\n").append(body);
  if (close) c.close_after = true;
}

Result<SourceState> FromHttpServer::poll(Context ctx, uint32_t budget) {
  if (!listens()) return SourceState::done;
  const size_t n = std::min<size_t>(pending_.size(), budget);
  if (n == 0) return SourceState::idle;
  batch_.clear();
  for (size_t i = 0; i < n; ++i) batch_.push_back(std::move(pending_[i].body));
  Status st = ctx.emit_values(std::span<const Value>(batch_));
  batch_.clear();
  if (!st.is_ok()) return st;  // no answer: the clients see the connection close
  // Emitted: the pipeline has the bodies. Answer each request and resume its connection.
  std::vector<uint64_t> ids;
  ids.reserve(n);
  for (size_t i = 0; i < n; ++i) ids.push_back(pending_[i].conn);
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;  // the client left before the answer
    Conn& c = *it->second;
    c.waiting = false;
    respond(c, 200, "", !c.keep_alive);
    SLUICE_SDK_RETURN_IF_ERROR(advance(ctx, id));
  }
  return pending_.empty() ? SourceState::idle : SourceState::more;
}

void FromHttpServer::close_conn(Context ctx, uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ctx.io_unwatch(id);
  close_fd(it->second->fd);
  conns_.erase(it);
  connection_closed(ctx);
}

void FromHttpServer::stop(Context /*ctx*/) { close_all(); }

void FromHttpServer::close_all() noexcept {
  for (auto& [id, c] : conns_) {
    ctx_.io_unwatch(id);
    close_fd(c->fd);
  }
  conns_.clear();
  close_listener();
}

}  // namespace sluice::net
