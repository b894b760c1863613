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
  flush_timeout_ = cfg.get_duration("flush_timeout_ms");
  poll_interval_ = cfg.get_duration("poll_interval_ms");
  if (poll_interval_.count() == 0) cfg.fail("poll_interval_ms", "must be positive");

  brokers_ = resolve_brokers(cfg.get_string("brokers"));
  create_embedded_topic(brokers_, topic_, 1);
  id_ = NodeRegistry::add(init.ctx, this);
  ConfPtr conf = make_conf(cfg, brokers_.bootstrap, id_, {{"enable.idempotence", "true"}});
  route_delivery_reports(conf.get());
  rk_ = new_client(RD_KAFKA_PRODUCER, std::move(conf), "producer");
  rkt_ = rd_kafka_topic_new(rk_, topic_.c_str(), nullptr);
  if (rkt_ == nullptr) {
    rd_kafka_destroy(rk_);
    NodeRegistry::remove(id_);
    cfg.fail("topic",
             std::string("is refused by librdkafka: ") + rd_kafka_err2str(rd_kafka_last_error()));
  }
}

ToKafka::~ToKafka() {
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
  return ctx.timer_start(k_poll_timer, poll_interval_);
}

void ToKafka::on_client_error(rd_kafka_t* rk, int err, const char* reason) {
  const auto code = static_cast<rd_kafka_resp_err_t>(err);
  std::string msg = std::string("Kafka ") + rd_kafka_name(rk) + " error " +
                    rd_kafka_err2name(code) + ": " + reason;
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_fatal_error(rk, fatal, sizeof fatal);
    if (failure_.is_ok()) failure_ = sdk::internal_error("to_kafka: fatal " + msg + ": " + fatal);
    return;
  }
  if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || code == RD_KAFKA_RESP_ERR__TRANSPORT ||
      code == RD_KAFKA_RESP_ERR__RESOLVE) {
    msg += " (brokers \"" + brokers_.bootstrap + "\"; librdkafka keeps retrying with backoff)";
  }
  ctx_.log_error(msg);
}

void ToKafka::on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m) {
  std::unique_ptr<Record> rec(static_cast<Record*>(m->_private));
  --in_flight_;
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR || stopped_ || !failure_.is_ok()) return;
  failure_ = unavailable("to_kafka: delivery to topic '" + topic_ + "' failed: " +
                         rd_kafka_err2name(m->err) + ": " + rd_kafka_err2str(m->err));
}

void ToKafka::on_posted() {
  rd_kafka_poll(rk_, 0);
  const Status st = drain_pending(ctx_);
  if (!st.is_ok() && failure_.is_ok()) failure_ = st;
}

Result<std::unique_ptr<ToKafka::Record>> ToKafka::make_record(const sl_message& m) const {
  auto rec = std::make_unique<Record>();
  rec->bytes = encode_bytes(ValueRef(m.value), rec->payload);
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
    rec->key = encode_bytes(at, rec->key_keep);
    rec->has_key = true;
  } else if (!ValueRef(m.key).is_null()) {
    rec->key = encode_bytes(ValueRef(m.key), rec->key_keep);
    rec->has_key = true;
  }
  rec->headers = Value::borrow(m.headers);
  if (m.timestamp_ns != SL_NO_TIMESTAMP) rec->timestamp_ms = m.timestamp_ns / 1'000'000;
  return rec;
}

Result<bool> ToKafka::produce(std::unique_ptr<Record>& rec) {
  HeadersPtr headers = value_to_headers(rec->headers);
  std::array<rd_kafka_vu_t, 6> vu{};
  size_t n = 0;
  vu[n].vtype = RD_KAFKA_VTYPE_RKT;
  vu[n++].u.rkt = rkt_;
  vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
  vu[n].u.mem.ptr = const_cast<char*>(rec->bytes.data());  // borrowed until the report
  vu[n++].u.mem.size = rec->bytes.size();
  if (rec->has_key) {
    vu[n].vtype = RD_KAFKA_VTYPE_KEY;  // librdkafka copies keys
    vu[n].u.mem.ptr = const_cast<char*>(rec->key.data());
    vu[n++].u.mem.size = rec->key.size();
  }
  if (headers) {
    vu[n].vtype = RD_KAFKA_VTYPE_HEADERS;
    vu[n++].u.headers = headers.get();
  }
  if (rec->timestamp_ms > 0) {
    vu[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
    vu[n++].u.i64 = rec->timestamp_ms;
  }
  vu[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
  vu[n++].u.ptr = rec.get();
  ErrorPtr e(rd_kafka_produceva(rk_, vu.data(), n));
  if (!e) {
    static_cast<void>(headers.release());  // librdkafka owns them now
    static_cast<void>(rec.release());      // until its delivery report
    ++in_flight_;
    return true;
  }
  if (rd_kafka_error_code(e.get()) == RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;
  return unavailable("to_kafka: cannot produce to topic '" + topic_ +
                     "': " + rd_kafka_error_string(e.get()));
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

Status ToKafka::process_one(Context ctx, uint32_t /*input*/, const sl_message& m) {
  if (!failure_.is_ok()) return failure_;
  SLUICE_SDK_ASSIGN_OR_RETURN(std::unique_ptr<Record> rec, make_record(m));
  if (pending_.empty()) {
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
  SLUICE_SDK_RETURN_IF_ERROR(drain_pending(ctx));
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
  stopped_ = true;
  return st;
}

void ToKafka::stop(Context ctx) {
  if (stopped_) return;
  ctx.timer_cancel(k_poll_timer);
  const Status st = flush(ctx);
  stopped_ = true;
  if (!st.is_ok()) ctx.log_error(st.message());
}

}  // namespace sluice::kafka
