// buffer, latest, rate_limit and delay: operators that hold messages in a bounded queue and
// emit them later, on a posted executor turn (buffer, latest) or on a timer (rate_limit,
// delay). Each keeps whole messages (value, key, headers, event time).
#include <sluice/sluice.hpp>

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "timed.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;
using timed::HeldMessage;
using timed::WindowClock;

namespace {

size_t positive_count(const Config& cfg, const char* key) {
  const int64_t n = cfg.get_int(key);
  if (n <= 0) cfg.fail(key, "must be positive (got " + std::to_string(n) + ")");
  return static_cast<size_t>(n);
}

int64_t interval_ns(const Config& cfg) {
  return cfg.get_duration("interval_ms").count() * 1'000'000;
}

Value queue_state(const std::deque<HeldMessage>& queue) {
  std::vector<Value> items;
  items.reserve(queue.size());
  for (const HeldMessage& m : queue) items.push_back(m.to_state());
  return Value::array(items);
}

Result<std::deque<HeldMessage>> queue_from(ValueRef state, const char* what) {
  std::optional<Value> items = state.get("queue");
  if (!items || !items->is_array()) {
    return sdk::invalid_argument(std::string(what) +
                                 ": checkpoint state has no 'queue' array: " + state.to_json());
  }
  std::deque<HeldMessage> queue;
  for (size_t i = 0; i < items->size(); ++i) {
    SLUICE_SDK_ASSIGN_OR_RETURN(HeldMessage m, HeldMessage::from_state((*items)[i], what));
    queue.push_back(std::move(m));
  }
  return queue;
}

/// Runs a posted member on the executor. A posted task cannot fail the node: a failed emit
/// means a consumer already failed the task (reported by the host), so only log it.
template <class T, Status (T::*Member)(Context)>
void run_posted(sl_context* raw, void* self) noexcept {
  const Context ctx(raw);
  try {
    Status st = (static_cast<T*>(self)->*Member)(ctx);
    if (!st.is_ok() && st.code() != SL_CANCELLED && !st.message().empty()) {
      ctx.log_error(st.message());
    }
  } catch (const std::exception& e) {
    ctx.log_error(e.what());
  } catch (...) {
    ctx.log_error("unknown exception in a posted drain");
  }
}

}  // namespace

// -- buffer ---------------------------------------------------------------------------

Buffer::Buffer(Context /*ctx*/, const Config& cfg) : n_(positive_count(cfg, "n")) {}

Status Buffer::start(Context ctx) {
  depth_.report(ctx, queue_.size());
  if (queue_.empty()) return {};  // restored with a queue: drain it on the first turn
  if (queue_.size() >= n_) {
    full_ = true;
    ctx.set_backpressure(true);
  }
  return schedule_drain(ctx);
}

Status Buffer::schedule_drain(Context ctx) {
  if (drain_scheduled_) return {};
  // CANCELLED: the task is stopping and will not run posted work; drain now instead.
  if (!ctx.post(&run_posted<Buffer, &Buffer::drain>, this).is_ok()) return drain(ctx);
  drain_scheduled_ = true;
  return {};
}

Status Buffer::process(Context ctx, uint32_t /*input*/, Batch batch) {
  for (const sl_message& m : batch) queue_.push_back(HeldMessage::of(m));
  depth_.report(ctx, queue_.size());
  if (queue_.size() >= n_ && !full_) {
    full_ = true;
    ctx.set_backpressure(true);
  }
  return schedule_drain(ctx);
}

Status Buffer::drain(Context ctx) {
  drain_scheduled_ = false;
  // Emit what is queued now; what arrives during the emit (a cycle is impossible, but a
  // later turn may add more) waits for the next drain.
  std::deque<HeldMessage> batch;
  batch.swap(queue_);
  depth_.report(ctx, 0);
  if (full_) {
    full_ = false;
    ctx.set_backpressure(false);
  }
  if (batch.empty()) return {};
  out_.clear();
  for (const HeldMessage& m : batch) out_.push_back(m.view());
  Status st = ctx.emit(out_);
  out_.clear();
  return st;
}

Status Buffer::finish(Context ctx) { return drain(ctx); }

Result<Value> Buffer::snapshot(Context /*ctx*/) {
  return Value::object({{"queue", queue_state(queue_)}});
}

Status Buffer::restore(Context /*ctx*/, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(queue_, queue_from(state, k_name));
  return {};
}

// -- latest ----------------------------------------------------------------------------

Latest::Latest(Context /*ctx*/, const Config& /*cfg*/) {}

Status Latest::start(Context ctx) { return held_ ? schedule(ctx) : Status(); }

Status Latest::schedule(Context ctx) {
  if (scheduled_) return {};
  // CANCELLED: the task is stopping and will not run posted work; emit now instead.
  if (!ctx.post(&run_posted<Latest, &Latest::emit_held>, this).is_ok()) return emit_held(ctx);
  scheduled_ = true;
  return {};
}

Status Latest::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (batch.empty()) return {};
  held_ = HeldMessage::of(batch[batch.size() - 1]);
  return schedule(ctx);
}

Status Latest::emit_held(Context ctx) {
  scheduled_ = false;
  if (!held_) return {};
  const HeldMessage m = std::move(*held_);
  held_.reset();
  return ctx.emit(m.view());
}

Status Latest::finish(Context ctx) { return emit_held(ctx); }

Result<Value> Latest::snapshot(Context /*ctx*/) {
  if (!held_) return Value::object({});
  return Value::object({{"held", held_->to_state()}});
}

Status Latest::restore(Context /*ctx*/, ValueRef state) {
  held_.reset();
  if (std::optional<Value> held = state.get("held")) {
    SLUICE_SDK_ASSIGN_OR_RETURN(HeldMessage m, HeldMessage::from_state(*held, k_name));
    held_ = std::move(m);
  }
  return {};
}

// -- rate_limit ------------------------------------------------------------------------

RateLimit::RateLimit(Context /*ctx*/, const Config& cfg)
    : interval_ns_(interval_ns(cfg)), max_queued_(positive_count(cfg, "max_queued")) {}

Status RateLimit::start(Context ctx) {
  update_backpressure(ctx);
  return queue_.empty() ? Status() : arm(ctx);
}

Status RateLimit::arm(Context ctx) {
  const int64_t now = ctx.now_ns();
  const int64_t delay = next_ns_ > now ? next_ns_ - now : 0;
  return ctx.timer_start(k_timer, std::chrono::nanoseconds(delay));
}

void RateLimit::update_backpressure(Context ctx) {
  depth_.report(ctx, queue_.size());
  const bool full = queue_.size() >= max_queued_;
  if (full != full_) {
    full_ = full;
    ctx.set_backpressure(full);
  }
}

Status RateLimit::process_one(Context ctx, uint32_t /*input*/, const sl_message& m) {
  const int64_t now = ctx.now_ns();
  if (queue_.empty() && now >= next_ns_) {
    next_ns_ = now + interval_ns_;
    return ctx.emit(m);
  }
  queue_.push_back(HeldMessage::of(m));
  update_backpressure(ctx);
  return queue_.size() == 1 ? arm(ctx) : Status();
}

Status RateLimit::on_timer(Context ctx, uint64_t /*timer_id*/) {
  if (queue_.empty()) return {};
  const int64_t now = ctx.now_ns();
  const HeldMessage m = std::move(queue_.front());
  queue_.pop_front();
  next_ns_ = std::max(now, next_ns_) + interval_ns_;
  update_backpressure(ctx);
  SLUICE_SDK_RETURN_IF_ERROR(ctx.emit(m.view()));
  return queue_.empty() ? Status() : arm(ctx);
}

Status RateLimit::finish(Context ctx) {
  ctx.timer_cancel(k_timer);
  std::vector<sl_message> out;
  out.reserve(queue_.size());
  for (const HeldMessage& m : queue_) out.push_back(m.view());
  Status st = out.empty() ? Status() : ctx.emit(out);
  queue_.clear();
  update_backpressure(ctx);
  return st;
}

Result<Value> RateLimit::snapshot(Context /*ctx*/) {
  std::vector<std::pair<std::string_view, Value>> entries{{"queue", queue_state(queue_)}};
  if (next_ns_ != INT64_MIN) entries.emplace_back("next_ns", Value::integer(next_ns_));
  return Value::object(entries);
}

Status RateLimit::restore(Context /*ctx*/, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(queue_, queue_from(state, k_name));
  next_ns_ = INT64_MIN;
  if (std::optional<Value> next = state.get("next_ns")) {
    if (!next->is_int()) {
      return sdk::invalid_argument("rate_limit: checkpoint state has a non-integer 'next_ns': " +
                                   state.to_json());
    }
    next_ns_ = next->as_int();
  }
  return {};
}

// -- delay -------------------------------------------------------------------------------

Delay::Delay(Context /*ctx*/, const Config& cfg)
    : interval_ns_(interval_ns(cfg)), max_queued_(positive_count(cfg, "max_queued")) {}

Status Delay::start(Context ctx) {
  update_backpressure(ctx);
  return queue_.empty() ? Status() : arm(ctx);
}

Status Delay::arm(Context ctx) {
  const int64_t delay = std::max<int64_t>(queue_.front().due_ns - ctx.now_ns(), 0);
  return ctx.timer_start(k_timer, std::chrono::nanoseconds(delay));
}

void Delay::update_backpressure(Context ctx) {
  depth_.report(ctx, queue_.size());
  const bool full = queue_.size() >= max_queued_;
  if (full != full_) {
    full_ = full;
    ctx.set_backpressure(full);
  }
}

Status Delay::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (batch.empty()) return {};
  const bool was_empty = queue_.empty();
  const int64_t due = ctx.now_ns() + interval_ns_;
  for (const sl_message& m : batch) queue_.push_back(Waiting{due, HeldMessage::of(m)});
  update_backpressure(ctx);
  return was_empty ? arm(ctx) : Status();
}

Status Delay::emit_until(Context ctx, int64_t now_ns) {
  out_.clear();
  size_t n = 0;
  while (n < queue_.size() && queue_[n].due_ns <= now_ns)
    out_.push_back(queue_[n++].message.view());
  Status st = out_.empty() ? Status() : ctx.emit(out_);
  out_.clear();
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  update_backpressure(ctx);
  return st;
}

Status Delay::on_timer(Context ctx, uint64_t /*timer_id*/) {
  SLUICE_SDK_RETURN_IF_ERROR(emit_until(ctx, ctx.now_ns()));
  return queue_.empty() ? Status() : arm(ctx);
}

Status Delay::finish(Context ctx) {
  ctx.timer_cancel(k_timer);
  return emit_until(ctx, INT64_MAX);
}

Result<Value> Delay::snapshot(Context /*ctx*/) {
  std::vector<Value> items;
  items.reserve(queue_.size());
  for (const Waiting& w : queue_) {
    items.push_back(
        Value::object({{"due_ns", Value::integer(w.due_ns)}, {"message", w.message.to_state()}}));
  }
  return Value::object({{"queue", Value::array(items)}});
}

Status Delay::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> items = state.get("queue");
  if (!items || !items->is_array()) {
    return sdk::invalid_argument("delay: checkpoint state has no 'queue' array: " +
                                 state.to_json());
  }
  queue_.clear();
  for (size_t i = 0; i < items->size(); ++i) {
    const Value item = (*items)[i];
    std::optional<Value> due = item.get("due_ns");
    std::optional<Value> message = item.get("message");
    if (!due || !due->is_int() || !message) {
      return sdk::invalid_argument("delay: checkpoint item lacks 'due_ns' or 'message': " +
                                   item.to_json());
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(HeldMessage m, HeldMessage::from_state(*message, k_name));
    queue_.push_back(Waiting{due->as_int(), std::move(m)});
  }
  return {};
}

}  // namespace sluice::core_ops
