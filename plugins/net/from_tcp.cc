// from_tcp: every delimited message of every connection, read on the task's own loop.
//
// Memory: queue_ holds at most about max_buffered_bytes (one read of 64 KiB may overshoot),
// each connection's partial message at most max_line_bytes, and at most max_connections
// connections exist. While queue_ is full no read watch is re-armed, so the kernel's
// receive buffer fills and TCP flow control stops the client.
#include <sluice/sluice.hpp>

#include "net.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace sluice::net {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;

namespace {

constexpr size_t k_chunk = size_t{64} * 1024;
// Bytes read from one connection per readiness event, so one fast client cannot starve
// the others or the poll that drains the queue.
constexpr size_t k_fair_share = size_t{256} * 1024;
// What a queued message costs beyond its bytes (so floods of empty messages are bounded).
constexpr size_t k_message_overhead = 32;

size_t positive(const Config& cfg, const char* key) {
  const int64_t v = cfg.get_int(key);
  if (v < 1) cfg.fail(key, "must be at least 1 (got " + std::to_string(v) + ")");
  return static_cast<size_t>(v);
}

}  // namespace

FromTcp::FromTcp(const sl_node_init& init, const Config& cfg)
    : ServerSource(init, cfg, k_name),
      delimiter_(cfg.get_string("delimiter")),
      text_(cfg.get_choice("format", {"text", "bytes"}) == 0),
      max_line_(positive(cfg, "max_line_bytes")),
      max_buffered_(positive(cfg, "max_buffered_bytes")),
      chunk_(k_chunk) {
  if (delimiter_.empty()) cfg.fail("delimiter", "must not be empty");
}

FromTcp::~FromTcp() { close_all(); }

Status FromTcp::accepted(Context ctx, uint64_t id, int fd) {
  conns_[id].fd = fd;
  if (buffered_ >= max_buffered_) {
    paused_.push_back(id);
    return {};
  }
  return ctx.io_watch(fd, SL_IO_READ, id);
}

Status FromTcp::connection_ready(Context ctx, uint64_t id, uint32_t /*ready*/) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return {};
  return read_some(ctx, id, it->second);
}

Status FromTcp::read_some(Context ctx, uint64_t id, Conn& c) {
  size_t read_now = 0;
  while (read_now < k_fair_share) {
    const ssize_t n = ::read(c.fd, chunk_.data(), chunk_.size());
    if (n < 0) {
      const int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) break;
      // Reset or another failure: the unterminated rest was cut off, so it is dropped.
      ctx.log_info(std::string("from_tcp: connection ") + std::to_string(id) +
                   " failed: " + std::generic_category().message(e));
      close_conn(ctx, id);
      return {};
    }
    if (n == 0) {  // clean end: the last message needs no delimiter
      if (!c.partial.empty()) queue_message(ctx, c.partial);
      close_conn(ctx, id);
      return {};
    }
    read_now += static_cast<size_t>(n);
    // A delimiter may straddle two reads: search from just before the new bytes.
    const size_t old_size = c.partial.size();
    c.partial.append(chunk_.data(), static_cast<size_t>(n));
    size_t begin = 0;
    size_t from = old_size >= delimiter_.size() ? old_size - (delimiter_.size() - 1) : 0;
    for (size_t at = c.partial.find(delimiter_, from); at != std::string::npos;
         at = c.partial.find(delimiter_, begin)) {
      if (at - begin > max_line_) break;  // reported below
      queue_message(ctx, std::string_view(c.partial).substr(begin, at - begin));
      begin = at + delimiter_.size();
    }
    c.partial.erase(0, begin);
    // Without a delimiter within max_line_bytes the message can never be accepted.
    const size_t limit = max_line_ + delimiter_.size() - 1;
    if (c.partial.size() > limit) {
      ctx.log_warn("from_tcp: connection " + std::to_string(id) + " sent a message longer than " +
                   "max_line_bytes (" + std::to_string(max_line_) + "): closing it");
      close_conn(ctx, id);
      return {};
    }
    if (buffered_ >= max_buffered_) {
      paused_.push_back(id);  // resumed by poll once the queue drains
      return {};
    }
  }
  return ctx.io_watch(c.fd, SL_IO_READ, id);
}

void FromTcp::queue_message(Context ctx, std::string_view message) {
  if (text_ && !sdk::valid_utf8(message)) {
    warn_sometimes(ctx, invalid_utf8_, "dropped a message that is not valid UTF-8");
    return;
  }
  queue_.push_back(text_ ? Value::string(message) : Value::bytes(message));
  buffered_ += message.size() + k_message_overhead;
}

Result<SourceState> FromTcp::poll(Context ctx, uint32_t budget) {
  if (!listens()) return SourceState::done;
  batch_.clear();
  while (!queue_.empty() && batch_.size() < budget) {
    buffered_ -= queue_.front().as_str().size() + k_message_overhead;
    batch_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (!batch_.empty()) {
    Status st = ctx.emit_values(std::span<const Value>(batch_));
    batch_.clear();
    if (!st.is_ok()) return st;
  }
  // Resume the connections paused on a full buffer (a watch on a socket with unread data
  // fires at once).
  while (buffered_ < max_buffered_ && !paused_.empty()) {
    const uint64_t id = paused_.back();
    paused_.pop_back();
    auto it = conns_.find(id);
    if (it != conns_.end()) SLUICE_SDK_RETURN_IF_ERROR(ctx.io_watch(it->second.fd, SL_IO_READ, id));
  }
  return queue_.empty() ? SourceState::idle : SourceState::more;
}

void FromTcp::close_conn(Context ctx, uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ctx.io_unwatch(id);
  close_fd(it->second.fd);
  conns_.erase(it);
  connection_closed(ctx);
}

void FromTcp::stop(Context /*ctx*/) { close_all(); }

void FromTcp::close_all() noexcept {
  for (auto& [id, c] : conns_) {
    ctx_.io_unwatch(id);
    close_fd(c.fd);
  }
  conns_.clear();
  paused_.clear();
  close_listener();
}

}  // namespace sluice::net
