// to_kafka: a librdkafka producer as a sink.
#pragma once

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint_link.hpp"
#include "kafka_common.hpp"

namespace sluice::kafka {

/// `to_kafka`: each element produced to a topic, asynchronously.
class ToKafka final : public sdk::Sink, private ClientEvents {
 public:
  static constexpr const char* k_name = "to_kafka";
  static constexpr const char* k_doc =
      "Produces each element to a Kafka topic (streamz to_kafka): strings and bytes as they "
      "are, other values as compact JSON text (value_format = \"json\": every value as JSON); "
      "the message's headers (string/bytes values as "
      "is, others as JSON) and event time travel with it. The key is the element's field named "
      "by `key`, else the message key. Production is asynchronous (never a flush per message); "
      "delivery reports are read on a timer and when librdkafka signals them; a message that "
      "cannot be delivered after librdkafka's retries fails the node with the broker's error. "
      "Keyed records go to the partition a Java producer would choose (`partitioner`). "
      "When librdkafka's queue is full the sink holds the element and applies back-pressure. "
      "finish waits for every delivery (bounded by flush_timeout_ms). With checkpoints an "
      "epoch completes only when every delivery report is in; `exactly_once` writes a Kafka "
      "transaction per epoch that also carries the input offsets. Being a sink, it emits "
      "nothing downstream (streamz emits the delivered values). See docs/KAFKA.md.";
  /// librdkafka 2.0's partitioner names (topic property `partitioner`).
  static constexpr const char* k_partitioners =
      "murmur2_random|murmur2|consistent_random|consistent|random|fnv1a|fnv1a_random";
  static constexpr std::array k_params{
      sdk::required("brokers", SL_PARAM_STRING,
                    "Bootstrap servers, \"host:port,...\", or \"embedded\" (the in-process mock "
                    "cluster)."),
      sdk::required("topic", SL_PARAM_STRING, "The topic to write to.").non_empty(),
      sdk::param("key", SL_PARAM_ANY, nullptr,
                 "Where the Kafka key comes from: a field name (string), an array index (int) "
                 "or a path (array of those) into the element. Absent: the message's own key "
                 "(e.g. from from_kafka), else no key. Written as the record key: a string as "
                 "its UTF-8 bytes, bytes as is, other values as compact JSON; null is no key."),
      sdk::param("partitioner", SL_PARAM_STRING, "\"murmur2_random\"",
                 "How a keyed record's partition is chosen (librdkafka's `partitioner`). "
                 "\"murmur2_random\": the Java producer's rule (murmur2 of the key bytes, made "
                 "positive, modulo the partition count), so records land where Kafka Streams "
                 "and ksqlDB put the same key; records without a key go to a random (sticky) "
                 "partition. Differs from librdkafka's own default, consistent_random (CRC32), "
                 "which is not Java-compatible. The other values are librdkafka's other "
                 "partitioners. Set here only: `config` may not set it.")
          .one_of(k_partitioners),
      sdk::param("value_format", SL_PARAM_STRING, "\"auto\"",
                 "How the record's value is written. \"auto\": strings and bytes as they are, "
                 "other values as compact JSON text. \"json\": every value as compact JSON "
                 "text, strings quoted, bytes as base64 strings: what from_kafka with "
                 "value_format = \"json\" reads back as the same value (strings, numbers, "
                 "booleans, null, arrays, objects); key_by's repartition topic is written so.")
          .one_of("auto|json"),
      sdk::param("flush_timeout_ms", SL_PARAM_DURATION, "10000",
                 "Bound on waiting for the last deliveries at the end (finish, stop)."),
      sdk::param("poll_interval_ms", SL_PARAM_DURATION, "50",
                 "How often delivery reports are read when librdkafka has not signalled any.")
          .min(1),
      sdk::param("config", SL_PARAM_TABLE, "{}",
                 "librdkafka producer properties passed unchanged (same refusals as "
                 "from_kafka; `partitioner` has its own key). Default enable.idempotence = true "
                 "(order per partition is kept across retries)."),
      sdk::param("exactly_once", SL_PARAM_BOOL, "false",
                 "Kafka transactions, one per checkpoint epoch, carrying the input offsets of "
                 "the task's from_kafka sources (which need a group_id): a read_committed "
                 "consumer sees each result once. Needs a [checkpoint] table."),
      sdk::param("transactional_id", SL_PARAM_STRING, nullptr,
                 "With exactly_once: the transactional.id prefix; the task index is appended. "
                 "Default \"sluice-<pipeline>-<node id>\". Must be stable across restarts and "
                 "unique among running producers."),
      sdk::param("transaction_timeout_ms", SL_PARAM_DURATION, "60000",
                 "With exactly_once: transaction.timeout.ms (the broker aborts a transaction "
                 "left open longer, e.g. by a crashed process)."),
  };

  /// The cross-key rules of the constructor and the `config` table (no client is made).
  static void validate(const sdk::Config& cfg);
  /// The `partitioner` key, checked (also in the constructor, for hosts older than ABI 1.2
  /// that skip one_of): one of k_partitioners, and not also set in `config`.
  static std::string partitioner(const sdk::Config& cfg);
  explicit ToKafka(const sl_node_init& init);
  ~ToKafka() override;
  ToKafka(const ToKafka&) = delete;
  ToKafka& operator=(const ToKafka&) = delete;

  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process_one(sdk::Context ctx, uint32_t input, const sl_message& m) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;

  // Checkpoints: prepare answers when every delivery report is in (and, exactly_once, the
  // offsets are in the transaction); commit ends the epoch's transaction.
  sdk::Result<bool> checkpoint_prepare(sdk::Context ctx, uint64_t epoch) override;
  sdk::Status checkpoint_commit(sdk::Context ctx, uint64_t epoch) override;
  sdk::Status checkpoint_abort(sdk::Context ctx, uint64_t epoch) override;

 private:
  static constexpr uint64_t k_poll_timer = 1;
  /// An element on its way. Small payloads are copied by librdkafka (RD_KAFKA_MSG_F_COPY,
  /// into the allocation it makes for every message anyway) and need nothing kept; larger
  /// ones are borrowed (no copy) and their Record keeps the value alive until the delivery
  /// report. librdkafka copies keys and headers in both cases.
  /// A record made with `hold = false` only views the element's bytes (valid during
  /// process_one) and is produced at once, copied; a held one keeps references.
  struct Record {
    ToKafka* owner = nullptr;
    bool held = false;
    sdk::Value payload;  // owns the bytes handed to librdkafka (held, or JSON text)
    std::string_view bytes;
    sdk::Value key_keep;
    std::string_view key;
    bool has_key = false;
    sdk::Value headers;                // held: the message's headers object
    sl_value headers_ref = sl_null();  // the headers (borrowed), converted at produce time
    int64_t timestamp_ms = 0;
  };
  /// Payloads up to this size are copied (see Record).
  static constexpr size_t k_copy_max_bytes = 512;

  /// librdkafka's delivery-report callback: the message opaque is the Record (borrowed
  /// payload) or the node itself with bit 0 set (copied payload), so no registry lookup (and
  /// no lock) is needed per report. Reports are served only by the node's own rd_kafka_poll
  /// calls, on its executor thread.
  static void delivery_report(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);

  void on_client_error(rd_kafka_t* rk, int err, const char* reason) override;
  void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m) override;
  void on_posted() override;

  /// The record for `m` (key path resolved, value encoded); a failure is per message.
  sdk::Result<Record> make_record(const sl_message& m, bool hold) const;
  /// Hands `rec` to librdkafka; QUEUE_FULL leaves it with the caller (returns false).
  sdk::Result<bool> produce(Record& rec);
  /// One rd_kafka_produceva call, shared by both produce paths: `value` copied when `copy`,
  /// else borrowed until the delivery report; the transaction begun first under
  /// exactly-once. true: produced (librdkafka owns `headers`); false: its queue is full.
  sdk::Result<bool> produce_va(std::string_view value, bool copy,
                               std::optional<std::string_view> key, HeadersPtr& headers,
                               int64_t timestamp_ms, void* opaque);
  /// The delivery-report opaque of a message that needs no kept Record: this node, bit 0 set.
  void* node_opaque();
  enum class Copied { taken, queue_full, not_applicable };
  /// The per-element fast path: produces `m` straight from its bytes, copied by librdkafka,
  /// when its value is a string or bytes of at most k_copy_max_bytes and its key (the message
  /// key) null, string or bytes; else not_applicable (nothing done). Same message as
  /// make_record + produce would make.
  sdk::Result<Copied> produce_copied(const sl_message& m);
  /// Retries held records in order; clears back-pressure when all went out.
  sdk::Status drain_pending(sdk::Context ctx);
  /// Waits (bounded) until every record was delivered; reports what was not.
  sdk::Status flush(sdk::Context ctx);
  /// Answers a pending prepare once everything is delivered (or something failed).
  void maybe_ready();
  /// The epoch's work after every delivery: exactly_once sends the offsets.
  sdk::Status complete_prepare(uint64_t epoch);
  // Transactions (exactly_once).
  sdk::Status begin_transaction();
  sdk::Status send_offsets(uint64_t epoch);
  sdk::Status commit_transaction(uint64_t epoch);
  /// Aborts the open transaction (bounded); logs what fails.
  void abort_transaction(const std::string& why);
  /// The status for a failed transactional call `what` (fencing named as such).
  sdk::Status txn_error(const std::string& what, const rd_kafka_error_t* e) const;

  sdk::Context ctx_;
  uint64_t id_ = 0;
  Brokers brokers_;
  std::string topic_;
  std::vector<sdk::Value> key_path_;  // empty: use the message key
  bool key_from_value_ = false;
  bool json_values_ = false;  // value_format = "json": strings quoted too
  std::string partitioner_;   // librdkafka's `partitioner` (see k_partitioners)
  std::chrono::milliseconds flush_timeout_;
  std::chrono::milliseconds poll_interval_;
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_topic_t* rkt_ = nullptr;
  QueuePtr main_queue_;
  std::deque<Record> pending_;  // refused with QUEUE_FULL, in order
  bool backpressure_ = false;
  sdk::Status failure_;  // the first failed delivery
  uint64_t in_flight_ = 0;
  bool stopped_ = false;

  // Checkpoints.
  std::optional<uint64_t> preparing_;  // epoch whose prepare waits for delivery reports
  bool exactly_once_ = false;
  std::string transactional_id_;
  std::string link_key_;
  bool txn_open_ = false;
  /// Offsets sent in transactions (the open one included): an idle epoch sends nothing.
  std::map<std::pair<std::string, int32_t>, int64_t> txn_offsets_;
  std::chrono::milliseconds txn_timeout_{60000};
};

}  // namespace sluice::kafka
