// to_kafka: asynchronous production, delivery reports read on the task's executor.
#include "to_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

namespace sluice::kafka {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

std::string path_text(const std::vector<Value>& path) {
  std::string out;
  for (const Value& seg : path)
    out += (out.empty() ? "" : ".") + (seg.is_string() ? std::string(seg.as_str()) : seg.to_json());
  return out;
}

}  // namespace

std::string ToKafka::partitioner(const Config& cfg) {
  if (config_sets(cfg, "partitioner")) {
    cfg.fail("config",
             "entry 'partitioner' is managed by the plugin: set `partitioner` instead (default "
             "\"murmur2_random\", the Java producer's partitioning)");
  }
  std::string name = cfg.get_string("partitioner");
  const std::string_view choices(k_partitioners);
  for (size_t at = 0; at <= choices.size();) {
    const size_t bar = std::min(choices.find('|', at), choices.size());
    if (choices.substr(at, bar - at) == name) return name;
    at = bar + 1;
  }
  cfg.fail("partitioner",
           "must be one of " + std::string(choices) + " (got \"" + name.substr(0, 64) + "\")");
}

void ToKafka::validate(const Config& cfg) {
  if (std::optional<Value> key = cfg.find_value("key")) {
    std::vector<Value> path;
    if (key->is_array()) {
      for (size_t i = 0; i < key->size(); ++i) path.push_back((*key)[i]);
    } else {
      path.push_back(*key);
    }
    for (const Value& seg : path) {
      if (!seg.is_string() && !(seg.is_int() && seg.as_int() >= 0)) {
        cfg.fail("key",
                 "must be a field name (string), an array index (int >= 0) or an array of "
                 "those (got " +
                     key->to_json().substr(0, 120) + ")");
      }
    }
    if (path.empty()) cfg.fail("key", "must not be an empty path");
  }
  if (cfg.get_bool("exactly_once")) {
    if (!cfg.checkpointing()) {
      cfg.fail("exactly_once",
               "needs a [checkpoint] table: each transaction is committed with a checkpoint");
    }
    if (config_sets(cfg, "transactional.id")) {
      cfg.fail("config", "transactional.id is set through `transactional_id`");
    }
    if (cfg.get_duration("transaction_timeout_ms").count() < 1000) {
      cfg.fail("transaction_timeout_ms", "must be >= 1000");
    }
  } else if (cfg.find_string("transactional_id")) {
    cfg.fail("transactional_id", "is used only with exactly_once = true");
  }
  const std::string part = partitioner(cfg);
  static_cast<void>(make_conf(cfg, "localhost:9092", 0,
                              {{"enable.idempotence", "true"}, {"partitioner", part.c_str()}}));
}

ToKafka::ToKafka(const sl_node_init& init) : ctx_(init.ctx) {
  const Config cfg(init);
  topic_ = cfg.get_string("topic");
  if (topic_.empty()) cfg.fail("topic", "must not be empty");
  if (std::optional<Value> key = cfg.find_value("key")) {
    key_from_value_ = true;
    if (key->is_array()) {
      for (size_t i = 0; i < key->size(); ++i) key_path_.push_back((*key)[i]);
    } else {
      key_path_.push_back(*key);
    }
    for (const Value& seg : key_path_) {
      if (!seg.is_string() && !(seg.is_int() && seg.as_int() >= 0)) {
        cfg.fail("key",
                 "must be a field name (string), an array index (int >= 0) or an array of "
                 "those (got " +
                     key->to_json() + ")");
      }
    }
    if (key_path_.empty()) cfg.fail("key", "must not be an empty path");
  }
  partitioner_ = partitioner(cfg);
  json_values_ = cfg.get_choice("value_format", {"auto", "json"}) == 1;
  flush_timeout_ = cfg.get_duration("flush_timeout_ms");
  poll_interval_ = cfg.get_duration("poll_interval_ms");
  if (poll_interval_.count() == 0) cfg.fail("poll_interval_ms", "must be positive");

  exactly_once_ = cfg.get_bool("exactly_once");
  txn_timeout_ = cfg.get_duration("transaction_timeout_ms");
  const InitCheckpointInfo cp = checkpoint_info(init);
  link_key_ = TaskLink::key(cp.pipeline, init.task_index);
  if (exactly_once_) {
    if (cp.known && !cp.checkpointing) {
      cfg.fail("exactly_once",
               "needs a [checkpoint] table: each transaction is committed with a checkpoint");
    }
    if (config_sets(cfg, "transactional.id")) {
      cfg.fail("config", "transactional.id is set through `transactional_id`");
    }
    if (txn_timeout_.count() < 1000) cfg.fail("transaction_timeout_ms", "must be >= 1000");
    const std::string node(Context(init.ctx).node_id());
    transactional_id_ =
        cfg.find_string("transactional_id")
            .value_or("sluice-" + (cp.pipeline.empty() ? std::string() : cp.pipeline + "-") +
                      node) +
        "-" + std::to_string(init.task_index);
  } else if (cfg.find_string("transactional_id")) {
    cfg.fail("transactional_id", "is used only with exactly_once = true");
  }

  brokers_ = resolve_brokers(cfg.get_string("brokers"));
  create_embedded_topic(brokers_, topic_, 1);
  id_ = NodeRegistry::add(init.ctx, this);
  // `partitioner` is a topic property: set on the global conf it becomes the default topic
  // conf that rd_kafka_topic_new(..., nullptr) below uses.
  ConfPtr conf = make_conf(cfg, brokers_.bootstrap, id_,
                           {{"enable.idempotence", "true"}, {"partitioner", partitioner_.c_str()}});
  if (exactly_once_) {
    char err[512];
    const std::string timeout = std::to_string(txn_timeout_.count());
    if (rd_kafka_conf_set(conf.get(), "transactional.id", transactional_id_.c_str(), err,
                          sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf.get(), "transaction.timeout.ms", timeout.c_str(), err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
      NodeRegistry::remove(id_);
      cfg.fail("exactly_once",
               std::string("librdkafka refuses the transactional settings: ") + err);
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf.get(), &ToKafka::delivery_report);
  rk_ = new_client(RD_KAFKA_PRODUCER, std::move(conf), "producer");
  rkt_ = rd_kafka_topic_new(rk_, topic_.c_str(), nullptr);
  if (rkt_ == nullptr) {
    rd_kafka_destroy(rk_);
    NodeRegistry::remove(id_);
    cfg.fail("topic",
             std::string("is refused by librdkafka: ") + rd_kafka_err2str(rd_kafka_last_error()));
  }
  if (exactly_once_ && !TaskLink::claim_transactions(link_key_, this)) {
    rd_kafka_topic_destroy(rkt_);
    rd_kafka_destroy(rk_);
    NodeRegistry::remove(id_);
    cfg.fail("exactly_once",
             "another to_kafka with exactly_once = true is in this pipeline: at most one may "
             "be (the task's input offsets go into one transaction)");
  }
}

ToKafka::~ToKafka() {
  if (exactly_once_) TaskLink::release_transactions(link_key_, this);
  if (main_queue_) rd_kafka_queue_cb_event_enable(main_queue_.get(), nullptr, nullptr);
  main_queue_.reset();
  if (rk_ != nullptr) {
    // Whatever is still queued will not go out (stop/finish flushed what they could): purge
    // it and serve the purge reports so that every Record is freed.
    stopped_ = true;
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk_, 0);
    if (rkt_ != nullptr) rd_kafka_topic_destroy(rkt_);
    rd_kafka_destroy(rk_);
  }
  NodeRegistry::remove(id_);
}

Status ToKafka::start(Context ctx) {
  main_queue_.reset(rd_kafka_queue_get_main(rk_));
  rd_kafka_queue_cb_event_enable(main_queue_.get(), &post_from_queue_event,
                                 reinterpret_cast<void*>(static_cast<uintptr_t>(id_)));
  if (exactly_once_) {
    // Blocks the executor once at start (bounded): registers the transactional.id and fences
    // any older producer with it (aborting the transaction a crashed run left open).
    ErrorPtr e(rd_kafka_init_transactions(rk_, static_cast<int>(flush_timeout_.count())));
    if (e) return txn_error("initialising transactions", e.get());
    ctx.log_info("transactions on (transactional.id '" + transactional_id_ + "')");
  }
  return ctx.timer_start(k_poll_timer, poll_interval_);
}

void ToKafka::on_client_error(rd_kafka_t* rk, int err, const char* reason) {
  Status st = client_error(ctx_, "to_kafka: ", brokers_.bootstrap, rk, err, reason);
  if (!st.is_ok() && failure_.is_ok()) failure_ = std::move(st);
}

void ToKafka::delivery_report(rd_kafka_t* rk, const rd_kafka_message_t* m, void* /*opaque*/) {
  const auto bits = reinterpret_cast<uintptr_t>(m->_private);
  if ((bits & 1U) != 0) {
    reinterpret_cast<ToKafka*>(bits & ~uintptr_t{1})->on_delivery(rk, m);
    return;
  }
  const std::unique_ptr<Record> rec(reinterpret_cast<Record*>(bits));
  if (rec) rec->owner->on_delivery(rk, m);
}

void ToKafka::on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m) {
  --in_flight_;
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR || stopped_ || !failure_.is_ok()) return;
  failure_ = unavailable("to_kafka: delivery to topic '" + topic_ + "' failed: " +
                         rd_kafka_err2name(m->err) + ": " + rd_kafka_err2str(m->err));
}

void ToKafka::on_posted() {
  rd_kafka_poll(rk_, 0);
  const Status st = drain_pending(ctx_);
  if (!st.is_ok() && failure_.is_ok()) failure_ = st;
  maybe_ready();
}

Result<ToKafka::Record> ToKafka::make_record(const sl_message& m, bool hold) const {
  Record rec;
  rec.owner = const_cast<ToKafka*>(this);
  rec.held = hold;
  // Strings and bytes are viewed in place unless the record must outlive process_one.
  auto bytes_of = [hold](ValueRef v, Value& keep) -> std::string_view {
    if (!hold && (v.is_string() || v.is_bytes())) return v.as_str();
    return encode_bytes(v, keep);
  };
  if (json_values_) {
    rec.payload = ValueRef(m.value).json_dump();
    rec.bytes = rec.payload.as_str();
  } else {
    rec.bytes = bytes_of(ValueRef(m.value), rec.payload);
  }
  if (key_from_value_) {
    Value at = Value::borrow(m.value);
    for (const Value& seg : key_path_) {
      std::optional<Value> next;
      if (seg.is_string() && at.is_object()) {
        next = at.get(seg.as_str());
      } else if (seg.is_int() && at.is_array() && static_cast<size_t>(seg.as_int()) < at.size()) {
        next = at[static_cast<size_t>(seg.as_int())];
      }
      if (!next) {
        return sdk::invalid_argument("to_kafka: the element has no key at path " +
                                     path_text(key_path_) + ": " + ValueRef(m.value).to_json());
      }
      at = std::move(*next);
    }
    // A null field is no key, as a null message key is (not the text "null"): such a record
    // is partitioned like any unkeyed one.
    if (!at.is_null()) {
      rec.key = encode_bytes(at, rec.key_keep);
      rec.has_key = true;
    }
  } else if (!ValueRef(m.key).is_null()) {
    rec.key = bytes_of(ValueRef(m.key), rec.key_keep);
    rec.has_key = true;
  }
  if (hold) {
    rec.headers = Value::borrow(m.headers);
    rec.headers_ref = rec.headers.raw();
  } else {
    rec.headers_ref = m.headers;
  }
  if (m.timestamp_ns != SL_NO_TIMESTAMP) rec.timestamp_ms = m.timestamp_ns / 1'000'000;
  return rec;
}

Result<bool> ToKafka::produce_va(std::string_view value, bool copy,
                                 std::optional<std::string_view> key, HeadersPtr& headers,
                                 int64_t timestamp_ms, void* opaque) {
  std::array<rd_kafka_vu_t, 7> vu{};
  size_t n = 0;
  vu[n].vtype = RD_KAFKA_VTYPE_RKT;
  vu[n++].u.rkt = rkt_;
  vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
  vu[n].u.mem.ptr = const_cast<char*>(value.data());  // copied, or borrowed until the report
  vu[n++].u.mem.size = value.size();
  if (copy) {
    vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
    vu[n++].u.i = RD_KAFKA_MSG_F_COPY;
  }
  if (key) {
    vu[n].vtype = RD_KAFKA_VTYPE_KEY;  // librdkafka copies keys
    vu[n].u.mem.ptr = const_cast<char*>(key->data());
    vu[n++].u.mem.size = key->size();
  }
  if (headers) {
    vu[n].vtype = RD_KAFKA_VTYPE_HEADERS;
    vu[n++].u.headers = headers.get();
  }
  if (timestamp_ms > 0) {
    vu[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
    vu[n++].u.i64 = timestamp_ms;
  }
  vu[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
  vu[n++].u.ptr = opaque;
  if (exactly_once_ && !txn_open_) SLUICE_SDK_RETURN_IF_ERROR(begin_transaction());
  ErrorPtr e(rd_kafka_produceva(rk_, vu.data(), n));
  if (!e) {
    static_cast<void>(headers.release());  // librdkafka owns them now
    ++in_flight_;
    return true;
  }
  if (rd_kafka_error_code(e.get()) == RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;
  return unavailable("to_kafka: cannot produce to topic '" + topic_ +
                     "': " + rd_kafka_error_string(e.get()));
}

void* ToKafka::node_opaque() {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(this) | 1U);
}

Result<bool> ToKafka::produce(Record& rec) {
  HeadersPtr headers = value_to_headers(ValueRef(rec.headers_ref));
  const bool copy = !rec.held || rec.bytes.size() <= k_copy_max_bytes;
  // The report's opaque (see delivery_report): the node (bit 0 set) or the kept Record,
  // which then owns the bytes librdkafka borrows (moving it keeps them where they are).
  std::unique_ptr<Record> kept;
  if (!copy) kept = std::make_unique<Record>(std::move(rec));
  const Record& r = kept ? *kept : rec;
  Result<bool> taken =
      produce_va(r.bytes, copy, r.has_key ? std::optional(r.key) : std::nullopt, headers,
                 r.timestamp_ms, kept ? static_cast<void*>(kept.get()) : node_opaque());
  if (taken.is_ok() && *taken) {
    static_cast<void>(kept.release());  // until its delivery report
    return true;
  }
  if (kept) rec = std::move(*kept);  // not taken: the caller keeps it
  return taken;
}

Status ToKafka::drain_pending(Context ctx) {
  while (!pending_.empty()) {
    SLUICE_SDK_ASSIGN_OR_RETURN(const bool taken, produce(pending_.front()));
    if (!taken) return {};  // still full: retried on the next delivery report or timer
    pending_.pop_front();
  }
  if (backpressure_) {
    backpressure_ = false;
    ctx.set_backpressure(false);
  }
  return {};
}

Result<ToKafka::Copied> ToKafka::produce_copied(const sl_message& m) {
  const ValueRef value(m.value);
  const ValueRef key(m.key);
  if (key_from_value_ || json_values_ || !(value.is_string() || value.is_bytes()) ||
      !(key.is_null() || key.is_string() || key.is_bytes())) {
    return Copied::not_applicable;
  }
  const std::string_view bytes = value.as_str();
  if (bytes.size() > k_copy_max_bytes) return Copied::not_applicable;
  HeadersPtr headers = value_to_headers(ValueRef(m.headers));
  const int64_t timestamp_ms = m.timestamp_ns != SL_NO_TIMESTAMP ? m.timestamp_ns / 1'000'000 : 0;
  SLUICE_SDK_ASSIGN_OR_RETURN(
      const bool taken,
      produce_va(bytes, true, key.is_null() ? std::nullopt : std::optional(key.as_str()), headers,
                 timestamp_ms, node_opaque()));
  return taken ? Copied::taken : Copied::queue_full;
}

Status ToKafka::process_one(Context ctx, uint32_t /*input*/, const sl_message& m) {
  if (!failure_.is_ok()) return failure_;
  const bool in_order = pending_.empty();  // else earlier elements wait: keep the order
  bool tried = false;
  if (in_order) {
    // The common case (a small string or bytes payload keyed by the message key): produced
    // from the element's own bytes, copied by librdkafka; no Record, no reference taken.
    SLUICE_SDK_ASSIGN_OR_RETURN(const Copied copied, produce_copied(m));
    if (copied == Copied::taken) return {};
    tried = copied == Copied::queue_full;
    if (!tried) {
      // Anything else small (JSON-encoded values, a key from the element): a viewing record.
      SLUICE_SDK_ASSIGN_OR_RETURN(Record view, make_record(m, false));
      if (view.bytes.size() <= k_copy_max_bytes) {
        SLUICE_SDK_ASSIGN_OR_RETURN(const bool taken, produce(view));
        if (taken) return {};
        tried = true;  // queue full
      }
    }
  }
  SLUICE_SDK_ASSIGN_OR_RETURN(Record rec, make_record(m, true));
  if (in_order && !tried) {
    SLUICE_SDK_ASSIGN_OR_RETURN(const bool taken, produce(rec));
    if (taken) return {};
  }
  // librdkafka's queue is full (or earlier elements wait): keep the element, in order, and
  // stop the sources until deliveries make room.
  pending_.push_back(std::move(rec));
  if (!backpressure_) {
    backpressure_ = true;
    ctx.set_backpressure(true);
  }
  rd_kafka_poll(rk_, 0);
  return {};
}

Status ToKafka::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id != k_poll_timer || stopped_) return {};
  rd_kafka_poll(rk_, 0);
  const Status drained = drain_pending(ctx);
  if (!drained.is_ok() && failure_.is_ok()) failure_ = drained;
  maybe_ready();
  if (!failure_.is_ok()) return failure_;
  return ctx.timer_start(k_poll_timer, poll_interval_);
}

Status ToKafka::flush(Context ctx) {
  const auto deadline = std::chrono::steady_clock::now() + flush_timeout_;
  while (failure_.is_ok()) {
    SLUICE_SDK_RETURN_IF_ERROR(drain_pending(ctx));
    if (pending_.empty() && in_flight_ == 0) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    rd_kafka_poll(rk_, static_cast<int>(std::min<int64_t>(left, 100)));
  }
  if (!failure_.is_ok()) return failure_;
  if (!pending_.empty() || in_flight_ != 0) {
    return unavailable("to_kafka: " + std::to_string(pending_.size() + in_flight_) +
                       " messages to topic '" + topic_ +
                       "' were not delivered within flush_timeout_ms (" +
                       std::to_string(flush_timeout_.count()) + " ms)");
  }
  return {};
}

Status ToKafka::finish(Context ctx) {
  ctx.timer_cancel(k_poll_timer);
  Status st = flush(ctx);
  if (exactly_once_ && txn_open_) {
    // End of input is not a checkpoint: committing here would put output in the topic whose
    // input the last checkpoint does not cover (the next run would produce it again).
    abort_transaction(
        "end of input: output after the last checkpoint is not committed (the "
        "next run produces it again from that checkpoint)");
  }
  stopped_ = true;
  return st;
}

void ToKafka::stop(Context ctx) {
  if (stopped_) return;
  ctx.timer_cancel(k_poll_timer);
  if (exactly_once_) {
    // Stopping after a failure, or after the final checkpoint (then nothing is open): what
    // the open transaction holds is not covered by a checkpoint.
    abort_transaction("the pipeline stops: output after the last checkpoint is discarded");
    stopped_ = true;
    return;
  }
  const Status st = flush(ctx);
  stopped_ = true;
  if (!st.is_ok()) ctx.log_error(st.message());
}

// ---------------------------------------------------------------------------
// Checkpoints

Result<bool> ToKafka::checkpoint_prepare(Context ctx, uint64_t epoch) {
  if (!failure_.is_ok()) return failure_;
  SLUICE_SDK_RETURN_IF_ERROR(drain_pending(ctx));
  rd_kafka_poll(rk_, 0);
  if (!failure_.is_ok()) return failure_;
  if (pending_.empty() && in_flight_ == 0) {
    SLUICE_SDK_RETURN_IF_ERROR(complete_prepare(epoch));
    return true;
  }
  // Answered from the delivery path (on_posted / the poll timer) when the last report is in:
  // the executor is not blocked meanwhile.
  preparing_ = epoch;
  return false;
}

void ToKafka::maybe_ready() {
  if (!preparing_) return;
  const uint64_t epoch = *preparing_;
  Status st = failure_;
  if (st.is_ok()) {
    if (!pending_.empty() || in_flight_ != 0) return;
    st = complete_prepare(epoch);
  }
  preparing_.reset();
  ctx_.checkpoint_ready(epoch, st);
}

Status ToKafka::complete_prepare(uint64_t epoch) {
  if (!exactly_once_) return {};
  return send_offsets(epoch);
}

Status ToKafka::checkpoint_commit(Context /*ctx*/, uint64_t epoch) {
  if (!exactly_once_) return {};
  return commit_transaction(epoch);
}

Status ToKafka::checkpoint_abort(Context ctx, uint64_t epoch) {
  if (exactly_once_ && txn_open_) {
    ctx.log_warn("checkpoint " + std::to_string(epoch) +
                 " was not stored: its transaction stays open and is committed with the next "
                 "checkpoint");
  }
  return {};
}

Status ToKafka::txn_error(const std::string& what, const rd_kafka_error_t* e) const {
  const rd_kafka_resp_err_t code = rd_kafka_error_code(e);
  std::string msg = "to_kafka: " + what + " failed (transactional.id '" + transactional_id_ +
                    "'): " + rd_kafka_error_name(e) + ": " + rd_kafka_error_string(e);
  if (code == RD_KAFKA_RESP_ERR__FENCED || code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
      code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH) {
    return sdk::failed_precondition(
        msg +
        " -- this producer was FENCED: another producer with the same transactional.id "
        "started (is the same pipeline running twice?); this one stops");
  }
  if (rd_kafka_error_is_fatal(e) != 0) {
    return sdk::internal_error(msg + " (fatal: the producer cannot continue)");
  }
  if (rd_kafka_error_txn_requires_abort(e) != 0) {
    return unavailable(msg +
                       " (the transaction is aborted; the restart resumes from the last "
                       "checkpoint)");
  }
  return unavailable(msg);
}

Status ToKafka::begin_transaction() {
  ErrorPtr e(rd_kafka_begin_transaction(rk_));
  if (e) {
    const Status st = txn_error("beginning a transaction", e.get());
    if (failure_.is_ok()) failure_ = st;
    return st;
  }
  txn_open_ = true;
  return {};
}

Status ToKafka::send_offsets(uint64_t epoch) {
  for (OffsetSource* src : TaskLink::sources(link_key_)) {
    struct MetaDeleter {
      void operator()(rd_kafka_consumer_group_metadata_t* m) const noexcept {
        rd_kafka_consumer_group_metadata_destroy(m);
      }
    };
    std::unique_ptr<rd_kafka_consumer_group_metadata_t, MetaDeleter> meta(src->group_metadata());
    if (!meta) continue;  // no group: its positions live in the checkpoint only
    PartitionListPtr positions = src->positions();
    if (positions->cnt == 0) continue;
    // An idle epoch (nothing produced, offsets unchanged) needs no transaction.
    bool changed = false;
    for (int i = 0; i < positions->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = positions->elems[i];
      auto it = txn_offsets_.find({p.topic, p.partition});
      if (it == txn_offsets_.end() || it->second != p.offset) changed = true;
    }
    if (!changed && !txn_open_) continue;
    if (!txn_open_) SLUICE_SDK_RETURN_IF_ERROR(begin_transaction());
    ErrorPtr e(rd_kafka_send_offsets_to_transaction(rk_, positions.get(), meta.get(),
                                                    static_cast<int>(flush_timeout_.count())));
    if (e) {
      const bool abort = rd_kafka_error_txn_requires_abort(e.get()) != 0;
      const Status st = txn_error("adding the offsets of " + src->describe() +
                                      " to the transaction of checkpoint " + std::to_string(epoch),
                                  e.get());
      if (abort) abort_transaction(st.message());
      if (failure_.is_ok()) failure_ = st;
      return st;
    }
    for (int i = 0; i < positions->cnt; ++i) {
      const rd_kafka_topic_partition_t& p = positions->elems[i];
      txn_offsets_[{p.topic, p.partition}] = p.offset;
    }
  }
  return {};
}

Status ToKafka::commit_transaction(uint64_t epoch) {
  if (!txn_open_) return {};
  const auto deadline = std::chrono::steady_clock::now() + flush_timeout_;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    ErrorPtr e(rd_kafka_commit_transaction(rk_, static_cast<int>(std::max<int64_t>(left, 1))));
    if (!e) {
      txn_open_ = false;
      return {};
    }
    if (rd_kafka_error_is_retriable(e.get()) != 0 && std::chrono::steady_clock::now() < deadline) {
      ctx_.log_warn(std::string("committing the transaction of checkpoint ") +
                    std::to_string(epoch) + ": " + rd_kafka_error_string(e.get()) + " (retrying)");
      continue;
    }
    const bool abort = rd_kafka_error_txn_requires_abort(e.get()) != 0;
    const Status st =
        txn_error("committing the transaction of checkpoint " + std::to_string(epoch), e.get());
    if (abort) abort_transaction(st.message());
    if (failure_.is_ok()) failure_ = st;
    return st;
  }
}

void ToKafka::abort_transaction(const std::string& why) {
  if (!txn_open_) return;
  txn_open_ = false;
  ErrorPtr e(rd_kafka_abort_transaction(rk_, static_cast<int>(flush_timeout_.count())));
  if (e) {
    ctx_.log_error("aborting the transaction (" + why +
                   ") failed: " + rd_kafka_error_string(e.get()) +
                   " (the broker aborts it after transaction_timeout_ms, or when this "
                   "transactional.id starts again)");
  } else {
    ctx_.log_warn("transaction aborted: " + why);
  }
}

}  // namespace sluice::kafka
