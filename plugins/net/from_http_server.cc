// from_http_server: each request body is one element; HTTP/1.1 parsed by Boost.Beast's
// request_parser over the connection's own buffer (no Beast streams: the socket is driven
// by the task's io_watch).
//
// Flow of one request: bytes are read and fed to the connection's HttpRequestReader
// (http_request_reader.hpp: Beast plus the bounds Beast leaves out); a complete request on
// `path` with POST/PUT either gets 503 (max_pending bodies already wait) or joins pending_,
// and the connection stops reading (pipelined requests wait) until poll() emitted the body
// and queued the 200. Answers are written at once when the socket takes them, else a write
// watch finishes them. Memory: max_connections connections, each with at most one request
// (header, each chunk line and the trailers <= 16 KiB each, body <= max_body_bytes), and
// max_pending bodies.
//
// Time: a sweep timer closes connections whose header is not complete header_timeout_ms
// after its first byte, and those idle (between requests, or a body or an answer making no
// progress) for idle_timeout_ms. At max_connections a new client takes the place of the
// connection idle the longest (no request in progress), so idle clients cannot lock others
// out; only when every connection is busy do new clients wait in the listen backlog.
#include <sluice/sluice.hpp>

#include "http/http_request_reader.hpp"
#include "net.hpp"

#include <boost/beast/core/string.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <exception>
#include <system_error>

namespace sluice::net {

namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;

namespace {

constexpr size_t k_chunk = size_t{64} * 1024;
constexpr size_t k_header_limit = size_t{16} * 1024;
constexpr uint64_t k_sweep_timer = 1;  // timer 0 is ServerSource's accept retry
// After refusing a request (400, 413, 431) the rest of the input is read and dropped (closing with
// unread input would reset the connection and could destroy the answer before the client reads it),
// but only this much.
constexpr size_t k_max_discard = size_t{4} * 1024 * 1024;

const char* reason_of(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

}  // namespace

struct FromHttpServer::Conn {
  Conn(uint64_t id_, int fd_, uint64_t max_body)
      : id(id_), fd(fd_), reader(HttpLimits{k_header_limit, max_body}) {}
  uint64_t id = 0;
  int fd = -1;
  HttpRequestReader reader;
  std::string out;                  // answer bytes not yet written
  Clock::time_point request_start;  // first byte of the request being read
  Clock::time_point last_activity;  // accepted, or the last byte read or written
  bool waiting = false;             // its body is in pending_: no further request is handled
  bool keep_alive = true;           // of the request being answered
  bool close_after = false;         // close once `out` is written
  bool discarding = false;          // after 413: read and drop input until EOF
  size_t discarded = 0;

  // No request in progress and nothing to write: the first to close at max_connections.
  [[nodiscard]] bool idle() const noexcept {
    return reader.between_requests() && out.empty() && !waiting && !close_after && !discarding;
  }
};

FromHttpServer::FromHttpServer(const sl_node_init& init, const Config& cfg)
    : ServerSource(init, cfg, k_name),
      path_(cfg.get_string("path")),
      format_(static_cast<Format>(cfg.get_choice("format", {"text", "bytes", "json"}))),
      max_body_(0),
      max_pending_(0),
      header_timeout_(0),
      idle_timeout_(0),
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
  const int64_t header_ms = cfg.get_int("header_timeout_ms");
  if (header_ms < 1) {
    cfg.fail("header_timeout_ms", "must be at least 1 (got " + std::to_string(header_ms) + ")");
  }
  header_timeout_ = std::chrono::milliseconds(header_ms);
  const int64_t idle_ms = cfg.get_int("idle_timeout_ms");
  if (idle_ms < 1) {
    cfg.fail("idle_timeout_ms", "must be at least 1 (got " + std::to_string(idle_ms) + ")");
  }
  idle_timeout_ = std::chrono::milliseconds(idle_ms);
}

FromHttpServer::~FromHttpServer() { close_all(); }

Status FromHttpServer::accepted(Context ctx, uint64_t id, int fd) {
  auto c = std::make_unique<Conn>(id, fd, max_body_);
  c->last_activity = Clock::now();
  conns_.emplace(id, std::move(c));
  if (!sweeping_) {
    sweeping_ = true;
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_sweep_timer, sweep_period()));
  }
  return ctx.io_watch(fd, SL_IO_READ, id);
}

bool FromHttpServer::has_idle_connection() const noexcept {
  return std::any_of(conns_.begin(), conns_.end(), [](const auto& e) { return e.second->idle(); });
}

bool FromHttpServer::close_idlest(Context ctx) {
  Conn* idlest = nullptr;
  for (auto& [id, c] : conns_) {
    if (c->idle() && (!idlest || c->last_activity < idlest->last_activity)) idlest = c.get();
  }
  if (!idlest) return false;
  warn_sometimes(ctx, evicted_, "max_connections reached: closed the connection idle the longest");
  close_conn(ctx, idlest->id);
  return true;
}

std::chrono::milliseconds FromHttpServer::sweep_period() const noexcept {
  return std::clamp(std::min(header_timeout_, idle_timeout_) / 4, std::chrono::milliseconds(20),
                    std::chrono::milliseconds(1000));
}

Status FromHttpServer::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id != k_sweep_timer) return ServerSource::on_timer(ctx, timer_id);
  const Clock::time_point now = Clock::now();
  std::vector<uint64_t> expired;
  for (const auto& [id, c] : conns_) {
    if (c->waiting) continue;  // the pipeline holds it, not the client
    const bool header = c->reader.reading_header() && c->out.empty();
    const Clock::time_point deadline =
        header ? c->request_start + header_timeout_ : c->last_activity + idle_timeout_;
    if (now >= deadline) expired.push_back(id);
  }
  for (uint64_t id : expired) {
    auto it = conns_.find(id);
    const bool header = it->second->reader.reading_header() && it->second->out.empty();
    warn_sometimes(ctx, header ? header_timeouts_ : idle_timeouts_,
                   header ? "closed a connection whose request header was not complete within "
                            "header_timeout_ms"
                          : "closed a connection idle for idle_timeout_ms");
    close_conn(ctx, id);
  }
  sweeping_ = !conns_.empty();
  if (sweeping_) return ctx.timer_start(k_sweep_timer, sweep_period());
  return {};
}

Status FromHttpServer::connection_ready(Context ctx, uint64_t id, uint32_t ready) {
  // Nothing a client sends may fail the pipeline: a failure here (parsing throws nothing,
  // so only memory or a bug) costs this connection only.
  try {
    return serve(ctx, id, ready);
  } catch (const std::exception& e) {
    warn_sometimes(ctx, failures_, std::string("closed a connection after an error: ") + e.what());
  } catch (...) {
    warn_sometimes(ctx, failures_, "closed a connection after an unknown error");
  }
  close_conn(ctx, id);
  return {};
}

Status FromHttpServer::serve(Context ctx, uint64_t id, uint32_t ready) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return {};
  Conn& c = *it->second;
  if ((ready & SL_IO_READ) != 0 && !c.waiting && c.out.empty()) {
    for (;;) {
      const ssize_t n = ::read(c.fd, chunk_.data(), chunk_.size());
      if (n > 0) {
        c.last_activity = Clock::now();
        if (c.discarding) {
          c.discarded += static_cast<size_t>(n);
          if (c.discarded > k_max_discard) {
            close_conn(ctx, id);
            return {};
          }
          continue;
        }
        if (c.reader.between_requests()) c.request_start = c.last_activity;
        c.reader.feed(std::string_view(chunk_.data(), static_cast<size_t>(n)));
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
        c.last_activity = Clock::now();
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
    if (c.idle()) connection_idle(ctx);
    if (starving || c.discarding) return ctx.io_watch(c.fd, SL_IO_READ, id);
    // Otherwise parsing stopped for an answer now written: pipelined requests go next.
  }
}

bool FromHttpServer::parse(Conn& c) {
  while (!c.waiting && c.out.empty() && !c.close_after && !c.discarding) {
    switch (c.reader.next()) {
      case HttpRequestReader::Step::need_more: return true;
      case HttpRequestReader::Step::header: {
        // Expect: 100-continue: answer the header before the client sends the body.
        const auto& req = c.reader.header();
        auto expect = req.find(http::field::expect);
        if (expect != req.end() && boost::beast::iequals(expect->value(), "100-continue")) {
          c.out = "HTTP/1.1 100 Continue\r\n\r\n";
          return false;
        }
        break;
      }
      case HttpRequestReader::Step::request: handle_request(c); break;
      case HttpRequestReader::Step::error: {
        const int status = c.reader.status();
        warn_sometimes(ctx_, refused_, "refused a request: " + c.reader.message());
        respond(c, status, c.reader.message() + "\n", true);
        // Read and drop what the client still sends (at most k_max_discard): closing with
        // unread input would reset the connection and could destroy the answer.
        c.discarding = true;
        return false;
      }
    }
  }
  return false;
}

void FromHttpServer::handle_request(Conn& c) {
  http::request<http::string_body> req = c.reader.take();
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
    } else if (!sdk::valid_utf8(body)) {
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
  // A counter the plugin keeps (the "_total" convention of docs/PLUGIN_GUIDE.md, "Metrics"):
  // sluice_node_http_responses_total{code} on /metrics. The host sums the tasks' series.
  ctx_.gauge_set("http_responses_total", "code=" + std::to_string(status),
                 static_cast<double>(++responses_[status]));
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

void FromHttpServer::stop(Context ctx) {
  ctx.timer_cancel(k_sweep_timer);
  sweeping_ = false;
  close_all();
}

void FromHttpServer::close_all() noexcept {
  for (auto& [id, c] : conns_) {
    ctx_.io_unwatch(id);
    close_fd(c->fd);
  }
  conns_.clear();
  close_listener();
}

}  // namespace sluice::net
