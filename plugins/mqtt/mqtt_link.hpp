// One libmosquitto client driven on the task's own event loop: no thread of its own.
//
// libmosquitto is used in its "external loop" mode: the node watches mosquitto_socket() with
// io_watch and calls mosquitto_loop_read / loop_write itself, and a one-second timer runs
// mosquitto_loop_misc (keepalive pings). The handle is marked threaded
// (mosquitto_threaded_set), which makes libmosquitto QUEUE every outgoing packet instead of
// writing it at once: the node decides when the queue goes out. from_mqtt relies on that to
// hold the acknowledgements (PUBACK) of the messages it emitted until a checkpoint covers
// them (libmosquitto 2.0 has no manual acknowledgement; see README.md).
//
// Connection loss (a failed read or write, a keepalive timeout, a refused CONNACK) closes
// the socket and arms a reconnection with doubling backoff; the node hears of it through
// LinkEvents::on_lost and LinkEvents::on_connected.
#pragma once

#include <sluice/sluice.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "mqtt_options.hpp"

struct mosquitto;
struct mosquitto_message;

namespace sluice::mqtt {

/// What the link tells its node; called on the task thread from inside Link's calls.
class LinkEvents {
 public:
  /// CONNACK accepted. `session_present`: the broker kept the session of this client id.
  virtual void on_connected(bool session_present) = 0;
  /// The connection is gone (the queue of unsent packets with it).
  virtual void on_lost() = 0;
  /// A PUBLISH arrived (from_mqtt); for QoS 1 its PUBACK is queued.
  virtual void on_message(const mosquitto_message& message) { (void)message; }
  /// The broker answered a SUBSCRIBE (SUBACK).
  virtual void on_subscribed() {}
  /// A publish of this client is done: PUBACK (QoS 1), PUBCOMP (QoS 2) or written (QoS 0).
  virtual void on_published(int mid) { (void)mid; }

 protected:
  LinkEvents() = default;
  ~LinkEvents() = default;
  LinkEvents(const LinkEvents&) = default;
  LinkEvents& operator=(const LinkEvents&) = default;
};

class Link {
 public:
  // Watch and timer ids; nodes use other ids for their own.
  static constexpr uint64_t k_read_watch = 1;
  static constexpr uint64_t k_write_watch = 2;
  static constexpr uint64_t k_tick_timer = 1001;
  static constexpr uint64_t k_reconnect_timer = 1002;

  /// `who` prefixes log lines ("from_mqtt").
  Link(ConnectionOptions options, LinkEvents& events, std::string who);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  /// Makes the client and starts the first connection (a refused or unreachable broker is
  /// retried with backoff; a configuration libmosquitto refuses is a failure).
  [[nodiscard]] sdk::Status open(sdk::Context ctx);
  /// Frees the client. `graceful`: write what is queued and a DISCONNECT first; otherwise
  /// the socket just closes (from_mqtt with acknowledgements no checkpoint covers yet: they
  /// must never reach the broker).
  void close(sdk::Context ctx, bool graceful);

  /// CONNACK received and the socket open.
  [[nodiscard]] bool connected() const noexcept { return connected_; }
  /// The socket is open (connecting or connected).
  [[nodiscard]] bool has_socket() const noexcept;
  /// libmosquitto has queued packets (or TLS wants to write).
  [[nodiscard]] bool want_write() const noexcept;
  /// The socket has bytes to read now (non-blocking check).
  [[nodiscard]] bool readable_now() const noexcept;

  /// One mosquitto_loop_read: handles what arrived (callbacks run inside). false: the
  /// connection was lost (reconnection armed).
  bool read(sdk::Context ctx);
  /// Writes what is queued. false: the connection was lost.
  bool write(sdk::Context ctx);
  /// Arms the read watch (one-shot, as every io_watch).
  void arm_read(sdk::Context ctx);
  /// Arms the write watch when something is queued, else disarms it.
  void arm_write(sdk::Context ctx);
  /// The link's timers: keepalive (loop_misc; true when it may have queued a ping) and
  /// reconnection. Returns whether `timer_id` was one of them.
  bool on_timer(sdk::Context ctx, uint64_t timer_id);

  /// Set when the broker refused the connection (credentials, client id): not retried, the
  /// node fails with it.
  [[nodiscard]] const sdk::Status& failure() const noexcept { return failure_; }

  [[nodiscard]] mosquitto* handle() const noexcept { return m_; }
  [[nodiscard]] uint64_t reconnects() const noexcept { return reconnects_; }
  [[nodiscard]] const ConnectionOptions& options() const noexcept { return options_; }

 private:
  static void on_connect_cb(mosquitto* m, void* self, int rc, int flags);
  static void on_disconnect_cb(mosquitto* m, void* self, int rc);
  static void on_message_cb(mosquitto* m, void* self, const mosquitto_message* msg);
  static void on_publish_cb(mosquitto* m, void* self, int mid);
  static void on_subscribe_cb(mosquitto* m, void* self, int mid, int qos_count,
                              const int* granted_qos);
  /// Runs f(link) for a callback; an exception fails the link (failure()) instead of
  /// crossing libmosquitto's C frames.
  template <class F>
  static void guarded(void* self, F&& f) noexcept;
  void on_connect(int rc, int flags);

  /// A connection attempt (first or again). false: it failed at once (retry armed).
  bool connect(sdk::Context ctx, bool first);
  void lost(sdk::Context ctx, const std::string& why);
  /// The socket's descriptor (-1: none); forgets the watches of an earlier socket.
  int watch_fd(sdk::Context ctx);

  ConnectionOptions options_;
  LinkEvents& events_;
  std::string who_;
  mosquitto* m_ = nullptr;
  int watched_fd_ = -1;
  bool connected_ = false;
  bool lost_reported_ = false;  // the link saw this loss already (callbacks and return codes)
  std::string refused_;         // a CONNACK refusal
  sdk::Status failure_;
  std::chrono::milliseconds backoff_{100};
  int64_t down_since_ns_ = 0;
  uint64_t reconnects_ = 0;
  sdk::Context ctx_{nullptr};  // the node's, for callbacks
};

}  // namespace sluice::mqtt
