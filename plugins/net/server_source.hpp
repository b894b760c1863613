// What from_tcp and from_http_server share: a non-blocking listening socket watched on
// the task's own event loop (Context::io_watch, ABI 1.1), accepting up to
// max_connections clients, and small helpers (closing a socket, rate-limited warnings).
//
// Threading: everything runs on the task's executor thread, in the node's callbacks; the
// plugin has no thread of its own.
#pragma once

#include <sluice/sluice.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace sluice::net {

/// Closes `fd` when open and sets it to -1.
void close_fd(int& fd) noexcept;

/// Base of the listening sources. Watch id 0 is the listener; connections get ids 1, 2, ...
/// (never reused) from next_connection_id(). Timer id 0 is the accept retry.
class ServerSource : public sdk::Source {
 public:
  /// `address` is a numeric IPv4 or IPv6 address (no name lookup: it would block the task).
  static void validate(const sdk::Config& cfg);
  ServerSource(const sl_node_init& init, const sdk::Config& cfg, const char* type);
  ~ServerSource() override;
  ServerSource(const ServerSource&) = delete;
  ServerSource& operator=(const ServerSource&) = delete;

  /// Task 0 opens the listening socket and logs "listening on ADDRESS:PORT"; other tasks
  /// have nothing to do (their poll says done).
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status on_io(sdk::Context ctx, uint64_t watch_id, uint32_t ready) final;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;

 protected:
  static constexpr uint64_t k_listener_id = 0;
  static constexpr uint64_t k_accept_retry_timer = 0;

  /// A new connection (non-blocking, close-on-exec), now owned by the subclass.
  virtual sdk::Status accepted(sdk::Context ctx, uint64_t id, int fd) = 0;
  /// Connection `id` is ready (`ready`: SL_IO_*).
  virtual sdk::Status connection_ready(sdk::Context ctx, uint64_t id, uint32_t ready) = 0;
  /// The subclass closed a connection: accepting resumes if max_connections held it back.
  void connection_closed(sdk::Context ctx);
  /// A connection became idle (see close_idlest): accepting resumes if max_connections
  /// held it back.
  void connection_idle(sdk::Context ctx);
  /// At max_connections: whether a connection could make room for a new client, and
  /// closing the one idle the longest (true when one was closed). By default none can:
  /// new clients wait in the listen backlog.
  [[nodiscard]] virtual bool has_idle_connection() const noexcept { return false; }
  virtual bool close_idlest(sdk::Context /*ctx*/) { return false; }
  /// Unwatches and closes the listener (stop, destruction).
  void close_listener() noexcept;
  /// False for tasks other than 0: they do not listen.
  [[nodiscard]] bool listens() const noexcept { return listens_; }
  /// Logs `what` at warn level at the 1st, 2nd, 4th, 8th... call with the same counter, so
  /// a misbehaving client cannot flood the log.
  void warn_sometimes(sdk::Context ctx, uint64_t& counter, const std::string& what) const;
  [[nodiscard]] const char* type_name() const noexcept { return type_; }

  sdk::Context ctx_;  // for the destructor's io_unwatch (valid until destroy returns)

 private:
  sdk::Status accept_ready(sdk::Context ctx);
  sdk::Status arm_listener(sdk::Context ctx);

  const char* type_;
  std::string address_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  size_t max_connections_;
  bool listens_;
  int listen_fd_ = -1;
  size_t open_ = 0;              // accepted connections not yet closed
  bool accept_waiting_ = false;  // listener not armed: at max_connections or retrying
  bool retrying_ = false;        // the accept retry timer is armed
  uint64_t accept_failures_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace sluice::net
