#include "server_source.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace sluice::net {

using sdk::Config;
using sdk::Context;
using sdk::Status;

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void ServerSource::validate(const Config& cfg) {
  const std::string address = cfg.get_string("address");
  in6_addr v6{};
  if (::inet_pton(AF_INET, address.c_str(), &v6) != 1 &&
      ::inet_pton(AF_INET6, address.c_str(), &v6) != 1) {
    cfg.fail("address",
             "must be a numeric IPv4 or IPv6 address, e.g. \"127.0.0.1\" or \"::1\" (got \"" +
                 address.substr(0, 64) + "\")");
  }
}

ServerSource::ServerSource(const sl_node_init& init, const Config& cfg, const char* type)
    : ctx_(init.ctx),
      type_(type),
      address_(cfg.get_string("address")),
      max_connections_(0),
      listens_(init.task_index == 0) {
  const int64_t port = cfg.get_int("port");
  if (port < 0 || port > 65535) {
    cfg.fail("port", "must be 0..65535 (0: any free port) (got " + std::to_string(port) + ")");
  }
  const int64_t max_conn = cfg.get_int("max_connections");
  if (max_conn < 1) {
    cfg.fail("max_connections", "must be at least 1 (got " + std::to_string(max_conn) + ")");
  }
  max_connections_ = static_cast<size_t>(max_conn);
  // Numeric addresses only: resolving a name could block the task's thread.
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr_);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr_);
  if (::inet_pton(AF_INET, address_.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    addr_len_ = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, address_.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    addr_len_ = sizeof(sockaddr_in6);
  } else {
    cfg.fail("address",
             "must be a numeric IPv4 or IPv6 address, e.g. \"127.0.0.1\" or \"::1\" "
             "(got \"" +
                 address_ + "\")");
  }
}

ServerSource::~ServerSource() { close_listener(); }

Status ServerSource::start(Context ctx) {
  if (!listens_) return {};
  const std::string where = std::string(type_) + ": ";
  listen_fd_ = ::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return sdk::errno_status(errno, where + "cannot create a socket");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (addr_.ss_family == AF_INET6) {
    ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  }
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr_), addr_len_) != 0) {
    const int e = errno;
    close_fd(listen_fd_);
    return sdk::errno_status(e, where + "cannot listen on " + address_);
  }
  if (::listen(listen_fd_, SOMAXCONN) != 0) {
    const int e = errno;
    close_fd(listen_fd_);
    return sdk::errno_status(e, where + "cannot listen on " + address_);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  const uint16_t port = bound.ss_family == AF_INET6
                            ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                            : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  const std::string host = addr_.ss_family == AF_INET6 ? "[" + address_ + "]" : address_;
  ctx.log_info(std::string(type_) + ": listening on " + host + ":" + std::to_string(port));
  return arm_listener(ctx);
}

Status ServerSource::arm_listener(Context ctx) {
  accept_waiting_ = false;
  return ctx.io_watch(listen_fd_, SL_IO_READ, k_listener_id);
}

Status ServerSource::on_io(Context ctx, uint64_t watch_id, uint32_t ready) {
  if (watch_id == k_listener_id) return accept_ready(ctx);
  return connection_ready(ctx, watch_id, ready);
}

Status ServerSource::accept_ready(Context ctx) {
  if (listen_fd_ < 0) return {};
  for (;;) {
    if (open_ >= max_connections_ && !has_idle_connection()) {
      // Every connection is busy: new clients wait in the listen backlog until one closes
      // or becomes idle.
      accept_waiting_ = true;
      return {};
    }
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == EINTR || e == ECONNABORTED) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return arm_listener(ctx);
      // Out of descriptors or memory: the pending client waits in the backlog; retry
      // later rather than spin on a listener that stays readable.
      warn_sometimes(ctx, accept_failures_,
                     "accept failed, retrying every 100 ms: " + std::generic_category().message(e));
      accept_waiting_ = true;
      retrying_ = true;
      ctx.io_unwatch(k_listener_id);
      return ctx.timer_start(k_accept_retry_timer, std::chrono::milliseconds(100));
    }
    // A client is here and the limit is reached: the connection idle the longest goes.
    if (open_ >= max_connections_) close_idlest(ctx);
    ++open_;
    SLUICE_SDK_RETURN_IF_ERROR(accepted(ctx, next_id_++, fd));
  }
}

void ServerSource::connection_closed(Context ctx) {
  if (open_ > 0) --open_;
  connection_idle(ctx);
}

void ServerSource::connection_idle(Context ctx) {
  if (accept_waiting_ && !retrying_ && listen_fd_ >= 0) {
    // Cannot fail for an open listener; a failure would show at the next accept.
    static_cast<void>(arm_listener(ctx));
  }
}

Status ServerSource::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id != k_accept_retry_timer || listen_fd_ < 0) return {};
  retrying_ = false;
  SLUICE_SDK_RETURN_IF_ERROR(arm_listener(ctx));
  return accept_ready(ctx);
}

void ServerSource::close_listener() noexcept {
  if (listen_fd_ < 0) return;
  ctx_.io_unwatch(k_listener_id);
  close_fd(listen_fd_);
}

void ServerSource::warn_sometimes(Context ctx, uint64_t& counter, const std::string& what) const {
  ++counter;
  if ((counter & (counter - 1)) == 0) {
    ctx.log_warn(std::string(type_) + ": " + what + " (" + std::to_string(counter) + " so far)");
  }
}

}  // namespace sluice::net
