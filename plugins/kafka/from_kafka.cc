// from_kafka / from_kafka_batched: a librdkafka consumer polled on the task's executor.
//
// Two modes. With `group_id`: subscribe (cooperative-sticky), the rebalance callback assigns
// and, on revocation, commits what was processed. Without: the partitions of the topics are
// found in metadata (read on a helper thread, never on the executor) and started on a private
// queue with librdkafka's partition consumer API (the group API needs a group.id).
// In both, librdkafka's threads wake the source through a queue event; poll() never blocks.
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <regex.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>

namespace sluice::kafka {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

constexpr int k_metadata_timeout_ms = 5000;

// librdkafka 2.0.2 stops fetching a partition while the local queue holds queued.min.messages
// (default 100,000) or queued.max.messages.kbytes, and looks again only when its broker
// thread wakes: at the latest after rd_kafka_max_block_ms (1000 ms, not configurable; 2.1's
// fetch.queue.backoff.ms is that pause). The queue is shared by all partitions (the consumer
// queue, or ours in manual mode), so a source that falls behind by a full queue drains it and
// then stands still for the rest of that second (debug=fetch shows the fetches resume on a
// 1 s tick). queued.min.messages: 100,000 messages (13 MB of 100-byte messages) stalled for
// 0.7 s of a 1.1 s run of 300,000 messages.
constexpr const char* k_queued_min_messages = "1000000";
// queued.max.messages.kbytes: librdkafka's own default (64 MiB). With 16 MiB, a backlog of
// 2,000,000 messages of 100 bytes through map(identity) stood still 0.6-0.8 s after every
// ~300,000 (a 1 s cycle: about one queue per second); with 64 MiB the same run has at most
// one short pause (bench/kafka_stall_trace.py). Memory: the queue, plus the one fetch
// response that may land while it is just under the bound (fetch.max.bytes, 50 MiB); the
// bound counts payload bytes, and librdkafka's per-message overhead comes on top (that 2 M
// run peaked at ~300 MiB RSS with 64 MiB, ~110 MiB with 16 MiB; the raw loop the same).
constexpr const char* k_queued_max_kbytes = "65536";

void* opaque_of(uint64_t id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id)); }

int64_t ms_between(std::chrono::steady_clock::time_point from,
                   std::chrono::steady_clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

/// A consumed message whose payload a bytes value wraps: released with the last reference.
struct HeldMessage {
  std::shared_ptr<KafkaSource::Shared> shared;
  rd_kafka_message_t* message;
  int64_t bytes;
};

void release_held(void* p) {
  auto* held = static_cast<HeldMessage*>(p);
  held->shared->held_bytes.fetch_sub(held->bytes);
  rd_kafka_message_destroy(held->message);
  delete held;  // may drop the last reference to the client (then rd_kafka_destroy runs here)
}

bool posix_match(const std::string& pattern, const std::string& text) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return false;
  const bool ok = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return ok;
}

}  // namespace

// ---------------------------------------------------------------------------
// Construction and start

void KafkaSource::validate(const Config& cfg) {
  const Value topics = cfg.get_array("topics");
  for (size_t i = 0; i < topics.size(); ++i) {
    const Value t = topics[i];
    if (!t.is_string() || t.as_str().empty()) {
      cfg.fail("topics", "item " + std::to_string(i) + " must be a non-empty string (got " +
                             t.to_json() + ")");
    }
    const std::string name(t.as_str());
    if (name.front() == '^') {
      regex_t re;
      if (regcomp(&re, name.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
        cfg.fail("topics", "item " + std::to_string(i) +
                               " is not a valid regular expression (POSIX extended)");
      }
      regfree(&re);
      if (!cfg.has("group_id") && cfg.get_duration("refresh_ms").count() == 0) {
        cfg.fail("refresh_ms", "must be positive when `topics` has a `^` pattern and no group_id");
      }
    }
  }
  const bool dead_letter = cfg.get_string("on_error") == "dead_letter";
  const std::optional<std::string> dlq = cfg.find_string("dead_letter_topic");
  if (dead_letter && (!dlq || dlq->empty())) {
    cfg.fail("dead_letter_topic", "is required when on_error = \"dead_letter\"");
  }
  if (!dead_letter && dlq) {
    cfg.fail("dead_letter_topic", "is used only with on_error = \"dead_letter\"");
  }
  // The user's librdkafka properties, checked on a configuration object of their own.
  static_cast<void>(make_conf(cfg, "localhost:9092", 0, {}));
}

KafkaSource::KafkaSource(const sl_node_init& init, bool batched)
    : ctx_(init.ctx), batched_(batched), shared_(std::make_shared<Shared>()) {
  const Config cfg(init);
  const Value topics = cfg.get_array("topics");
  if (topics.size() == 0) cfg.fail("topics", "must name at least one topic");
  for (size_t i = 0; i < topics.size(); ++i) {
    const Value t = topics[i];
    if (!t.is_string() || t.as_str().empty()) {
      cfg.fail("topics", "item " + std::to_string(i) + " must be a non-empty string (got " +
                             t.to_json() + ")");
    }
    std::string name(t.as_str());
    if (name.front() == '^') {
      regex_t re;
      if (regcomp(&re, name.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
        cfg.fail("topics", "item " + std::to_string(i) + " \"" + name +
                               "\" is not a valid regular expression (POSIX extended)");
      }
      regfree(&re);
      patterns_.push_back(std::move(name));
    } else {
      topics_.push_back(std::move(name));
    }
  }
  group_id_ = cfg.find_string("group_id");
  if (group_id_ && group_id_->empty()) cfg.fail("group_id", "must not be empty");
  start_ = static_cast<Start>(cfg.get_choice("start", {"committed", "earliest", "latest"}));
  format_ = static_cast<Format>(cfg.get_choice("value_format", {"bytes", "string", "json"}));
  on_error_ = static_cast<OnError>(cfg.get_choice("on_error", {"fail", "skip", "dead_letter"}));
  dead_letter_topic_ = cfg.find_string("dead_letter_topic");
  if (on_error_ == OnError::dead_letter && (!dead_letter_topic_ || dead_letter_topic_->empty())) {
    cfg.fail("dead_letter_topic", "is required when on_error = \"dead_letter\"");
  }
  if (on_error_ != OnError::dead_letter && dead_letter_topic_) {
    cfg.fail("dead_letter_topic", "is used only with on_error = \"dead_letter\"");
  }
  keys_ = cfg.get_bool("keys");
  if (batched_) {
    max_batch_size_ = cfg.get_int("max_batch_size");
    if (max_batch_size_ <= 0) {
      cfg.fail("max_batch_size", "must be positive (got " + std::to_string(max_batch_size_) + ")");
    }
  }
  poll_interval_ = cfg.get_duration("poll_interval_ms");
  if (poll_interval_.count() == 0) cfg.fail("poll_interval_ms", "must be positive");
  refresh_ = cfg.get_duration("refresh_ms");
  commit_interval_ = cfg.get_duration("commit_interval_ms");
  if (commit_interval_.count() == 0) cfg.fail("commit_interval_ms", "must be positive");
  end_grace_ = cfg.get_duration("end_grace_ms");
  close_timeout_ = cfg.get_duration("close_timeout_ms");
  stop_at_end_ = cfg.get_bool("stop_at_end");
  const int64_t held_kb = cfg.get_int("max_held_kbytes");
  if (held_kb < 0) cfg.fail("max_held_kbytes", "must not be negative");
  max_held_bytes_ = held_kb * 1024;
  if (!patterns_.empty() && !group_id_ && refresh_.count() == 0) {
    cfg.fail("refresh_ms", "must be positive when `topics` has a `^` pattern and no group_id");
  }

  const InitCheckpointInfo cp = checkpoint_info(init);
  checkpointing_known_ = cp.known;
  checkpointing_ = cp.checkpointing;
  link_key_ = TaskLink::key(cp.pipeline, init.task_index);

  brokers_ = resolve_brokers(cfg.get_string("brokers"));
  id_ = NodeRegistry::add(init.ctx, this);
  // The mock cluster creates topics on first mention with its own partition count; create
  // the named ones first with one partition, so a pipeline's order is the topic's order.
  for (const auto& t : topics_) create_embedded_topic(brokers_, t, 1);

  const std::string refresh_text = std::to_string(std::max<int64_t>(refresh_.count(), 1000));
  const char* reset = start_ == Start::latest ? "latest" : "earliest";
  // A consumer must not create the topics it reads (a typo would make a topic). The embedded
  // cluster has the topics made above and does not support the setting (it warns).
  const char* no_auto_create = brokers_.embedded() ? "true" : "false";
  ConfPtr conf = group_mode()
                     ? make_conf(cfg, brokers_.bootstrap, id_,
                                 {{"partition.assignment.strategy", "cooperative-sticky"},
                                  {"auto.offset.reset", reset},
                                  {"topic.metadata.refresh.interval.ms", refresh_text.c_str()},
                                  {"allow.auto.create.topics", no_auto_create},
                                  {"queued.max.messages.kbytes", k_queued_max_kbytes},
                                  {"queued.min.messages", k_queued_min_messages},
                                  {"fetch.wait.max.ms", brokers_.embedded() ? "10" : "500"}})
                     : make_conf(cfg, brokers_.bootstrap, id_,
                                 {{"auto.offset.reset", reset},
                                  {"queued.max.messages.kbytes", k_queued_max_kbytes},
                                  {"queued.min.messages", k_queued_min_messages},
                                  {"fetch.wait.max.ms", brokers_.embedded() ? "10" : "500"}});
  char err[512];
  rd_kafka_conf_set(conf.get(), "enable.partition.eof", "true", err, sizeof err);
  if (group_mode()) {
    rd_kafka_conf_set(conf.get(), "group.id", group_id_->c_str(), err, sizeof err);
    rd_kafka_conf_set(conf.get(), "enable.auto.commit", "false", err, sizeof err);
    rd_kafka_conf_set(conf.get(), "enable.auto.offset.store", "false", err, sizeof err);
    route_rebalances(conf.get());
    route_commits(conf.get());
  }
  rd_kafka_t* rk = new_client(RD_KAFKA_CONSUMER, std::move(conf), "consumer");
  shared_->handle = std::make_shared<Handle>(rk, brokers_.cluster);

  if (on_error_ == OnError::dead_letter) {
    ConfPtr pconf = make_conf(cfg, brokers_.bootstrap, id_, {{"enable.idempotence", "true"}});
    route_delivery_reports(pconf.get());
    dlq_ = new_client(RD_KAFKA_PRODUCER, std::move(pconf), "dead-letter producer");
  }
  TaskLink::add_source(link_key_, this);
}

KafkaSource::~KafkaSource() {
  TaskLink::remove_source(link_key_, this);
  static_cast<void>(close(ctx_));
  if (queue_) rd_kafka_queue_cb_event_enable(queue_.get(), nullptr, nullptr);
  if (main_queue_) rd_kafka_queue_cb_event_enable(main_queue_.get(), nullptr, nullptr);
  NodeRegistry::remove(id_);  // after this, no librdkafka thread reaches ctx_
  if (metadata_thread_.joinable()) metadata_thread_.join();
  for (auto& [name, rkt] : topic_handles_) rd_kafka_topic_destroy(rkt);
  queue_.reset();
  main_queue_.reset();
  if (dlq_ != nullptr) {
    rd_kafka_purge(dlq_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_destroy(dlq_);
  }
  // The client itself goes with the last wrapped payload (Shared::handle).
}

Status KafkaSource::start(Context ctx) {
  if (group_mode()) {
    if (rd_kafka_resp_err_t e = rd_kafka_poll_set_consumer(rk()); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return sdk::internal_error(std::string("from_kafka: poll_set_consumer: ") +
                                 rd_kafka_err2str(e));
    }
    queue_.reset(rd_kafka_queue_get_consumer(rk()));
    PartitionListPtr subs(
        rd_kafka_topic_partition_list_new(static_cast<int>(topics_.size() + patterns_.size())));
    for (const auto& t : topics_) {
      rd_kafka_topic_partition_list_add(subs.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
    }
    for (const auto& p : patterns_) {
      rd_kafka_topic_partition_list_add(subs.get(), p.c_str(), RD_KAFKA_PARTITION_UA);
    }
    if (rd_kafka_resp_err_t e = rd_kafka_subscribe(rk(), subs.get());
        e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return sdk::invalid_argument(std::string("from_kafka: cannot subscribe: ") +
                                   rd_kafka_err2str(e));
    }
  } else {
    queue_.reset(rd_kafka_queue_new(rk()));
    main_queue_.reset(rd_kafka_queue_get_main(rk()));
    rd_kafka_queue_cb_event_enable(main_queue_.get(), &wake_from_queue_event, opaque_of(id_));
    request_metadata();
  }
  rd_kafka_queue_cb_event_enable(queue_.get(), &wake_from_queue_event, opaque_of(id_));
  SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_poll_timer, poll_interval_));
  // With checkpoints, offsets are committed only in checkpoint_commit.
  if (group_mode() && !checkpointing_) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_commit_timer, commit_interval_));
  }
  if (!group_mode() && refresh_.count() > 0) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_refresh_timer, refresh_));
  }
  return {};
}

// ---------------------------------------------------------------------------
// Events from librdkafka

void KafkaSource::on_client_error(rd_kafka_t* rk, int err, const char* reason) {
  const auto code = static_cast<rd_kafka_resp_err_t>(err);
  std::string msg = std::string("Kafka ") + rd_kafka_name(rk) + " error " +
                    rd_kafka_err2name(code) + ": " + reason;
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_fatal_error(rk, fatal, sizeof fatal);
    if (failure_.is_ok()) failure_ = sdk::internal_error("fatal " + msg + ": " + fatal);
    return;
  }
  if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__TRANSPORT ||
      code == RD_KAFKA_RESP_ERR__RESOLVE) {
    msg += " (brokers \"" + brokers_.bootstrap + "\"; librdkafka keeps retrying with backoff)";
  }
  ctx_.log_error(msg);
}

Status KafkaSource::on_event_message(const rd_kafka_message_t* m) {
  const std::string topic = m->rkt != nullptr ? rd_kafka_topic_name(m->rkt) : "";
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    const TopicPartition tp{topic, m->partition};
    if (assigned_.count(tp) != 0) at_eof_[tp] = std::max<int64_t>(m->offset, 0);
    return {};
  }
  const std::string reason = rd_kafka_message_errstr(m);
  if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
      m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC) {
    // Only a topic named in `topics` must exist; patterns wait for matching topics.
    if (std::find(topics_.begin(), topics_.end(), topic) != topics_.end()) {
      return sdk::not_found("from_kafka: topic '" + topic + "' does not exist on \"" +
                            brokers_.bootstrap + "\" (" + reason + ")");
    }
  }
  if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_fatal_error(rk(), fatal, sizeof fatal);
    return sdk::internal_error(std::string("from_kafka: fatal consumer error: ") + fatal);
  }
  ctx_.log_warn("consumer error " + std::string(rd_kafka_err2name(m->err)) +
                (topic.empty() ? "" : " on " + tp_name(topic, m->partition)) + ": " + reason);
  return {};
}

ssize_t KafkaSource::next_messages(rd_kafka_message_t** out, size_t size) {
  // Group mode: queue_ is the consumer queue (poll_set_consumer), which also serves the
  // rebalance and commit callbacks. Manual mode: errors arrive on the main queue.
  if (!group_mode()) rd_kafka_poll(rk(), 0);
  const ssize_t n = rd_kafka_consume_batch_queue(queue_.get(), 0, out, size);
  return std::max<ssize_t>(n, 0);
}

// ---------------------------------------------------------------------------
// Polling

Result<Value> KafkaSource::decode_value(rd_kafka_message_t* m, bool& owns_message) {
  if (m->payload == nullptr) return Value();  // a tombstone
  const auto* data = static_cast<const char*>(m->payload);
  switch (format_) {
    case Format::string:
      // Strings are valid UTF-8 (docs/ARCHITECTURE.md): another payload does not decode.
      if (!sdk::valid_utf8({data, m->len})) {
        return sdk::invalid_argument(
            "value is not valid UTF-8 (value_format = \"string\"; \"bytes\" takes any payload)");
      }
      return Value::string({data, m->len});
    case Format::json: {
      Result<Value> v = sdk::parse_json({data, m->len});
      if (!v.is_ok()) return sdk::invalid_argument("value is not valid JSON");
      return v;
    }
    case Format::bytes: break;
  }
  const auto size = static_cast<int64_t>(m->len);
  // A small payload is copied: one allocation and a short memcpy cost less than wrapping
  // (a HeldMessage, the wrapping block, two atomic updates and a release callback), and the
  // librdkafka message (with its share of the fetch buffer) is freed at once.
  if (size <= k_copy_max_bytes || shared_->held_bytes.load() + size > max_held_bytes_) {
    return Value::bytes(data, m->len);
  }
  shared_->held_bytes.fetch_add(size);
  auto* held = new HeldMessage{shared_, m, size};
  owns_message = false;
  return Value::adopt(sdk::host().bytes_wrap(data, m->len, &release_held, held));
}

sl_message KafkaSource::convert_bytes(rd_kafka_message_t* m) {
  sl_message out{};
  out.key = m->key == nullptr ? sl_null() : sdk::host().bytes_create(m->key, m->key_len);
  rd_kafka_headers_t* hdrs = nullptr;
  out.headers = rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR
                    ? headers_to_value(hdrs).release()
                    : sl_null();
  rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t ts_ms = rd_kafka_message_timestamp(m, &ts_type);
  out.timestamp_ns = ts_type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts_ms >= 0 ? ts_ms * 1'000'000
                                                                               : SL_NO_TIMESTAMP;
  bool owns = true;                             // false once a wrapped value took the message
  Result<Value> value = decode_value(m, owns);  // bytes: never fails
  out.value = value.is_ok() ? value->release() : sl_null();
  if (owns) rd_kafka_message_destroy(m);
  return out;
}

Result<std::optional<sl_message>> KafkaSource::convert(Context /*ctx*/, rd_kafka_message_t* m) {
  bool owns = true;  // false once a wrapped value took the message
  struct Destroy {
    rd_kafka_message_t* m;
    bool* owns;
    ~Destroy() {
      if (*owns) rd_kafka_message_destroy(m);
    }
  } destroy{m, &owns};

  const char* topic = rd_kafka_topic_name(m->rkt);
  Value key = m->key == nullptr ? Value() : Value::bytes(m->key, m->key_len);
  rd_kafka_headers_t* hdrs = nullptr;
  Value headers;
  if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    headers = headers_to_value(hdrs);
  }
  rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t ts_ms = rd_kafka_message_timestamp(m, &ts_type);
  const bool has_ts = ts_type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts_ms >= 0;

  Result<Value> value = decode_value(m, owns);
  if (!value.is_ok()) {
    const std::string reason = value.status().message() + " (" + tp_name(topic, m->partition) +
                               " offset " + std::to_string(m->offset) + ")";
    mark_processed({topic, m->partition}, m->offset);  // handled: never read again
    switch (on_error_) {
      case OnError::fail: return sdk::invalid_argument("from_kafka: " + reason);
      case OnError::skip:
        ctx_.log_warn("skipped a message: " + reason);
        return std::optional<sl_message>();
      case OnError::dead_letter:
        SLUICE_SDK_RETURN_IF_ERROR(dead_letter(m, reason));
        return std::optional<sl_message>();
    }
  }
  sl_message out{};
  if (keys_) {
    out.value = Value::object({{"key", key},
                               {"value", std::move(*value)},
                               {"topic", Value::string(topic)},
                               {"partition", Value::integer(m->partition)},
                               {"offset", Value::integer(m->offset)},
                               {"timestamp", has_ts ? Value::integer(ts_ms) : Value()},
                               {"headers", headers}})
                    .release();
  } else {
    out.value = value->release();
  }
  out.key = key.release();
  out.headers = headers.release();
  out.timestamp_ns = has_ts ? ts_ms * 1'000'000 : SL_NO_TIMESTAMP;
  return std::optional<sl_message>(out);
}

Status KafkaSource::dead_letter(const rd_kafka_message_t* m, const std::string& reason) {
  rd_kafka_headers_t* src = nullptr;
  HeadersPtr hdrs(rd_kafka_message_headers(m, &src) == RD_KAFKA_RESP_ERR_NO_ERROR
                      ? rd_kafka_headers_copy(src)
                      : rd_kafka_headers_new(2));
  rd_kafka_header_add(hdrs.get(), "sluice.error", -1, reason.data(),
                      static_cast<ssize_t>(reason.size()));
  const std::string_view node = ctx_.node_id();
  rd_kafka_header_add(hdrs.get(), "sluice.error.node", -1, node.data(),
                      static_cast<ssize_t>(node.size()));
  std::array<rd_kafka_vu_t, 5> vu{};
  vu[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  vu[0].u.cstr = dead_letter_topic_->c_str();
  vu[1].vtype = RD_KAFKA_VTYPE_VALUE;
  vu[1].u.mem = {m->payload, m->len};
  vu[2].vtype = RD_KAFKA_VTYPE_KEY;
  vu[2].u.mem = {m->key, m->key_len};
  vu[3].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vu[3].u.i = RD_KAFKA_MSG_F_COPY;
  vu[4].vtype = RD_KAFKA_VTYPE_HEADERS;
  vu[4].u.headers = hdrs.get();
  ErrorPtr e(rd_kafka_produceva(dlq_, vu.data(), vu.size()));
  if (e) {
    return unavailable("from_kafka: cannot produce to dead-letter topic '" + *dead_letter_topic_ +
                       "': " + rd_kafka_error_string(e.get()));
  }
  static_cast<void>(hdrs.release());  // librdkafka owns them now
  return {};
}

void KafkaSource::mark_processed(const TopicPartition& tp, int64_t offset) {
  // Only a message at or past the reported end means new data: the messages fetched before
  // the EOF event may be emitted after it was seen (same poll), and must not undo it.
  if (auto eof = at_eof_.find(tp);
      eof != at_eof_.end() && eof->second >= 0 && offset >= eof->second) {
    eof->second = -1;
    all_at_end_since_ns_ = -1;
  }
  int64_t& next = processed_[tp];
  next = std::max(next, offset + 1);
}

static std::string lag_labels(const std::pair<std::string, int32_t>& tp) {
  return "topic=" + tp.first + ",partition=" + std::to_string(tp.second);
}

void KafkaSource::report_lag(Context ctx) {
  const int64_t now = ctx.now_ns();
  if (lag_reported_ns_ >= 0 && now - lag_reported_ns_ < 1'000'000'000) return;
  lag_reported_ns_ = now;
  if (!shared_->handle) return;
  for (auto it = lag_reported_.begin(); it != lag_reported_.end();) {
    if (assigned_.count(*it) == 0) {
      ctx.gauge_remove("kafka_consumer_lag", lag_labels(*it));
      it = lag_reported_.erase(it);
    } else {
      ++it;
    }
  }
  for (const TopicPartition& tp : assigned_) {
    int64_t low = 0, high = 0;
    // Cached from the last fetch response: never blocks.
    if (rd_kafka_get_watermark_offsets(rk(), tp.first.c_str(), tp.second, &low, &high) !=
            RD_KAFKA_RESP_ERR_NO_ERROR ||
        high < 0) {
      continue;
    }
    // The next offset to process: what was emitted, else librdkafka's fetch position.
    int64_t next = -1;
    if (auto p = processed_.find(tp); p != processed_.end()) {
      next = p->second;
    } else {
      PartitionListPtr list(rd_kafka_topic_partition_list_new(1));
      rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second);
      if (rd_kafka_position(rk(), list.get()) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        next = list->elems[0].offset;
      }
    }
    if (next < 0) continue;  // no position yet (nothing fetched): lag unknown
    ctx.gauge_set("kafka_consumer_lag", lag_labels(tp),
                  static_cast<double>(std::max<int64_t>(high - next, 0)));
    lag_reported_.insert(tp);
  }
}

void KafkaSource::remove_lag(const TopicPartition& tp) {
  if (lag_reported_.erase(tp) > 0) ctx_.gauge_remove("kafka_consumer_lag", lag_labels(tp));
}

Result<SourceState> KafkaSource::poll(Context ctx, uint32_t budget) {
  if (done_) return SourceState::done;
  if (!failure_.is_ok()) return failure_;
  if (!group_mode()) SLUICE_SDK_RETURN_IF_ERROR(apply_metadata(ctx));
  if (dlq_ != nullptr) rd_kafka_poll(dlq_, 0);

  const size_t limit = batched_ ? static_cast<size_t>(std::max<uint32_t>(budget, 1)) *
                                      static_cast<size_t>(max_batch_size_)
                                : std::max<uint32_t>(budget, 1);
  // One librdkafka call per chunk rather than per message: each call takes the queue's
  // lock and (consumer) reads the clock for max.poll.interval.ms.
  std::vector<rd_kafka_message_t*>& msgs = poll_buffer_;
  msgs.clear();
  bool drained = false;
  Status st;
  while (st.is_ok() && failure_.is_ok() && msgs.size() < limit) {
    const size_t have = msgs.size();
    const size_t chunk = std::min<size_t>(limit - have, k_consume_chunk);
    msgs.resize(have + chunk);
    const ssize_t got = next_messages(msgs.data() + have, chunk);
    size_t kept = have;
    for (ssize_t i = 0; i < got; ++i) {
      rd_kafka_message_t* m = msgs[have + static_cast<size_t>(i)];
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        msgs[kept++] = m;
        continue;
      }
      // An error or EOF event: handled in queue order; a failure drops the rest (not emitted,
      // so not processed: read again after a restart).
      if (st.is_ok() && failure_.is_ok()) st = on_event_message(m);
      rd_kafka_message_destroy(m);
    }
    msgs.resize(kept);
    if (got < static_cast<ssize_t>(chunk)) {
      drained = true;
      break;
    }
  }
  if (!st.is_ok() || !failure_.is_ok()) {
    for (auto* m : msgs) rd_kafka_message_destroy(m);
    msgs.clear();
    return st.is_ok() ? failure_ : st;
  }

  if (batched_) {
    SLUICE_SDK_RETURN_IF_ERROR(emit_batched(ctx, msgs));
  } else if (!msgs.empty()) {
    std::vector<sl_message>& out = emit_buffer_;
    out.clear();
    out.reserve(msgs.size());
    // Positions as runs of one partition (the queue hands out each fetched partition's
    // messages together): one map update per run, not per message.
    std::vector<PositionRun>& runs = run_buffer_;
    runs.clear();
    auto release_out = [&] {
      for (sl_message& m : out) {
        Value::adopt(m.value);
        Value::adopt(m.key);
        Value::adopt(m.headers);
      }
      out.clear();
    };
    const bool plain = format_ == Format::bytes && !keys_;
    for (size_t i = 0; i < msgs.size(); ++i) {
      rd_kafka_message_t* m = msgs[i];
      if (!runs.empty() && runs.back().rkt == m->rkt && runs.back().partition == m->partition) {
        runs.back().last_offset = std::max(runs.back().last_offset, m->offset);
      } else {
        runs.push_back({m->rkt, m->partition, m->offset});
      }
      if (plain) {                        // bare bytes values: no decode failure, no on_error
        out.push_back(convert_bytes(m));  // takes m
        continue;
      }
      Result<std::optional<sl_message>> c = convert(ctx, m);  // takes m
      if (!c.is_ok()) {
        for (size_t j = i + 1; j < msgs.size(); ++j) rd_kafka_message_destroy(msgs[j]);
        st = c.status();
        break;
      }
      if (*c) out.push_back(**c);
    }
    msgs.clear();
    if (st.is_ok() && !out.empty()) st = ctx.emit(out);
    release_out();
    SLUICE_SDK_RETURN_IF_ERROR(st);
    // Emitted means processed: the host delivers depth-first, so every synchronous consumer
    // has handled these messages when emit returns.
    for (const PositionRun& r : runs)
      mark_processed({rd_kafka_topic_name(r.rkt), r.partition}, r.last_offset);
  }

  report_lag(ctx);
  if (!drained) return SourceState::more;
  if (stop_at_end_ && at_end(ctx)) {
    SLUICE_SDK_RETURN_IF_ERROR(close(ctx));
    done_ = true;
    return SourceState::done;
  }
  return SourceState::idle;
}

Status KafkaSource::emit_batched(Context ctx, std::vector<rd_kafka_message_t*>& msgs) {
  // Group by partition, keeping each partition's order; one element per partition per poll,
  // split in arrays of at most max_batch_size.
  std::map<TopicPartition, std::vector<rd_kafka_message_t*>> by_tp;
  std::vector<TopicPartition> order;
  for (rd_kafka_message_t* m : msgs) {
    TopicPartition tp{rd_kafka_topic_name(m->rkt), m->partition};
    auto [it, inserted] = by_tp.try_emplace(tp);
    if (inserted) order.push_back(tp);
    it->second.push_back(m);
  }
  msgs.clear();
  Status st;
  for (const TopicPartition& tp : order) {
    std::vector<rd_kafka_message_t*>& list = by_tp[tp];
    for (size_t begin = 0; begin < list.size(); begin += static_cast<size_t>(max_batch_size_)) {
      const size_t end = std::min(list.size(), begin + static_cast<size_t>(max_batch_size_));
      if (!st.is_ok()) {
        for (size_t i = begin; i < end; ++i) rd_kafka_message_destroy(list[i]);
        continue;
      }
      std::vector<Value> items;
      int64_t last_offset = -1;
      int64_t ts = SL_NO_TIMESTAMP;
      for (size_t i = begin; i < end; ++i) {
        last_offset = list[i]->offset;
        if (!st.is_ok()) {
          rd_kafka_message_destroy(list[i]);
          continue;
        }
        Result<std::optional<sl_message>> c = convert(ctx, list[i]);
        if (!c.is_ok()) {
          st = c.status();
          continue;
        }
        if (!*c) continue;
        items.push_back(Value::adopt((*c)->value));
        Value::adopt((*c)->key);
        Value::adopt((*c)->headers);
        ts = (*c)->timestamp_ns;
      }
      if (!st.is_ok() || items.empty()) continue;
      const Value array = Value::array(std::span<const Value>(items));
      sl_message out{};
      out.value = array.raw();
      out.key = sl_null();
      out.headers = sl_null();
      out.timestamp_ns = ts;
      st = ctx.emit(out);
      if (st.is_ok()) mark_processed(tp, last_offset);
    }
  }
  return st;
}

// ---------------------------------------------------------------------------
// End of the stream

bool KafkaSource::at_end(Context ctx) {
  if (assigned_.empty()) return false;
  if (!group_mode() && !metadata_loaded_) return false;
  for (const auto& tp : assigned_) {
    auto it = at_eof_.find(tp);
    if (it == at_eof_.end() || it->second < 0) return false;
  }
  const int64_t now = ctx.now_ns();
  if (all_at_end_since_ns_ < 0) all_at_end_since_ns_ = now;
  const int64_t grace_ns = end_grace_.count() * 1'000'000;
  if (now - all_at_end_since_ns_ >= grace_ns) return true;
  static_cast<void>(ctx.timer_start(
      k_grace_timer, std::chrono::nanoseconds(grace_ns - (now - all_at_end_since_ns_))));
  return false;
}

Status KafkaSource::on_timer(Context ctx, uint64_t timer_id) {
  switch (timer_id) {
    case k_poll_timer:
      ctx.wake();
      if (!closed_) report_lag(ctx);  // also while back-pressure keeps poll() from running
      return ctx.timer_start(k_poll_timer, poll_interval_);
    case k_commit_timer:
      if (closed_ || checkpointing_) return {};
      SLUICE_SDK_RETURN_IF_ERROR(commit(true));
      return ctx.timer_start(k_commit_timer, commit_interval_);
    case k_refresh_timer:
      if (closed_) return {};
      request_metadata();
      return ctx.timer_start(k_refresh_timer, refresh_);
    case k_grace_timer: ctx.wake(); return {};
    default: return {};
  }
}

Status KafkaSource::finish(Context ctx) { return close(ctx); }

void KafkaSource::stop(Context ctx) {
  const Status st = close(ctx);
  if (!st.is_ok()) ctx.log_error(st.message());
}

Status KafkaSource::close(Context ctx) {
  if (closed_ || !shared_->handle) return {};
  closed_ = true;
  while (!lag_reported_.empty()) remove_lag(*lag_reported_.begin());
  ctx.timer_cancel(k_poll_timer);
  ctx.timer_cancel(k_commit_timer);
  ctx.timer_cancel(k_refresh_timer);
  ctx.timer_cancel(k_grace_timer);
  const auto deadline = std::chrono::steady_clock::now() + close_timeout_;
  Status st;
  if (group_mode()) {
    // With checkpoints the group's offsets move only with a stored checkpoint: what was
    // processed after the last one is read again by the next run (or the next owner).
    if (!checkpointing_) st = commit(false);
    // Leave the group within the bound: close through a queue we poll ourselves (the
    // revocation it triggers runs our rebalance callback, which commits nothing new).
    QueuePtr q(rd_kafka_queue_new(rk()));
    ErrorPtr e(rd_kafka_consumer_close_queue(rk(), q.get()));
    if (e) {
      ctx.log_warn(std::string("leaving the consumer group: ") + rd_kafka_error_string(e.get()));
    } else {
      while (rd_kafka_consumer_closed(rk()) == 0) {
        const int64_t left = ms_between(std::chrono::steady_clock::now(), deadline);
        if (left <= 0) {
          ctx.log_warn("leaving the consumer group took longer than close_timeout_ms");
          break;
        }
        rd_kafka_event_t* ev =
            rd_kafka_queue_poll(q.get(), static_cast<int>(std::min<int64_t>(left, 100)));
        if (ev == nullptr) continue;
        if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_REBALANCE) {
          on_rebalance(rd_kafka_event_error(ev), rd_kafka_event_topic_partition_list(ev));
        }
        rd_kafka_event_destroy(ev);
      }
    }
  } else {
    for (const auto& [topic, partition] : assigned_) {
      auto it = topic_handles_.find(topic);
      if (it != topic_handles_.end()) rd_kafka_consume_stop(it->second, partition);
    }
  }
  if (dlq_ != nullptr) {
    const int64_t left =
        std::max<int64_t>(ms_between(std::chrono::steady_clock::now(), deadline), 0);
    rd_kafka_flush(dlq_, static_cast<int>(left));
    if (rd_kafka_outq_len(dlq_) > 0 && st.is_ok()) {
      st = unavailable("from_kafka: " + std::to_string(rd_kafka_outq_len(dlq_)) +
                       " dead-letter messages were not delivered within close_timeout_ms");
    }
    if (!failure_.is_ok() && st.is_ok()) st = failure_;
  }
  return st;
}

}  // namespace sluice::kafka

namespace sluice::kafka {

// ---------------------------------------------------------------------------
// Group mode: rebalances and commits

void KafkaSource::on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk()), "COOPERATIVE") == 0;
  all_at_end_since_ns_ = -1;
  std::string names;
  for (int i = 0; parts != nullptr && i < parts->cnt; ++i) {
    names +=
        (names.empty() ? "" : ", ") + tp_name(parts->elems[i].topic, parts->elems[i].partition);
  }
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    for (int i = 0; i < parts->cnt; ++i) {
      rd_kafka_topic_partition_t& p = parts->elems[i];
      const TopicPartition tp{p.topic, p.partition};
      // start applies to the first assignment in this process; a partition that comes back
      // after a rebalance resumes from the group's committed offset.
      if (seen_.insert(tp).second) {
        if (auto r = restored_.find(tp); r != restored_.end()) {
          // The checkpoint's position wins over `start` and over the group's offset.
          p.offset = r->second;
          processed_[tp] = r->second;
          restored_.erase(r);
        } else {
          if (start_ == Start::earliest) p.offset = RD_KAFKA_OFFSET_BEGINNING;
          if (start_ == Start::latest) p.offset = RD_KAFKA_OFFSET_END;
        }
      }
      assigned_.insert(tp);
      at_eof_[tp] = -1;
    }
    ctx_.log_info("assigned: " + names);
    if (cooperative) {
      ErrorPtr e(rd_kafka_incremental_assign(rk(), parts));
      if (e && failure_.is_ok()) {
        failure_ = sdk::internal_error(std::string("from_kafka: cannot take the assignment: ") +
                                       rd_kafka_error_string(e.get()));
      }
    } else if (rd_kafka_resp_err_t e = rd_kafka_assign(rk(), parts);
               e != RD_KAFKA_RESP_ERR_NO_ERROR && failure_.is_ok()) {
      failure_ = sdk::internal_error(std::string("from_kafka: cannot take the assignment: ") +
                                     rd_kafka_err2str(e));
    }
    NodeRegistry::wake(id_);
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    if (rd_kafka_assignment_lost(rk()) != 0) {
      ctx_.log_warn("assignment lost (offsets not committed, another member may re-read): " +
                    names);
    } else if (checkpointing_) {
      // With checkpoints nothing is committed here: the group's offsets are those of the
      // last completed checkpoint, and the next owner re-reads what came after them
      // (at-least-once; see docs/KAFKA.md).
      ctx_.log_info(
          "revoked with checkpoints: the next owner resumes from the last "
          "checkpoint's offsets: " +
          names);
    } else {
      const Status st = commit(false, parts);
      if (!st.is_ok()) ctx_.log_warn(st.message());
    }
    for (int i = 0; i < parts->cnt; ++i) {
      const TopicPartition tp{parts->elems[i].topic, parts->elems[i].partition};
      remove_lag(tp);
      assigned_.erase(tp);
      at_eof_.erase(tp);
      processed_.erase(tp);
      committed_.erase(tp);
    }
    ctx_.log_info("revoked: " + names);
    if (cooperative) {
      ErrorPtr e(rd_kafka_incremental_unassign(rk(), parts));
    } else {
      rd_kafka_assign(rk(), nullptr);
    }
    return;
  }
  ctx_.log_error(std::string("rebalance failed: ") + rd_kafka_err2str(err));
  rd_kafka_assign(rk(), nullptr);
}

void KafkaSource::on_commit(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* offsets) {
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;  // nothing to commit
  for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = offsets->elems[i];
    const rd_kafka_resp_err_t e = p.err != RD_KAFKA_RESP_ERR_NO_ERROR ? p.err : err;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    // Forget what we believed committed, so the next commit sends it again.
    committed_.erase({p.topic, p.partition});
    ctx_.log_warn("offset commit failed for " + tp_name(p.topic, p.partition) +
                  " (will retry): " + rd_kafka_err2str(e));
  }
}

Status KafkaSource::commit(bool async, const rd_kafka_topic_partition_list_t* only) {
  return commit_positions(processed_, async, only);
}

Status KafkaSource::commit_positions(const std::map<TopicPartition, int64_t>& positions, bool async,
                                     const rd_kafka_topic_partition_list_t* only) {
  if (!group_mode() || positions.empty()) return {};
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(positions.size())));
  for (const auto& [tp, next] : positions) {
    if (assigned_.count(tp) == 0) continue;  // revoked meanwhile: no longer ours to commit
    if (only != nullptr &&
        rd_kafka_topic_partition_list_find(only, tp.first.c_str(), tp.second) == nullptr) {
      continue;
    }
    auto c = committed_.find(tp);
    if (c != committed_.end() && c->second == next) continue;
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second)->offset = next;
  }
  if (list->cnt == 0) return {};
  if (async) {
    for (int i = 0; i < list->cnt; ++i) {
      committed_[{list->elems[i].topic, list->elems[i].partition}] = list->elems[i].offset;
    }
    const rd_kafka_resp_err_t e = rd_kafka_commit(rk(), list.get(), 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) on_commit(e, list.get());
    return {};
  }
  // Synchronous, but bounded: the result comes back on a queue we poll with a deadline.
  QueuePtr q(rd_kafka_queue_new(rk()));
  const rd_kafka_resp_err_t e = rd_kafka_commit_queue(rk(), list.get(), q.get(), nullptr, nullptr);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return unavailable(std::string("from_kafka: cannot commit offsets: ") + rd_kafka_err2str(e));
  }
  rd_kafka_event_t* ev =
      rd_kafka_queue_poll(q.get(), static_cast<int>(std::max<int64_t>(close_timeout_.count(), 1)));
  if (ev == nullptr) {
    return unavailable("from_kafka: committing offsets took longer than close_timeout_ms (" +
                       std::to_string(close_timeout_.count()) + " ms)");
  }
  Status st;
  const rd_kafka_resp_err_t ev_err = rd_kafka_event_error(ev);
  const rd_kafka_topic_partition_list_t* result = rd_kafka_event_topic_partition_list(ev);
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    rd_kafka_resp_err_t pe = ev_err;
    if (result != nullptr) {
      const rd_kafka_topic_partition_t* r =
          rd_kafka_topic_partition_list_find(result, p.topic, p.partition);
      if (r != nullptr && r->err != RD_KAFKA_RESP_ERR_NO_ERROR) pe = r->err;
    }
    if (pe == RD_KAFKA_RESP_ERR_NO_ERROR) {
      committed_[{p.topic, p.partition}] = p.offset;
      ctx_.log_info("committed offset " + std::to_string(p.offset) + " for " +
                    tp_name(p.topic, p.partition));
    } else if (st.is_ok()) {
      st = unavailable("from_kafka: commit of offset " + std::to_string(p.offset) + " for " +
                       tp_name(p.topic, p.partition) + " failed: " + rd_kafka_err2str(pe));
    }
  }
  rd_kafka_event_destroy(ev);
  return st;
}

void KafkaSource::on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m) {
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR || !failure_.is_ok()) return;
  failure_ = unavailable("from_kafka: a message could not be delivered to dead-letter topic '" +
                         *dead_letter_topic_ + "': " + rd_kafka_err2str(m->err));
}

// ---------------------------------------------------------------------------
// Manual mode: metadata and partitions

bool KafkaSource::topic_wanted(const std::string& topic) const {
  if (std::find(topics_.begin(), topics_.end(), topic) != topics_.end()) return true;
  return std::any_of(patterns_.begin(), patterns_.end(),
                     [&](const std::string& p) { return posix_match(p, topic); });
}

void KafkaSource::request_metadata() {
  {
    std::lock_guard lock(metadata_mutex_);
    if (metadata_running_) return;
    metadata_running_ = true;
  }
  if (metadata_thread_.joinable()) metadata_thread_.join();  // finished: returns at once
  // rd_kafka_metadata blocks until the brokers answer: never on the executor.
  metadata_thread_ = std::thread([this, rk = rk(), id = id_] {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, k_metadata_timeout_ms);
    std::pair<Status, std::map<std::string, int32_t>> result;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      result.first =
          unavailable(std::string("cannot read the cluster's metadata: ") + rd_kafka_err2str(e));
    } else {
      for (int i = 0; i < md->topic_cnt; ++i) {
        const rd_kafka_metadata_topic_t& t = md->topics[i];
        if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) result.second[t.topic] = t.partition_cnt;
      }
      rd_kafka_metadata_destroy(md);
    }
    {
      std::lock_guard lock(metadata_mutex_);
      metadata_result_ = std::move(result);
      metadata_running_ = false;
    }
    NodeRegistry::wake(id);
  });
}

Status KafkaSource::apply_metadata(Context ctx) {
  std::optional<std::pair<Status, std::map<std::string, int32_t>>> result;
  {
    std::lock_guard lock(metadata_mutex_);
    result.swap(metadata_result_);
  }
  if (!result || closed_) return {};
  const auto& [status, topics] = *result;
  if (!status.is_ok()) {
    ctx.log_warn(status.message() + " (brokers \"" + brokers_.bootstrap + "\"); retrying");
    return ctx.timer_start(k_refresh_timer, std::chrono::milliseconds(1000));
  }
  for (const auto& t : topics_) {
    if (topics.count(t) == 0) {
      return sdk::not_found("from_kafka: topic '" + t + "' does not exist on \"" +
                            brokers_.bootstrap + "\"");
    }
  }
  std::string added;
  for (const auto& [topic, count] : topics) {
    if (!topic_wanted(topic)) continue;
    rd_kafka_topic_t*& rkt = topic_handles_[topic];
    if (rkt == nullptr) rkt = rd_kafka_topic_new(rk(), topic.c_str(), nullptr);
    if (rkt == nullptr) {
      return sdk::internal_error("from_kafka: cannot open topic '" + topic +
                                 "': " + rd_kafka_err2str(rd_kafka_last_error()));
    }
    for (int32_t p = 0; p < count; ++p) {
      const TopicPartition tp{topic, p};
      if (assigned_.count(tp) != 0) continue;
      int64_t offset = start_ == Start::latest ? RD_KAFKA_OFFSET_END : RD_KAFKA_OFFSET_BEGINNING;
      if (auto r = restored_.find(tp); r != restored_.end()) {
        offset = r->second;  // the checkpoint's position
        processed_[tp] = r->second;
        restored_.erase(r);
      }
      if (rd_kafka_consume_start_queue(rkt, p, offset, queue_.get()) != 0) {
        return sdk::internal_error("from_kafka: cannot start reading " + tp_name(topic, p) + ": " +
                                   rd_kafka_err2str(rd_kafka_last_error()));
      }
      assigned_.insert(tp);
      at_eof_[tp] = -1;
      all_at_end_since_ns_ = -1;
      added += (added.empty() ? "" : ", ") + tp_name(topic, p);
    }
  }
  if (!added.empty()) ctx.log_info("reading " + added);
  metadata_loaded_ = true;
  return {};
}

}  // namespace sluice::kafka

namespace sluice::kafka {

// ---------------------------------------------------------------------------
// Checkpoints: positions in the snapshot, seek on restore, commits only with a stored epoch

void KafkaSource::note_checkpointing(Context ctx) {
  if (checkpointing_) return;
  if (checkpointing_known_) return;  // the host said no: snapshot comes from `sluiced test`
  // An older host that does not say: the first snapshot/restore tells. Commits made before
  // it (commit_interval_ms) may be ahead of the first checkpoint (see docs/KAFKA.md).
  checkpointing_ = true;
  ctx.timer_cancel(k_commit_timer);
  ctx.log_info("checkpointing: offsets are committed only with stored checkpoints");
}

Result<Value> KafkaSource::snapshot(Context ctx) {
  note_checkpointing(ctx);
  std::vector<Value> items;
  items.reserve(processed_.size() + restored_.size());
  auto add = [&](const TopicPartition& tp, int64_t next) {
    items.push_back(
        Value::array({Value::string(tp.first), Value::integer(tp.second), Value::integer(next)}));
  };
  for (const auto& [tp, next] : processed_) add(tp, next);
  // Restored positions of partitions not assigned yet (metadata or the group's assignment
  // still to come) are carried forward: the operators' state counts everything before them.
  for (const auto& [tp, next] : restored_) add(tp, next);
  snapshot_ = processed_;
  return Value::object({{"group", group_id_ ? Value::string(*group_id_) : Value()},
                        {"positions", Value::array(std::span<const Value>(items))}});
}

Result<std::map<KafkaSource::TopicPartition, int64_t>> KafkaSource::parse_positions(
    ValueRef state) {
  std::optional<Value> list = state.is_object() ? state.get("positions") : std::nullopt;
  if (!list || !list->is_array()) {
    return sdk::invalid_argument("from_kafka: checkpoint state has no 'positions' array: " +
                                 state.to_json());
  }
  std::map<TopicPartition, int64_t> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Value item = (*list)[i];
    if (!item.is_array() || item.size() != 3 || !item[0].is_string() || !item[1].is_int() ||
        !item[2].is_int() || item[2].as_int() < 0) {
      return sdk::invalid_argument(
          "from_kafka: checkpoint position is not [topic, partition, offset]: " + item.to_json());
    }
    out[{std::string(item[0].as_str()), static_cast<int32_t>(item[1].as_int())}] = item[2].as_int();
  }
  return out;
}

Status KafkaSource::restore(Context ctx, ValueRef state) {
  note_checkpointing(ctx);
  SLUICE_SDK_ASSIGN_OR_RETURN(restored_, parse_positions(state));
  std::optional<Value> group = state.get("group");
  const std::string saved = group && group->is_string() ? std::string(group->as_str()) : "";
  if (saved != group_id_.value_or("")) {
    ctx.log_warn("the checkpoint was taken with group_id '" + saved + "', now '" +
                 group_id_.value_or("") + "': its positions are used all the same");
  }
  std::string text;
  for (const auto& [tp, next] : restored_) {
    text +=
        (text.empty() ? "" : ", ") + tp_name(tp.first, tp.second) + " at " + std::to_string(next);
  }
  ctx.log_info("restored positions: " + (text.empty() ? std::string("(none)") : text));
  return {};
}

Status KafkaSource::checkpoint_commit(Context ctx, uint64_t epoch) {
  note_checkpointing(ctx);
  // With an exactly-once to_kafka in the task, its transaction (committed just before, sinks
  // first) already holds these offsets: committing them again changes nothing on a real
  // cluster, and moves them where the broker ignores transactional offsets (librdkafka's
  // mock), so that checkpoint_recover sees them.
  if (!group_mode()) return {};
  const Status st = commit_positions(snapshot_, false, nullptr);
  if (!st.is_ok()) {
    // The checkpoint is stored: a restart seeks to its positions whatever the group says;
    // only the next owner after a rebalance may re-read more (at-least-once). Try again with
    // the next epoch.
    ctx.log_warn("checkpoint " + std::to_string(epoch) +
                 ": offsets not committed to the group (retried with the next): " + st.message());
  }
  return {};
}

Result<bool> KafkaSource::checkpoint_recover(Context ctx, uint64_t epoch, ValueRef state) {
  if (!group_mode()) return true;  // nothing is committed without a group
  SLUICE_SDK_ASSIGN_OR_RETURN(auto positions, parse_positions(state));
  if (positions.empty()) return true;
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(positions.size())));
  for (const auto& [tp, next] : positions) {
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second);
  }
  const rd_kafka_resp_err_t e = rd_kafka_committed(
      rk(), list.get(), static_cast<int>(std::max<int64_t>(close_timeout_.count(), 1)));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return unavailable("from_kafka: cannot read group '" + *group_id_ +
                       "''s committed offsets to decide whether checkpoint " +
                       std::to_string(epoch) + " was committed: " + rd_kafka_err2str(e));
  }
  bool committed = true;
  std::string diff;
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return unavailable("from_kafka: cannot read the committed offset of " +
                         tp_name(p.topic, p.partition) + ": " + rd_kafka_err2str(p.err));
    }
    const int64_t want = positions[{p.topic, p.partition}];
    if (p.offset != want) {
      committed = false;
      diff += (diff.empty() ? "" : ", ") + tp_name(p.topic, p.partition) + " committed " +
              std::to_string(p.offset) + " vs " + std::to_string(want);
    }
  }
  ctx.log_info("checkpoint " + std::to_string(epoch) + " was " +
               (committed ? "committed (group offsets equal its positions)"
                          : "not committed (" + diff + ")"));
  return committed;
}

rd_kafka_consumer_group_metadata_t* KafkaSource::group_metadata() {
  if (!group_mode() || !shared_->handle) return nullptr;
  return rd_kafka_consumer_group_metadata(rk());
}

PartitionListPtr KafkaSource::positions() {
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(processed_.size())));
  for (const auto& [tp, next] : processed_) {
    if (assigned_.count(tp) == 0) continue;
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second)->offset = next;
  }
  return list;
}

std::string KafkaSource::describe() const {
  return "node '" + std::string(ctx_.node_id()) + "'" +
         (group_id_ ? " (group '" + *group_id_ + "')" : "");
}

}  // namespace sluice::kafka
