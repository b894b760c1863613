// from_mqtt: subscription, reading in poll, acknowledgements held until they are safe.
#include "from_mqtt.hpp"

#include <mosquitto.h>

#include <utility>

namespace sluice::mqtt {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;

namespace {

std::vector<std::string> topics_of(const Config& cfg) {
  std::vector<std::string> out;
  const Value topics = cfg.get_array("topics");
  for (size_t i = 0; i < topics.size(); ++i) {
    const Value t = topics[i];
    if (!t.is_string()) {
      cfg.fail("topics", "must hold strings (item " + std::to_string(i) + " is " +
                             std::string(t.kind_name()) + ")");
    }
    out.emplace_back(t.as_str());
  }
  return out;
}

}  // namespace

void FromMqtt::validate(const Config& cfg) {
  ConnectionOptions::validate(cfg);
  for (const std::string& topic : topics_of(cfg)) {
    if (topic.empty() || mosquitto_sub_topic_check(topic.c_str()) != MOSQ_ERR_SUCCESS ||
        topic.find('\0') != std::string::npos) {
      cfg.fail("topics", "holds an invalid topic filter \"" + topic +
                             "\" (not empty; '+' and '#' each alone between slashes, '#' "
                             "last: \"a/+/c\", \"a/#\")");
    }
    if (cfg.task_count() > 1 && topic.rfind("$share/", 0) != 0) {
      cfg.fail("topics", "with " + std::to_string(cfg.task_count()) +
                             " tasks, every filter must be a shared subscription "
                             "(\"$share/GROUP/" +
                             topic + "\"), or each task would receive every message");
    }
  }
}

FromMqtt::FromMqtt(const sl_node_init& init, const Config& cfg)
    : link_(ConnectionOptions::from_config(cfg, Context(init.ctx).node_id(), init.task_index),
            *this, "from_mqtt"),
      topics_(topics_of(cfg)),
      qos_(static_cast<int>(cfg.get_int("qos"))),
      payload_(static_cast<Payload>(cfg.get_choice("payload", {"string", "bytes", "json"}))),
      with_topic_(cfg.get_bool("with_topic")),
      checkpointing_(cfg.checkpointing()) {
  validate(cfg);
}

Status FromMqtt::start(Context ctx) {
  ctx_ = ctx;
  SLUICE_SDK_RETURN_IF_ERROR(link_.open(ctx));
  publish_metrics(ctx);
  return {};
}

void FromMqtt::on_connected(bool /*session_present*/) {
  // Subscribed at every connection, also to a resumed session (which keeps the earlier
  // subscriptions): the config may have changed. The broker then sends the retained
  // messages of the filters again (at-least-once: a duplicate).
  std::vector<char*> filters;
  filters.reserve(topics_.size());
  for (std::string& t : topics_) filters.push_back(t.data());
  const int rc = mosquitto_subscribe_multiple(
      link_.handle(), nullptr, static_cast<int>(filters.size()), filters.data(), qos_, 0, nullptr);
  if (rc != MOSQ_ERR_SUCCESS) {
    ctx_.log_error("from_mqtt: cannot subscribe: " + mosquitto_error(rc));
  }
}

void FromMqtt::on_subscribed() {
  std::string list;
  for (const std::string& t : topics_) list += (list.empty() ? "\"" : ", \"") + t + "\"";
  ctx_.log_info("from_mqtt: subscribed to " + list + " at QoS " + std::to_string(qos_));
}

void FromMqtt::on_lost() {
  // The queued acknowledgements went with the connection: the broker delivers those
  // messages again (persistent session), and nothing in the new queue is held.
  held_acks_ = 0;
}

void FromMqtt::on_message(const mosquitto_message& message) {
  const auto* data = static_cast<const char*>(message.payload);
  const std::string_view payload(data != nullptr ? data : "",
                                 static_cast<size_t>(message.payloadlen));
  Value value;
  switch (payload_) {
    case Payload::bytes: value = Value::bytes(payload); break;
    case Payload::json: {
      Result<Value> parsed = sdk::parse_json(payload);
      if (parsed.is_ok()) {
        value = std::move(parsed).value();
        break;
      }
      if (decode_errors_total_++ == 0) {
        ctx_.log_warn("from_mqtt: a payload on \"" + std::string(message.topic) +
                      "\" is not JSON: emitted as a string (counted in "
                      "mqtt_decode_errors_total)");
      }
      [[fallthrough]];
    }
    case Payload::string:
      value = sdk::valid_utf8(payload) ? Value::string(payload) : Value::bytes(payload);
      break;
  }
  const Value key = Value::string(message.topic != nullptr ? message.topic : "");
  if (with_topic_) value = Value::object({{"topic", key}, {"payload", std::move(value)}});
  sl_message m{};
  m.value = value.raw();
  m.key = key.raw();
  m.headers = sl_null();
  m.timestamp_ns = SL_NO_TIMESTAMP;
  ++messages_total_;
  bytes_total_ += payload.size();
  ++emitted_in_poll_;
  if (message.qos > 0) ++held_acks_;
  if (!emit_status_.is_ok()) return;  // the task is failing: the rest is redelivered
  emit_status_ = ctx_.emit(m);
}

Result<SourceState> FromMqtt::poll(Context ctx, uint32_t budget) {
  if (!emit_status_.is_ok()) return std::exchange(emit_status_, Status());
  if (!link_.failure().is_ok()) return link_.failure();
  if (!link_.has_socket()) return SourceState::idle;  // the reconnection timer wakes us
  if (checkpointing_ && held_acks_ == 0 && link_.want_write()) {
    // Acknowledgements a checkpoint released are still going out: read nothing until they
    // are written, or the acknowledgements of new elements would go out with them.
    link_.arm_write(ctx);
    return SourceState::idle;
  }
  emitted_in_poll_ = 0;
  while (emitted_in_poll_ < budget && link_.readable_now()) {
    if (!link_.read(ctx)) break;
    if (!emit_status_.is_ok()) return std::exchange(emit_status_, Status());
  }
  if (!link_.failure().is_ok()) return link_.failure();
  // Without checkpoints the sinks have processed what was emitted: acknowledge it.
  if (!checkpointing_) held_acks_ = 0;
  flush(ctx);
  link_.arm_read(ctx);
  return emitted_in_poll_ >= budget ? SourceState::more : SourceState::idle;
}

void FromMqtt::flush(Context ctx) {
  if (held_acks_ != 0 || !link_.has_socket()) return;
  if (link_.want_write() && !link_.write(ctx)) return;
  link_.arm_write(ctx);
}

Status FromMqtt::on_io(Context ctx, uint64_t watch_id, uint32_t /*ready*/) {
  if (!link_.failure().is_ok()) return link_.failure();
  if (watch_id == Link::k_read_watch) {
    ctx.wake();  // poll reads (only when downstream has room)
  } else if (watch_id == Link::k_write_watch) {
    const bool was_flushing = held_acks_ == 0;
    flush(ctx);
    if (was_flushing && !link_.want_write()) ctx.wake();
  }
  return {};
}

Status FromMqtt::on_timer(Context ctx, uint64_t timer_id) {
  if (!link_.failure().is_ok()) return link_.failure();
  if (link_.on_timer(ctx, timer_id)) {
    // A keepalive ping (or, after a reconnection, CONNECT) may be queued.
    flush(ctx);
    if (timer_id == Link::k_tick_timer) publish_metrics(ctx);
    ctx.wake();
  }
  return {};
}

Status FromMqtt::checkpoint_commit(Context ctx, uint64_t /*epoch*/) {
  // Every element emitted so far is in the stored checkpoint (sources are not polled during
  // an epoch): their acknowledgements may go.
  held_acks_ = 0;
  flush(ctx);
  ctx.wake();
  return {};
}

void FromMqtt::stop(Context ctx) {
  publish_metrics(ctx);
  link_.close(ctx, held_acks_ == 0);
}

void FromMqtt::publish_metrics(Context ctx) const {
  ctx.gauge_set("mqtt_messages_total", "", static_cast<double>(messages_total_));
  ctx.gauge_set("mqtt_bytes_total", "", static_cast<double>(bytes_total_));
  ctx.gauge_set("mqtt_reconnects_total", "", static_cast<double>(link_.reconnects()));
  ctx.gauge_set("mqtt_in_flight", "", static_cast<double>(held_acks_));
  ctx.gauge_set("mqtt_decode_errors_total", "", static_cast<double>(decode_errors_total_));
}

}  // namespace sluice::mqtt
