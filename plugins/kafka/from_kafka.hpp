// from_kafka and from_kafka_batched: Kafka consumers as sources.
#pragma once

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint_link.hpp"
#include "kafka_common.hpp"

namespace sluice::kafka {

namespace detail {
template <class T, size_t N, size_t M, size_t... I>
constexpr std::array<T, N + M> join_params(const std::array<T, N>& a, const std::array<T, M>& b,
                                           std::index_sequence<I...> /*unused*/) {
  return {(I < N ? a[I] : b[I - N])...};
}
}  // namespace detail

/// `a` then `b`, as one array: a node's k_params made of a shared part and its own keys.
/// (sdk::Param has no default constructor, hence the index sequence.)
template <class T, size_t N, size_t M>
constexpr std::array<T, N + M> join_params(const std::array<T, N>& a, const std::array<T, M>& b) {
  return detail::join_params(a, b, std::make_index_sequence<N + M>{});
}

/// The config keys both sources share.
inline constexpr std::array k_source_params{
    sdk::required("brokers", SL_PARAM_STRING,
                  "Bootstrap servers, \"host:port,host:port\"; \"embedded\" starts librdkafka's "
                  "mock cluster inside the process (shared by all nodes saying \"embedded\")."),
    sdk::required("topics", SL_PARAM_ARRAY,
                  "Topic names; a name starting with `^` is a regular expression (POSIX "
                  "extended) matched against every topic, also topics created later.")
        .non_empty(),
    sdk::param("group_id", SL_PARAM_STRING, nullptr,
               "Consumer group: partitions are shared with the group's other members and "
               "offsets are committed to it. Without it every partition of the topics is "
               "read and nothing is committed.")
        .non_empty(),
    sdk::param("start", SL_PARAM_STRING, "\"committed\"",
               "Where to begin in a partition first assigned: \"committed\" (the group's "
               "committed offset, else the earliest; without group_id: the earliest), "
               "\"earliest\" or \"latest\".")
        .one_of("committed|earliest|latest"),
    sdk::param("poll_interval_ms", SL_PARAM_DURATION, "100",
               "When idle, look for messages at least this often (librdkafka also wakes the "
               "source as soon as messages arrive).")
        .min(1),
    sdk::param("keys", SL_PARAM_BOOL, "false",
               "Emit {key, value, topic, partition, offset, timestamp, headers} objects "
               "instead of bare values."),
    sdk::param("value_format", SL_PARAM_STRING, "\"bytes\"",
               "\"bytes\" (as streamz; payloads over 512 bytes are not copied), \"string\" "
               "(UTF-8 text: another payload does not decode) or \"json\" (parsed; a "
               "decode failure is handled by `on_error`).")
        .one_of("bytes|string|json"),
    sdk::param("on_error", SL_PARAM_STRING, "\"fail\"",
               "A message whose value does not decode: \"fail\" the node, \"skip\" it (with a "
               "warning), or \"dead_letter\": produce it unchanged to `dead_letter_topic` "
               "with the reason in header `sluice.error`.")
        .one_of("fail|skip|dead_letter"),
    sdk::param("dead_letter_topic", SL_PARAM_STRING, nullptr,
               "Topic (same brokers) for on_error = \"dead_letter\"."),
    sdk::param("refresh_ms", SL_PARAM_DURATION, "30000",
               "How often to look for new partitions and topics matching a `^` pattern "
               "(streamz refresh_partitions; topic.metadata.refresh.interval.ms with a "
               "group). 0: never (without a group)."),
    sdk::param("commit_interval_ms", SL_PARAM_DURATION, "5000",
               "With a group: commit the offsets of processed messages this often (and "
               "always when partitions are revoked and at the end). Not used with a "
               "[checkpoint] table: offsets are then committed with each checkpoint.")
        .min(1),
    sdk::param("stop_at_end", SL_PARAM_BOOL, "false",
               "End the stream once every assigned partition is at its end (like `kcat -e`), "
               "so `sluiced run` can exit by itself."),
    sdk::param("end_grace_ms", SL_PARAM_DURATION, "0",
               "With stop_at_end: the partitions must stay at their end this long (a producer "
               "in the same pipeline may still be writing)."),
    sdk::param("max_held_kbytes", SL_PARAM_INT, "16384",
               "Payloads are handed downstream without copying while the values still held "
               "downstream total less than this; past it they are copied, so a buffering "
               "operator never pins librdkafka's fetch buffers without bound.")
        .min(0),
    sdk::param("close_timeout_ms", SL_PARAM_DURATION, "10000",
               "Bound on the final commit and on leaving the group at the end."),
    sdk::param("config", SL_PARAM_TABLE, "{}",
               "librdkafka properties passed unchanged (values as strings; numbers and bools "
               "converted). Refused: keys that load code (plugin.library.paths, "
               "ssl.engine.location, ssl.providers, sasl.kerberos.kinit.cmd), "
               "enable.auto.commit = true, and keys set through other parameters."),
};

/// Everything of a Kafka consumer source; from_kafka and from_kafka_batched differ only in
/// how poll() shapes what it emits. Defined in from_kafka.cc (options, clients, start, timers,
/// close), from_kafka_poll.cc (messages: take, convert, emit; lag; end of the stream),
/// from_kafka_group.cc (group mode), from_kafka_manual.cc (manual mode) and
/// from_kafka_checkpoint.cc (checkpoints, OffsetSource).
class KafkaSource : public sdk::Source, private ClientEvents, private OffsetSource {
 public:
  /// Stateful and keyed (ABI 1.3): the checkpoint holds the position (next offset) of every
  /// partition read, per key group (partition + 1), so that a group moves with its partition
  /// (docs/SCALING.md); with dedup_origin, also the highest origin offset applied per group.
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;

  /// What the constructor checks (parse_options) and the `config` table; makes no client.
  static void validate(const sdk::Config& cfg);
  KafkaSource(const sl_node_init& init, bool batched);
  ~KafkaSource() override;
  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  sdk::Status start(sdk::Context ctx) override;
  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;

  // Checkpoints (docs/KAFKA.md "Delivery guarantees"; from_kafka_checkpoint.cc).
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;
  /// Key group `group` came to this task (from inside key_groups_assigned, which on_rebalance
  /// calls): the positions of its partitions (and its origin maxima) replaced by `state`'s.
  sdk::Status restore_group(sdk::Context ctx, uint32_t group, sdk::ValueRef state) override;
  /// Key group `group` went away: its partitions' positions and origin maxima forgotten.
  sdk::Status drop_group(sdk::Context ctx, uint32_t group) override;
  sdk::Status checkpoint_commit(sdk::Context ctx, uint64_t epoch) override;
  sdk::Result<bool> checkpoint_recover(sdk::Context ctx, uint64_t epoch,
                                       sdk::ValueRef state) override;

  /// Shared with wrapped payloads (see Handle): the client and the bytes held downstream.
  struct Shared {
    HandlePtr handle;
    std::atomic<int64_t> held_bytes{0};
  };

 private:
  using TopicPartition = std::pair<std::string, int32_t>;
  enum class Start { committed, earliest, latest };
  enum class Format { bytes, string, json };
  enum class OnError { fail, skip, dead_letter };
  static constexpr uint64_t k_poll_timer = 1;
  static constexpr uint64_t k_commit_timer = 2;
  static constexpr uint64_t k_refresh_timer = 3;
  static constexpr uint64_t k_grace_timer = 4;
  /// Payloads up to this size are copied rather than wrapped (see decode_value).
  static constexpr int64_t k_copy_max_bytes = 512;
  /// Most messages taken from librdkafka in one call.
  static constexpr size_t k_consume_chunk = 1024;

  /// The node's keys, read and checked.
  struct Options {
    std::string brokers;                // as written ("embedded" or a bootstrap list)
    std::vector<std::string> topics;    // names
    std::vector<std::string> patterns;  // names starting with '^' (regular expressions)
    std::optional<std::string> group_id;
    Start start = Start::committed;
    Format format = Format::bytes;
    OnError on_error = OnError::fail;
    std::optional<std::string> dead_letter_topic;
    bool keys = false;
    int64_t max_batch_size = 1;  // from_kafka_batched
    std::chrono::milliseconds poll_interval{};
    std::chrono::milliseconds refresh{};
    std::chrono::milliseconds commit_interval{};
    std::chrono::milliseconds end_grace{};
    std::chrono::milliseconds close_timeout{};
    bool stop_at_end = false;
    int64_t max_held_bytes = 0;
    bool origin_header = false;  // from_kafka: header sluice.origin on every message
    bool dedup_origin = false;   // from_kafka: skip records whose origin was applied
  };
  /// What a snapshot holds: positions (next offset) and, per key group, origin maxima.
  using Positions = std::map<TopicPartition, int64_t>;
  struct ParsedState {
    Positions positions;
    std::map<uint32_t, Positions> origins;  // key group -> origin (topic, partition) -> max
  };
  /// Reads the keys and checks the rules between them (throws with Config::fail); the
  /// `config` table is left to make_conf. Makes no client.
  static Options parse_options(const sdk::Config& cfg);

  // ClientEvents: librdkafka's error_cb, served inside our own polls.
  void on_client_error(rd_kafka_t* rk, int err, const char* reason) override;

  [[nodiscard]] rd_kafka_t* rk() const noexcept { return shared_->handle->get(); }
  [[nodiscard]] bool group_mode() const noexcept { return opts_.group_id.has_value(); }

  /// Up to `size` consumed messages or events (err set), in queue order, into `out`; the
  /// count (non-blocking; 0 when none).
  ssize_t next_messages(rd_kafka_message_t** out, size_t size);
  /// Handles an error or EOF "message" (err set); a failure fails the node.
  sdk::Status on_event_message(const rd_kafka_message_t* m);
  /// The sl_message for `m`; takes ownership of `m` (wrapped, or destroyed after copying).
  /// nullopt when on_error skipped or dead-lettered it.
  sdk::Result<std::optional<sl_message>> convert(sdk::Context ctx, rd_kafka_message_t* m);
  sdk::Result<sdk::Value> decode_value(rd_kafka_message_t* m, bool& owns_message);
  /// convert() for value_format "bytes" without `keys` (cannot fail): the same message,
  /// built without the Result and the topic name. Takes ownership of `m`.
  sl_message convert_bytes(rd_kafka_message_t* m);
  sdk::Status dead_letter(const rd_kafka_message_t* m, const std::string& reason);
  sdk::Status emit_batched(sdk::Context ctx, std::vector<rd_kafka_message_t*>& msgs);
  /// Marks offsets of `msgs` (topic, partition, offset) as processed.
  void mark_processed(const TopicPartition& tp, int64_t offset);

  // ClientEvents: the dead-letter producer's delivery reports.
  void on_delivery(rd_kafka_t* rk, const rd_kafka_message_t* m) override;

  // Group mode (from_kafka_group.cc).
  void on_rebalance_event(rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* parts) override {
    on_rebalance(err, parts);
  }
  void on_commit(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets) override;
  void on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
  /// Commits processed offsets (all, or only those of `only`): async, or bounded by
  /// close_timeout_ms.
  sdk::Status commit(bool async, const rd_kafka_topic_partition_list_t* only = nullptr);
  /// Commits `positions` (those of assigned partitions not yet committed at that offset).
  sdk::Status commit_positions(const std::map<TopicPartition, int64_t>& positions, bool async,
                               const rd_kafka_topic_partition_list_t* only);
  /// The pipeline checkpoints (said by the host, or seen in a first snapshot/restore): from
  /// then on offsets are committed only in checkpoint_commit.
  void note_checkpointing(sdk::Context ctx);
  /// A snapshot value: {"groups": {"<g>": {"positions": [...], "origins": [...]}}}, or the
  /// layout before key groups, {"positions": [[topic, partition, next_offset], ...]}.
  static sdk::Result<ParsedState> parse_state(sdk::ValueRef state);
  /// One group's entry of a snapshot into `out`; a position of a partition outside the group
  /// is refused.
  static sdk::Status parse_group(sdk::ValueRef table, uint32_t group, ParsedState& out);
  /// The key group of partition `partition` (sl_message.key_group).
  static uint32_t group_of(int32_t partition) noexcept {
    return static_cast<uint32_t>(sdk::key_group_of_partition(partition));
  }
  /// Forgets what this node holds for key group `group`: the positions of its partitions not
  /// assigned now (restored, processed, committed, last snapshot) and its origin maxima.
  void forget_group(uint32_t group);
  /// The key groups of `parts` that no partition of `assigned_` other than them has.
  std::vector<uint32_t> groups_alone(const rd_kafka_topic_partition_list_t* parts) const;

  /// dedup_origin: true when `m`'s sluice.origin names an origin offset at or below the
  /// highest applied for that origin in `m`'s key group (skip it); otherwise records it as
  /// applied. A missing or malformed header: false, with a rate-limited warning.
  bool origin_applied(sdk::Context ctx, const rd_kafka_message_t* m);
  /// origin_header: `m`'s headers with sluice.origin = "<topic>/<partition>/<offset>".
  sdk::Value headers_of(const rd_kafka_message_t* m) const;
  /// Gauge kafka_origin_duplicates_skipped, and an info line at most every 10 s.
  void report_duplicates(sdk::Context ctx);

  // OffsetSource (an exactly-once to_kafka of the same task; from_kafka_checkpoint.cc).
  rd_kafka_consumer_group_metadata_t* group_metadata() override;
  PartitionListPtr positions() override;
  std::string describe() const override;

  // Manual mode (no group; from_kafka_manual.cc): metadata on a helper thread, partitions
  // started on our queue.
  void request_metadata();
  sdk::Status apply_metadata(sdk::Context ctx);
  [[nodiscard]] bool topic_wanted(const std::string& topic) const;

  /// stop_at_end: true when every assigned partition is at its end (and the grace passed).
  bool at_end(sdk::Context ctx);
  /// Reports gauge kafka_consumer_lag_messages per assigned partition (high watermark - next offset
  /// to process), from librdkafka's cached watermarks; at most once a second.
  void report_lag(sdk::Context ctx);
  /// Removes the lag gauge of `tp` (revoked, or the source closed).
  void remove_lag(const TopicPartition& tp);
  /// Final commit, leave the group / stop fetching; idempotent. Bounded by close_timeout_ms.
  sdk::Status close(sdk::Context ctx);

  sdk::Context ctx_;
  bool batched_;
  uint64_t id_ = 0;  // NodeRegistry id (the clients' opaque)
  Options opts_;
  Brokers brokers_;

  std::shared_ptr<Shared> shared_;
  QueuePtr queue_;             // where messages arrive (consumer queue, or ours in manual mode)
  QueuePtr main_queue_;        // manual mode: librdkafka's main queue (errors), also wakes us
  rd_kafka_t* dlq_ = nullptr;  // dead-letter producer (on_error = "dead_letter")
  sdk::Status failure_;        // a failure found in a callback, returned by the next poll

  std::set<TopicPartition> assigned_;
  std::set<TopicPartition> seen_;  // assigned at least once in this process
  /// Per assigned partition: the end offset its last PARTITION_EOF reported, or -1 when it
  /// is not at its end. A message at or past that offset (newer data) clears it; messages
  /// before it (fetched before the EOF, processed after it in the same poll) do not.
  std::map<TopicPartition, int64_t> at_eof_;
  std::map<TopicPartition, int64_t> processed_;  // next offset to commit
  std::map<TopicPartition, int64_t> committed_;
  int64_t all_at_end_since_ns_ = -1;
  int64_t lag_reported_ns_ = -1;           // when report_lag last ran
  std::set<TopicPartition> lag_reported_;  // partitions with a lag gauge

  // Checkpoints.
  bool checkpointing_ = false;                  // offsets committed only in checkpoint_commit
  bool checkpointing_known_ = false;            // the host said so (else inferred)
  std::string link_key_;                        // TaskLink key of this task
  std::map<TopicPartition, int64_t> restored_;  // from restore(), until assigned
  std::map<TopicPartition, int64_t> snapshot_;  // positions of the last snapshot
  std::map<uint32_t, Positions> origins_;       // dedup_origin: per key group, see ParsedState

  // dedup_origin counters.
  uint64_t duplicates_skipped_ = 0;    // records skipped since the start
  uint64_t duplicates_reported_ = 0;   // duplicates_skipped_ at the last log line
  int64_t duplicates_logged_ns_ = -1;  // when that line was written
  uint64_t origin_warnings_ = 0;       // records with a missing or malformed sluice.origin
  int64_t origin_warned_ns_ = -1;      // when the last such warning was written
  uint64_t origin_warned_count_ = 0;   // origin_warnings_ then
  bool closed_ = false;
  bool done_ = false;

  // poll()'s buffers, kept to avoid allocating per poll.
  struct PositionRun {
    rd_kafka_topic_t* rkt;
    int32_t partition;
    int64_t last_offset;
  };
  std::vector<rd_kafka_message_t*> poll_buffer_;
  std::vector<sl_message> emit_buffer_;
  std::vector<PositionRun> run_buffer_;

  // Manual mode.
  std::map<std::string, rd_kafka_topic_t*> topic_handles_;
  std::thread metadata_thread_;
  std::mutex metadata_mutex_;
  std::optional<std::pair<sdk::Status, std::map<std::string, int32_t>>> metadata_result_;
  bool metadata_running_ = false;
  bool metadata_loaded_ = false;
  std::vector<std::string> missing_topics_;
};

/// `from_kafka`: one element per Kafka message.
class FromKafka final : public KafkaSource {
 public:
  static constexpr const char* k_name = "from_kafka";
  static constexpr const char* k_doc =
      "Emits each message of Kafka topics as one element (streamz from_kafka): its value "
      "(bytes by default, without copying), with the message key, headers (name -> bytes) and "
      "timestamp on the sluice message; or, with `keys`, an object {key, value, topic, "
      "partition, offset, timestamp, headers}. With `group_id`, offsets are committed only "
      "after a message was fully processed downstream (at-least-once): every "
      "`commit_interval_ms`, when partitions are revoked and at the end; with a [checkpoint] "
      "table the positions are in the checkpoint, restored on restart, and committed only "
      "with stored checkpoints. The checkpointed positions are kept per key group (the "
      "partition + 1), so that with several tasks or daemons a partition's position and the "
      "keyed state downstream (aggregate) move with it (docs/SCALING.md). Never blocks the "
      "task: librdkafka's threads wake the source. See docs/KAFKA.md.";
  static constexpr std::array k_params = join_params(
      k_source_params,
      std::array{
          sdk::param("origin_header", SL_PARAM_BOOL, "false",
                     "Give every message the header `sluice.origin` = \"<topic>/<partition>/"
                     "<offset>\" of its record (replacing one it had), so that a pipeline "
                     "writing it to a repartition topic can tell replays apart (set by "
                     "key_by's repartition_topic; docs/SCALING.md)."),
          sdk::param("dedup_origin", SL_PARAM_BOOL, "false",
                     "For a repartition topic: skip a record whose `sluice.origin` header "
                     "names an origin (topic, partition) at an offset at or below the "
                     "highest already applied for that origin in the record's key group "
                     "(a replay after an upstream restart). The maxima are checkpointed "
                     "with the group's positions. A record without the header, or with one "
                     "that does not parse, is processed, with a warning (at most one every "
                     "10 s). Skipped records count in gauge kafka_origin_duplicates_skipped."),
      });
  explicit FromKafka(const sl_node_init& init) : KafkaSource(init, false) {}
};

/// `from_kafka_batched`: one array per partition per poll.
class FromKafkaBatched final : public KafkaSource {
 public:
  static constexpr const char* k_name = "from_kafka_batched";
  static constexpr const char* k_doc =
      "Like from_kafka, but each element is an array of up to `max_batch_size` consecutive "
      "values (or key objects) of ONE partition: one element per partition per poll that found "
      "messages (streamz from_kafka_batched). The element's timestamp is its last message's. "
      "The offsets of a batch are committed after the whole array was processed downstream.";
  static constexpr std::array k_params = join_params(
      k_source_params,
      std::array{sdk::param("max_batch_size", SL_PARAM_INT, "10000",
                            "Most messages in one emitted array (streamz max_batch_size).")
                     .min(1)});
  explicit FromKafkaBatched(const sl_node_init& init) : KafkaSource(init, true) {}
};

}  // namespace sluice::kafka
