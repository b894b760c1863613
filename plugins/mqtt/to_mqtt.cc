// to_mqtt: publishing, acknowledgement tracking, checkpoint answers, the final drain.
#include "to_mqtt.hpp"

#include <mosquitto.h>
#include <poll.h>

#include <chrono>
#include <thread>
#include <utility>

namespace sluice::mqtt {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

bool valid_topic(const std::string& topic) {
  return !topic.empty() && topic.find('\0') == std::string::npos &&
         mosquitto_pub_topic_check(topic.c_str()) == MOSQ_ERR_SUCCESS;
}

}  // namespace

void ToMqtt::validate(const Config& cfg) {
  ConnectionOptions::validate(cfg);
  const bool has_topic = cfg.has("topic");
  if (has_topic == cfg.has("topic_field")) {
    cfg.fail(has_topic ? "topic_field" : "topic",
             "exactly one of `topic` and `topic_field` must be given");
  }
  if (has_topic && !valid_topic(cfg.get_string("topic"))) {
    cfg.fail("topic", "is not a topic to publish to: \"" + cfg.get_string("topic") +
                          "\" (not empty, no '+' or '#' wildcard)");
  }
}

ToMqtt::ToMqtt(const sl_node_init& init, const Config& cfg)
    : link_(ConnectionOptions::from_config(cfg, Context(init.ctx).node_id(), init.task_index),
            *this, "to_mqtt"),
      topic_(cfg.find_string("topic").value_or("")),
      topic_field_(cfg.find_string("topic_field").value_or("")),
      qos_(static_cast<int>(cfg.get_int("qos"))),
      retain_(cfg.get_bool("retain")),
      max_in_flight_(static_cast<size_t>(cfg.get_int("max_in_flight"))),
      drain_timeout_(cfg.get_duration("drain_timeout_ms")) {
  validate(cfg);
}

Status ToMqtt::start(Context ctx) {
  ctx_ = ctx;
  SLUICE_SDK_RETURN_IF_ERROR(link_.open(ctx));
  // libmosquitto's own window: publishes beyond it wait in its queue.
  mosquitto_max_inflight_messages_set(link_.handle(), static_cast<unsigned int>(max_in_flight_));
  update_backpressure(ctx);
  publish_metrics(ctx);
  return {};
}

Status ToMqtt::process_one(Context ctx, uint32_t /*input*/, const sl_message& m) {
  if (!link_.failure().is_ok()) return link_.failure();
  const ValueRef value(m.value);
  std::string topic = topic_;
  if (!topic_field_.empty()) {
    std::optional<Value> field = value.is_object() ? value.get(topic_field_) : std::nullopt;
    if (!field || !field->is_string()) {
      return sdk::invalid_argument("to_mqtt: the element has no string field \"" + topic_field_ +
                                   "\" for its topic");
    }
    topic = std::string(field->as_str());
    if (!valid_topic(topic)) {
      return sdk::invalid_argument("to_mqtt: \"" + topic.substr(0, 200) +
                                   "\" is not a topic to publish to (empty, or a wildcard)");
    }
  }
  std::string payload;
  if (value.is_string() || value.is_bytes()) {
    payload = std::string(value.as_str());
  } else {
    payload = value.to_json();
  }
  return publish(ctx, std::move(topic), std::move(payload));
}

Status ToMqtt::publish(Context ctx, std::string topic, std::string payload) {
  if (!link_.connected() || !waiting_.empty()) {
    waiting_.push_back({std::move(topic), std::move(payload)});
    update_backpressure(ctx);
    return {};
  }
  int mid = 0;
  const int rc = mosquitto_publish(link_.handle(), &mid, topic.c_str(),
                                   static_cast<int>(payload.size()), payload.data(), qos_, retain_);
  if (rc == MOSQ_ERR_PAYLOAD_SIZE || rc == MOSQ_ERR_INVAL || rc == MOSQ_ERR_MALFORMED_UTF8) {
    return sdk::invalid_argument("to_mqtt: the broker protocol refuses this message: " +
                                 mosquitto_error(rc));
  }
  if (rc != MOSQ_ERR_SUCCESS) {
    // The connection went away under us: keep the element for the reconnection.
    waiting_.push_back({std::move(topic), std::move(payload)});
    update_backpressure(ctx);
    return {};
  }
  if (qos_ > 0) in_flight_.insert(mid);
  ++messages_total_;
  bytes_total_ += payload.size();
  service(ctx);
  update_backpressure(ctx);
  return {};
}

void ToMqtt::service(Context ctx) {
  if (!link_.has_socket()) return;
  if (link_.want_write() && !link_.write(ctx)) return;
  link_.arm_read(ctx);
  link_.arm_write(ctx);
}

void ToMqtt::update_backpressure(Context ctx) {
  const bool full = !waiting_.empty() || in_flight_.size() >= max_in_flight_;
  // Released at half the window, so the sources do not flap at every acknowledgement.
  const bool release = waiting_.empty() && in_flight_.size() <= max_in_flight_ / 2;
  if (full && !backpressure_) {
    backpressure_ = true;
    ctx.set_backpressure(true);
  } else if (backpressure_ && release) {
    backpressure_ = false;
    ctx.set_backpressure(false);
  }
}

void ToMqtt::on_connected(bool /*session_present*/) {
  // libmosquitto sends the open QoS 1/2 publishes again by itself; then what waited.
  while (!waiting_.empty() && link_.connected()) {
    Pending& p = waiting_.front();
    int mid = 0;
    const int rc =
        mosquitto_publish(link_.handle(), &mid, p.topic.c_str(), static_cast<int>(p.payload.size()),
                          p.payload.data(), qos_, retain_);
    if (rc != MOSQ_ERR_SUCCESS) break;
    if (qos_ > 0) in_flight_.insert(mid);
    ++messages_total_;
    bytes_total_ += p.payload.size();
    waiting_.pop_front();
  }
  update_backpressure(ctx_);
}

void ToMqtt::on_lost() { update_backpressure(ctx_); }

void ToMqtt::on_published(int mid) {
  in_flight_.erase(mid);
  update_backpressure(ctx_);
  maybe_ready(ctx_);
}

void ToMqtt::maybe_ready(Context ctx) {
  if (preparing_ && in_flight_.empty() && waiting_.empty()) {
    const uint64_t epoch = *std::exchange(preparing_, std::nullopt);
    ctx.checkpoint_ready(epoch);
  }
}

Result<bool> ToMqtt::checkpoint_prepare(Context ctx, uint64_t epoch) {
  if (!link_.failure().is_ok()) return link_.failure();
  if (in_flight_.empty() && waiting_.empty()) return true;
  preparing_ = epoch;
  service(ctx);
  return false;
}

Status ToMqtt::on_io(Context ctx, uint64_t watch_id, uint32_t /*ready*/) {
  if (watch_id == Link::k_read_watch) {
    // Acknowledgements (and pings' answers): on_published runs inside.
    while (link_.readable_now()) {
      if (!link_.read(ctx)) return link_.failure();
    }
  }
  service(ctx);
  return {};
}

Status ToMqtt::on_timer(Context ctx, uint64_t timer_id) {
  if (!link_.failure().is_ok()) return link_.failure();
  if (link_.on_timer(ctx, timer_id)) {
    service(ctx);
    if (timer_id == Link::k_tick_timer) publish_metrics(ctx);
  }
  return {};
}

Status ToMqtt::finish(Context ctx) {
  // The end of input: wait here, on the task thread, for the broker's acknowledgements
  // (the loop's io watches and timers do not run while finish blocks).
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + drain_timeout_;
  auto last_tick = Clock::now();
  while ((!in_flight_.empty() || !waiting_.empty()) && Clock::now() < deadline) {
    if (!link_.failure().is_ok()) return link_.failure();
    if (!link_.has_socket()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      link_.on_timer(ctx, Link::k_reconnect_timer);
      continue;
    }
    pollfd p{mosquitto_socket(link_.handle()),
             static_cast<short>(POLLIN | (link_.want_write() ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 100) > 0) {
      if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !link_.read(ctx)) continue;
      if (link_.want_write() && !link_.write(ctx)) continue;
    }
    if (Clock::now() - last_tick >= std::chrono::seconds(1)) {
      last_tick = Clock::now();
      link_.on_timer(ctx, Link::k_tick_timer);
    }
  }
  publish_metrics(ctx);
  if (!in_flight_.empty() || !waiting_.empty()) {
    return Status(SL_UNAVAILABLE,
                  "to_mqtt: " + std::to_string(in_flight_.size() + waiting_.size()) +
                      " publishes were not acknowledged by the broker within drain_timeout_ms");
  }
  return {};
}

void ToMqtt::stop(Context ctx) {
  publish_metrics(ctx);
  link_.close(ctx, true);
}

void ToMqtt::publish_metrics(Context ctx) const {
  ctx.gauge_set("mqtt_messages_total", "", static_cast<double>(messages_total_));
  ctx.gauge_set("mqtt_bytes_total", "", static_cast<double>(bytes_total_));
  ctx.gauge_set("mqtt_reconnects_total", "", static_cast<double>(link_.reconnects()));
  ctx.gauge_set("mqtt_in_flight", "", static_cast<double>(in_flight_.size() + waiting_.size()));
}

}  // namespace sluice::mqtt
