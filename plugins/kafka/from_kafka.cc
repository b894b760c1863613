// from_kafka / from_kafka_batched: a librdkafka consumer polled on the task's executor.
//
// Two modes. With `group_id`: subscribe (cooperative-sticky), the rebalance callback assigns
// and, on revocation, commits what was processed. Without: the partitions of the topics are
// found in metadata (read on a helper thread, never on the executor) and started on a private
// queue with librdkafka's partition consumer API (the group API needs a group.id).
// In both, librdkafka's threads wake the source through a queue event; poll() never blocks.
//
// This file: the source's life: its options, the clients it builds, start, timers and close.
// The rest of KafkaSource: from_kafka_poll.cc (taking, converting and emitting messages),
// from_kafka_group.cc (group mode: rebalances and commits), from_kafka_manual.cc (manual mode:
// metadata and partitions), from_kafka_checkpoint.cc (positions in checkpoints).
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <regex.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace sluice::kafka {

using sdk::Config;
using sdk::Context;
using sdk::Status;
using sdk::Value;

namespace {

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

}  // namespace

// ---------------------------------------------------------------------------
// Construction and start

KafkaSource::Options KafkaSource::parse_options(const Config& cfg) {
  Options o;
  o.brokers = cfg.get_string("brokers");
  o.group_id = cfg.find_string("group_id");
  o.refresh = cfg.get_duration("refresh_ms");
  const Value topics = cfg.get_array("topics");
  if (topics.size() == 0) cfg.fail("topics", "must name at least one topic");
  for (size_t i = 0; i < topics.size(); ++i) {
    const Value t = topics[i];
    if (!t.is_string() || t.as_str().empty()) {
      cfg.fail("topics", "item " + std::to_string(i) + " must be a non-empty string (got " +
                             t.to_json() + ")");
    }
    std::string name(t.as_str());
    if (name.front() != '^') {
      o.topics.push_back(std::move(name));
      continue;
    }
    regex_t re;
    if (regcomp(&re, name.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
      cfg.fail("topics",
               "item " + std::to_string(i) + " is not a valid regular expression (POSIX extended)");
    }
    regfree(&re);
    if (!o.group_id && o.refresh.count() == 0) {
      cfg.fail("refresh_ms", "must be positive when `topics` has a `^` pattern and no group_id");
    }
    o.patterns.push_back(std::move(name));
  }
  o.on_error = static_cast<OnError>(cfg.get_choice("on_error", {"fail", "skip", "dead_letter"}));
  o.dead_letter_topic = cfg.find_string("dead_letter_topic");
  if (o.on_error == OnError::dead_letter &&
      (!o.dead_letter_topic || o.dead_letter_topic->empty())) {
    cfg.fail("dead_letter_topic", "is required when on_error = \"dead_letter\"");
  }
  if (o.on_error != OnError::dead_letter && o.dead_letter_topic) {
    cfg.fail("dead_letter_topic", "is used only with on_error = \"dead_letter\"");
  }
  // The k_params constraints check these before validate; an older host (ABI < 1.2) does not.
  if (o.group_id && o.group_id->empty()) cfg.fail("group_id", "must not be empty");
  o.start = static_cast<Start>(cfg.get_choice("start", {"committed", "earliest", "latest"}));
  o.format = static_cast<Format>(cfg.get_choice("value_format", {"bytes", "string", "json"}));
  o.keys = cfg.get_bool("keys");
  // Declared by from_kafka_batched only (the host refuses undeclared keys).
  if (const std::optional<int64_t> n = cfg.find_int("max_batch_size")) {
    if (*n <= 0) cfg.fail("max_batch_size", "must be positive (got " + std::to_string(*n) + ")");
    o.max_batch_size = *n;
  }
  o.poll_interval = cfg.get_duration("poll_interval_ms");
  if (o.poll_interval.count() == 0) cfg.fail("poll_interval_ms", "must be positive");
  o.commit_interval = cfg.get_duration("commit_interval_ms");
  if (o.commit_interval.count() == 0) cfg.fail("commit_interval_ms", "must be positive");
  o.end_grace = cfg.get_duration("end_grace_ms");
  o.close_timeout = cfg.get_duration("close_timeout_ms");
  o.stop_at_end = cfg.get_bool("stop_at_end");
  const int64_t held_kb = cfg.get_int("max_held_kbytes");
  if (held_kb < 0) cfg.fail("max_held_kbytes", "must not be negative");
  o.max_held_bytes = held_kb * 1024;
  // Declared by from_kafka only (from_kafka_batched emits arrays, which have no headers).
  o.origin_header = cfg.find_bool("origin_header").value_or(false);
  o.dedup_origin = cfg.find_bool("dedup_origin").value_or(false);
  return o;
}

void KafkaSource::validate(const Config& cfg) {
  static_cast<void>(parse_options(cfg));
  // The user's librdkafka properties, checked on a configuration object of their own.
  static_cast<void>(make_conf(cfg, "localhost:9092", 0, {}));
}

KafkaSource::KafkaSource(const sl_node_init& init, bool batched)
    : ctx_(init.ctx), batched_(batched), shared_(std::make_shared<Shared>()) {
  const Config cfg(init);
  opts_ = parse_options(cfg);

  const InitCheckpointInfo cp = checkpoint_info(init);
  checkpointing_known_ = cp.known;
  checkpointing_ = cp.checkpointing;
  link_key_ = TaskLink::key(cp.pipeline, init.task_index);

  brokers_ = resolve_brokers(opts_.brokers);
  id_ = NodeRegistry::add(init.ctx, this);
  // The mock cluster creates topics on first mention with its own partition count; create
  // the named ones first with one partition, so a pipeline's order is the topic's order.
  for (const auto& t : opts_.topics) create_embedded_topic(brokers_, t, 1);

  const std::string refresh_text = std::to_string(std::max<int64_t>(opts_.refresh.count(), 1000));
  const char* reset = opts_.start == Start::latest ? "latest" : "earliest";
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
    rd_kafka_conf_set(conf.get(), "group.id", opts_.group_id->c_str(), err, sizeof err);
    rd_kafka_conf_set(conf.get(), "enable.auto.commit", "false", err, sizeof err);
    rd_kafka_conf_set(conf.get(), "enable.auto.offset.store", "false", err, sizeof err);
    route_rebalances(conf.get());
    route_commits(conf.get());
  }
  rd_kafka_t* rk = new_client(RD_KAFKA_CONSUMER, std::move(conf), "consumer");
  shared_->handle = std::make_shared<Handle>(rk, brokers_.cluster);

  if (opts_.on_error == OnError::dead_letter) {
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
    PartitionListPtr subs(rd_kafka_topic_partition_list_new(
        static_cast<int>(opts_.topics.size() + opts_.patterns.size())));
    for (const auto& t : opts_.topics) {
      rd_kafka_topic_partition_list_add(subs.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
    }
    for (const auto& p : opts_.patterns) {
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
  SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_poll_timer, opts_.poll_interval));
  // With checkpoints, offsets are committed only in checkpoint_commit.
  if (group_mode() && !checkpointing_) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_commit_timer, opts_.commit_interval));
  }
  if (!group_mode() && opts_.refresh.count() > 0) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_refresh_timer, opts_.refresh));
  }
  return {};
}

// ---------------------------------------------------------------------------
// Events from librdkafka

void KafkaSource::on_client_error(rd_kafka_t* rk, int err, const char* reason) {
  Status st = client_error(ctx_, "", brokers_.bootstrap, rk, err, reason);
  if (!st.is_ok() && failure_.is_ok()) failure_ = std::move(st);
}

// ---------------------------------------------------------------------------
// Timers and the end

Status KafkaSource::on_timer(Context ctx, uint64_t timer_id) {
  switch (timer_id) {
    case k_poll_timer:
      ctx.wake();
      if (!closed_) report_lag(ctx);  // also while back-pressure keeps poll() from running
      return ctx.timer_start(k_poll_timer, opts_.poll_interval);
    case k_commit_timer:
      if (closed_ || checkpointing_) return {};
      SLUICE_SDK_RETURN_IF_ERROR(commit(true));
      return ctx.timer_start(k_commit_timer, opts_.commit_interval);
    case k_refresh_timer:
      if (closed_) return {};
      request_metadata();
      return ctx.timer_start(k_refresh_timer, opts_.refresh);
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
  const auto deadline = std::chrono::steady_clock::now() + opts_.close_timeout;
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
