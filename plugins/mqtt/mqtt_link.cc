// The libmosquitto client on the task's loop: connection, reconnection, watches, keepalive.
#include "mqtt_link.hpp"

#include <mosquitto.h>
#include <poll.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace sluice::mqtt {

namespace {

constexpr std::chrono::milliseconds k_first_backoff{100};
constexpr std::chrono::seconds k_tick{1};

}  // namespace

Link::Link(ConnectionOptions options, LinkEvents& events, std::string who)
    : options_(std::move(options)), events_(events), who_(std::move(who)) {}

Link::~Link() {
  if (m_ != nullptr) mosquitto_destroy(m_);
}

// libmosquitto's callbacks run inside its C frames (loop_read, loop_write, loop_misc): no
// exception may cross them. What one could throw (an allocation, mostly) fails the link
// instead, which its node reports at its next call.
template <class F>
void Link::guarded(void* self, F&& f) noexcept {
  auto* link = static_cast<Link*>(self);
  try {
    f(*link);
  } catch (const std::exception& e) {
    link->failure_ = sdk::Status(SL_INTERNAL, link->who_ + ": in a callback: " + e.what());
  } catch (...) {
    link->failure_ = sdk::Status(SL_INTERNAL, link->who_ + ": in a callback: unknown exception");
  }
}

sdk::Status Link::open(sdk::Context ctx) {
  ensure_library();
  ctx_ = ctx;
  m_ = mosquitto_new(options_.client_id.c_str(), options_.clean_session, this);
  if (m_ == nullptr) return sdk::internal_error(who_ + ": cannot make an MQTT client");
  // Queue every packet; the node says when the queue is written (see the header).
  mosquitto_threaded_set(m_, true);
  SLUICE_SDK_RETURN_IF_ERROR(options_.apply(m_));
  mosquitto_connect_with_flags_callback_set(m_, &Link::on_connect_cb);
  mosquitto_disconnect_callback_set(m_, &Link::on_disconnect_cb);
  mosquitto_message_callback_set(m_, &Link::on_message_cb);
  mosquitto_publish_callback_set(m_, &Link::on_publish_cb);
  mosquitto_subscribe_callback_set(m_, &Link::on_subscribe_cb);
  SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_tick_timer, k_tick));
  connect(ctx, true);
  return {};
}

void Link::close(sdk::Context ctx, bool graceful) {
  ctx.io_unwatch(k_read_watch);
  ctx.io_unwatch(k_write_watch);
  ctx.timer_cancel(k_tick_timer);
  ctx.timer_cancel(k_reconnect_timer);
  if (m_ != nullptr) {
    if (connected_ && graceful) {
      // Best effort: a clean DISCONNECT (a persistent session stays on the broker).
      mosquitto_disconnect(m_);
      mosquitto_loop_write(m_, 1);
    }
    mosquitto_destroy(m_);
    m_ = nullptr;
  }
  connected_ = false;
}

bool Link::connect(sdk::Context ctx, bool first) {
  lost_reported_ = false;
  refused_.clear();
  const int rc = first ? mosquitto_connect_async(m_, options_.host.c_str(), options_.port,
                                                 options_.keepalive_s)
                       : mosquitto_reconnect_async(m_);
  if (rc != MOSQ_ERR_SUCCESS) {
    lost(ctx, "cannot connect to " + options_.host + ":" + std::to_string(options_.port) + ": " +
                  mosquitto_error(rc));
    return false;
  }
  // The CONNECT packet is queued: write it once the socket is writable.
  arm_read(ctx);
  arm_write(ctx);
  return true;
}

void Link::lost(sdk::Context ctx, const std::string& why) {
  const bool was_connected = connected_;
  connected_ = false;
  ctx.io_unwatch(k_read_watch);
  ctx.io_unwatch(k_write_watch);
  watched_fd_ = -1;
  if (!refused_.empty()) {
    // Retrying cannot help a refusal (and would hammer the broker's password check).
    failure_ = sdk::Status(SL_PERMISSION_DENIED, who_ + ": " + refused_);
    if (was_connected || !lost_reported_) events_.on_lost();
    lost_reported_ = true;
    return;
  }
  if (down_since_ns_ == 0) {
    down_since_ns_ = ctx.now_ns();
    ctx.log_warn(who_ + ": " + (refused_.empty() ? why : refused_) + "; reconnecting with backoff");
  }
  if (was_connected || !lost_reported_) events_.on_lost();
  lost_reported_ = true;
  sdk::Status st = ctx.timer_start(k_reconnect_timer, backoff_);
  if (!st.is_ok()) ctx.log_error(st.message());
  backoff_ = std::min(backoff_ * 2, options_.backoff_max);
}

bool Link::has_socket() const noexcept { return m_ != nullptr && mosquitto_socket(m_) >= 0; }

bool Link::want_write() const noexcept { return has_socket() && mosquitto_want_write(m_); }

bool Link::readable_now() const noexcept {
  if (!has_socket()) return false;
  pollfd p{mosquitto_socket(m_), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

bool Link::read(sdk::Context ctx) {
  if (!has_socket()) return false;
  const int rc = mosquitto_loop_read(m_, 1);
  if (rc != MOSQ_ERR_SUCCESS || !has_socket()) {
    lost(ctx, "connection lost: " + mosquitto_error(rc));
    return false;
  }
  return true;
}

bool Link::write(sdk::Context ctx) {
  if (!has_socket()) return false;
  const int rc = mosquitto_loop_write(m_, 1);
  if (rc != MOSQ_ERR_SUCCESS || !has_socket()) {
    lost(ctx, "connection lost: " + mosquitto_error(rc));
    return false;
  }
  return true;
}

int Link::watch_fd(sdk::Context ctx) {
  const int fd = has_socket() ? mosquitto_socket(m_) : -1;
  if (fd != watched_fd_) {
    // A new socket: the old watches point at a closed descriptor.
    ctx.io_unwatch(k_read_watch);
    ctx.io_unwatch(k_write_watch);
    watched_fd_ = fd;
  }
  return fd;
}

void Link::arm_read(sdk::Context ctx) {
  const int fd = watch_fd(ctx);
  if (fd < 0) return;
  sdk::Status st = ctx.io_watch(fd, SL_IO_READ, k_read_watch);
  if (!st.is_ok()) ctx.log_error(who_ + ": " + st.message());
}

void Link::arm_write(sdk::Context ctx) {
  const int fd = watch_fd(ctx);
  if (fd < 0) return;
  if (!mosquitto_want_write(m_)) {
    ctx.io_unwatch(k_write_watch);
    return;
  }
  sdk::Status st = ctx.io_watch(fd, SL_IO_WRITE, k_write_watch);
  if (!st.is_ok()) ctx.log_error(who_ + ": " + st.message());
}

bool Link::on_timer(sdk::Context ctx, uint64_t timer_id) {
  if (timer_id == k_reconnect_timer) {
    ++reconnects_;
    connect(ctx, false);
    return true;
  }
  if (timer_id != k_tick_timer) return false;
  sdk::Status st = ctx.timer_start(k_tick_timer, k_tick);
  if (!st.is_ok()) ctx.log_error(st.message());
  if (has_socket()) {
    const int rc = mosquitto_loop_misc(m_);
    if (rc != MOSQ_ERR_SUCCESS || !has_socket()) {
      lost(ctx, "connection lost: " + mosquitto_error(rc) + " (keepalive)");
    }
  }
  return true;
}

void Link::on_connect_cb(mosquitto* /*m*/, void* self, int rc, int flags) {
  guarded(self, [&](Link& link) { link.on_connect(rc, flags); });
}

void Link::on_connect(int rc, int flags) {
  if (rc != 0) {
    // The broker refused (bad credentials, client id): the disconnect follows.
    refused_ = "the broker refused the connection: " + std::string(mosquitto_connack_string(rc));
    return;
  }
  connected_ = true;
  lost_reported_ = false;
  backoff_ = k_first_backoff;
  if (down_since_ns_ != 0) {
    ctx_.log_info(who_ + ": reconnected after " +
                  std::to_string((ctx_.now_ns() - down_since_ns_) / 1'000'000) + " ms");
    down_since_ns_ = 0;
  }
  ctx_.log_info(who_ + ": connected to " + options_.host + ":" + std::to_string(options_.port) +
                " as \"" + options_.client_id + "\" (" +
                ((flags & 1) != 0 ? "session resumed" : "new session") + ")");
  events_.on_connected((flags & 1) != 0);
}

void Link::on_subscribe_cb(mosquitto* /*m*/, void* self, int /*mid*/, int /*qos_count*/,
                           const int* /*granted_qos*/) {
  guarded(self, [](Link& link) { link.events_.on_subscribed(); });
}

void Link::on_disconnect_cb(mosquitto* /*m*/, void* self, int /*rc*/) {
  // Called from inside loop_read / loop_write / loop_misc, whose return code the caller
  // turns into lost(); only mark the state here.
  static_cast<Link*>(self)->connected_ = false;
}

void Link::on_message_cb(mosquitto* /*m*/, void* self, const mosquitto_message* msg) {
  guarded(self, [msg](Link& link) { link.events_.on_message(*msg); });
}

void Link::on_publish_cb(mosquitto* /*m*/, void* self, int mid) {
  guarded(self, [mid](Link& link) { link.events_.on_published(mid); });
}

}  // namespace sluice::mqtt
