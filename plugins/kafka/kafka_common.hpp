// Shared pieces of the kafka plugin: librdkafka handles (RAII), the client configuration
// (with the keys that must never be set from a pipeline file), the process-wide embedded
// mock cluster, the registry that lets librdkafka's threads reach a node safely, and the
// conversions between Kafka headers and sluice values.
#pragma once

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::kafka {

/// UNAVAILABLE: a transient failure (the broker, the network); retrying later may succeed.
inline sdk::Status unavailable(std::string msg) { return {SL_UNAVAILABLE, std::move(msg)}; }

/// The librdkafka handles, owned: rd_kafka_destroy / rd_kafka_conf_destroy / ... on reset.
struct ConfDeleter {
  void operator()(rd_kafka_conf_t* c) const noexcept { rd_kafka_conf_destroy(c); }
};
struct TopicPartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const noexcept {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
struct QueueDeleter {
  void operator()(rd_kafka_queue_t* q) const noexcept { rd_kafka_queue_destroy(q); }
};
struct HeadersDeleter {
  void operator()(rd_kafka_headers_t* h) const noexcept { rd_kafka_headers_destroy(h); }
};
struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const noexcept { rd_kafka_error_destroy(e); }
};
using ConfPtr = std::unique_ptr<rd_kafka_conf_t, ConfDeleter>;
using PartitionListPtr =
    std::unique_ptr<rd_kafka_topic_partition_list_t, TopicPartitionListDeleter>;
using QueuePtr = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;
using HeadersPtr = std::unique_ptr<rd_kafka_headers_t, HeadersDeleter>;
using ErrorPtr = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;

/// An rd_kafka_t shared by its node and by every consumed message that still wraps a payload
/// (librdkafka's rd_kafka_destroy waits for outstanding messages, so the handle is destroyed
/// only when the node is gone AND the last wrapped message was released). Thread-safe
/// reference counting; the destroy runs on the thread that drops the last reference.
class Handle {
 public:
  /// Owns `rk`; `keep` (may be null) is released after it, e.g. the embedded cluster.
  Handle(rd_kafka_t* rk, std::shared_ptr<void> keep) noexcept : rk_(rk), keep_(std::move(keep)) {}
  ~Handle();
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  [[nodiscard]] rd_kafka_t* get() const noexcept { return rk_; }

 private:
  rd_kafka_t* rk_;
  std::shared_ptr<void> keep_;
};
using HandlePtr = std::shared_ptr<Handle>;

/// Registry of live nodes, keyed by a process-unique id, so that callbacks from librdkafka's
/// threads (queue events) and posted tasks never touch a node that is being destroyed: they
/// carry the id, and `with_node` runs only while the node is registered (under a mutex that
/// the node's unregister also takes).
/// What a node does with librdkafka's error callback (served on the executor thread, inside
/// the node's own rd_kafka_poll / consumer_poll calls).
class ClientEvents {
 public:
  virtual ~ClientEvents() = default;
  virtual void on_client_error(rd_kafka_t* rk, int err, const char* reason) = 0;
  /// A delivery report of a producer made with route_delivery_reports().
  virtual void on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* /*m*/) {}
  /// A rebalance of a consumer made with route_rebalances().
  virtual void on_rebalance_event(rd_kafka_resp_err_t /*err*/,
                                  rd_kafka_topic_partition_list_t* /*parts*/) {}
  /// A task posted with NodeRegistry::post_once ran (on the executor).
  virtual void on_posted() {}
  /// The result of an asynchronous commit (route_commits()).
  virtual void on_commit(rd_kafka_resp_err_t /*err*/,
                         rd_kafka_topic_partition_list_t* /*offsets*/) {}

 protected:
  ClientEvents() = default;
  ClientEvents(const ClientEvents&) = default;
  ClientEvents& operator=(const ClientEvents&) = default;
};

/// librdkafka's error callback as the sources and to_kafka handle it (the body of their
/// on_client_error; the checkpoint store's own warns and keeps the error). A fatal error is
/// returned, as INTERNAL "<prefix>fatal Kafka <client> error <NAME>: <reason>: <librdkafka's
/// fatal reason>", for the node to fail with; any other is logged on `ctx` (a connection error
/// names `bootstrap` and says that librdkafka keeps retrying) and OK is returned. On the
/// executor thread (see ClientEvents).
sdk::Status client_error(sdk::Context ctx, std::string_view prefix, const std::string& bootstrap,
                         rd_kafka_t* rk, int err, const char* reason);

class NodeRegistry {
 public:
  /// A fresh id bound to `ctx` and `events` (thread-safe).
  static uint64_t add(sl_context* ctx, ClientEvents* events);
  /// Unbinds `id`; after it returns no callback uses the node's context. Thread-safe.
  static void remove(uint64_t id);
  /// ctx.wake() for the node `id` when it is still registered. Thread-safe.
  static void wake(uint64_t id);
  /// Posts a task to the node `id`'s executor that calls its ClientEvents::on_posted() (if the
  /// node is still registered then), at most one at a time. Thread-safe.
  static void post_once(uint64_t id);
};

/// Install callbacks that reach the node registered under the conf's opaque (all are served
/// on the executor, inside the node's own poll calls).
void route_delivery_reports(rd_kafka_conf_t* conf);
void route_rebalances(rd_kafka_conf_t* conf);
void route_commits(rd_kafka_conf_t* conf);

/// librdkafka's queue-event callback: `opaque` is a NodeRegistry id (as a pointer); wakes the
/// source. Runs on a librdkafka thread.
void wake_from_queue_event(rd_kafka_t* rk, void* opaque);
/// Same, for sinks: posts a task that calls the node's on_posted().
void post_from_queue_event(rd_kafka_t* rk, void* opaque);

/// Keys a pipeline file may not set in `config`, with why. Returns the reason or empty.
std::string_view refused_key_reason(std::string_view key);

/// What kind of client a configuration is for (the defaults differ).
enum class ClientKind { consumer, producer };

/// The bootstrap address for `brokers`: itself, or for "embedded" the process-wide mock
/// cluster's (started on first use; see EmbeddedCluster).
struct Brokers {
  std::string bootstrap;
  std::shared_ptr<void> cluster;  ///< Keeps the embedded cluster alive (null otherwise).
  [[nodiscard]] bool embedded() const noexcept { return cluster != nullptr; }
};
/// Resolves `brokers` (throws sdk::Error when the embedded cluster cannot start).
Brokers resolve_brokers(const std::string& brokers);
/// Embedded cluster only: creates `topic` with `partitions` unless it exists (no-op for real
/// brokers).
void create_embedded_topic(const Brokers& brokers, const std::string& topic, int partitions);

/// A librdkafka configuration: `bootstrap`, then the node's defaults (`defaults`, in order,
/// each only when the user's table does not set the key), then the user's `config` table
/// (values: strings as is, ints/floats/bools as text). Refused keys, `enable.auto.commit =
/// true` and keys the plugin manages are reported with `cfg.fail("config", ...)`; librdkafka's
/// own rejections name the key and librdkafka's reason. Also installs the log and error
/// callbacks with the node's NodeRegistry id as the client's opaque.
ConfPtr make_conf(const sdk::Config& cfg, const std::string& bootstrap, uint64_t node_id,
                  std::initializer_list<std::pair<const char*, const char*>> defaults);

/// True when the user's `config` table sets `key`.
bool config_sets(const sdk::Config& cfg, std::string_view key);

/// The log callback installed by make_conf: forwards librdkafka's log lines to the host log of
/// the node whose registry id is the handle's opaque (thread-safe; any thread).
void log_to_host(const rd_kafka_t* rk, int level, const char* fac, const char* buf);

/// Makes the client (rd_kafka_new takes the conf on success). Throws with librdkafka's reason.
rd_kafka_t* new_client(rd_kafka_type_t type, ConfPtr conf, std::string_view what);

/// "TOPIC [PARTITION]" for messages.
std::string tp_name(std::string_view topic, int32_t partition);

/// Kafka headers as a sluice object (name -> bytes), or null when there are none. A repeated
/// header name keeps its last value (sluice objects have unique keys).
sdk::Value headers_to_value(const rd_kafka_headers_t* hdrs);
/// headers_to_value with header `name` set to `value` (bytes; any `name` in `hdrs` left out).
sdk::Value headers_to_value(const rd_kafka_headers_t* hdrs, std::string_view name,
                            std::string_view value);

/// The header from_kafka's origin_header sets and dedup_origin reads:
/// "<topic>/<partition>/<offset>" of the record a message came from (docs/SCALING.md).
inline constexpr const char* k_origin_header = "sluice.origin";
/// A sluice headers object (string/bytes values as is, others as JSON text) as Kafka headers;
/// null for a null or empty object.
HeadersPtr value_to_headers(sdk::ValueRef headers);

/// The bytes a value is written as: string and bytes as is, anything else as compact JSON.
/// `keep` receives the value that owns the returned bytes.
std::string_view encode_bytes(sdk::ValueRef v, sdk::Value& keep);

}  // namespace sluice::kafka
