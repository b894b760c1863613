// timed_window and timed_window_unique, plus the helpers every time-based operator shares
// (HeldMessage, WindowClock).
#include <sluice/sluice.hpp>

#include <algorithm>
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

// -- HeldMessage ---------------------------------------------------------------

namespace timed {

HeldMessage HeldMessage::of(const sl_message& m) {
  return HeldMessage{Value::borrow(ValueRef(m.value)), Value::borrow(ValueRef(m.key)),
                     Value::borrow(ValueRef(m.headers)), m.timestamp_ns, m.key_group};
}

sl_message HeldMessage::view() const noexcept {
  return sl_message{value.raw(), key.raw(), headers.raw(), timestamp_ns, key_group};
}

Value HeldMessage::to_state() const {
  std::vector<std::pair<std::string_view, Value>> entries{{"value", value}};
  if (!key.is_null()) entries.emplace_back("key", key);
  if (!headers.is_null()) entries.emplace_back("headers", headers);
  if (timestamp_ns != SL_NO_TIMESTAMP) {
    entries.emplace_back("timestamp_ns", Value::integer(timestamp_ns));
  }
  if (key_group != sdk::k_no_key_group) {
    entries.emplace_back("key_group", Value::integer(static_cast<int64_t>(key_group)));
  }
  return Value::object(entries);
}

Result<HeldMessage> HeldMessage::from_state(ValueRef state, const char* what) {
  if (!state.is_object() || !state.get("value")) {
    return sdk::invalid_argument(
        std::string(what) + ": checkpoint state has a message without 'value': " + state.to_json());
  }
  HeldMessage m{*state.get("value"), state.get("key").value_or(Value()),
                state.get("headers").value_or(Value()), SL_NO_TIMESTAMP, sdk::k_no_key_group};
  if (std::optional<Value> ts = state.get("timestamp_ns")) {
    if (!ts->is_int()) {
      return sdk::invalid_argument(
          std::string(what) +
          ": checkpoint state has a non-integer 'timestamp_ns': " + state.to_json());
    }
    m.timestamp_ns = ts->as_int();
  }
  if (std::optional<Value> g = state.get("key_group")) {
    if (!g->is_int() || g->as_int() < 0) {
      return sdk::invalid_argument(
          std::string(what) +
          ": checkpoint state has a 'key_group' that is not a non-negative int: " +
          state.to_json());
    }
    m.key_group = static_cast<uint64_t>(g->as_int());
  }
  return m;
}

// -- WindowClock ---------------------------------------------------------------

Status WindowClock::start(Context ctx) {
  const int64_t now = ctx.now_ns();
  if (deadline_ns_ == 0) deadline_ns_ = now + interval_ns_;
  return ctx.timer_start(k_timer,
                         std::chrono::nanoseconds(std::max<int64_t>(deadline_ns_ - now, 0)));
}

Status WindowClock::advance(Context ctx) {
  const int64_t now = ctx.now_ns();
  deadline_ns_ += interval_ns_;
  // A late timer (a busy executor, a restore long after the snapshot) skips the windows it
  // missed rather than emitting a burst of empty ones.
  if (deadline_ns_ <= now) deadline_ns_ = now + interval_ns_;
  return ctx.timer_start(k_timer, std::chrono::nanoseconds(deadline_ns_ - now));
}

}  // namespace timed

namespace {

std::chrono::milliseconds positive_interval(const Config& cfg) {
  const std::chrono::milliseconds interval = cfg.get_duration("interval_ms");
  if (interval.count() <= 0) {
    cfg.fail("interval_ms", "must be positive (got " + std::to_string(interval.count()) + ")");
  }
  return interval;
}

Result<int64_t> deadline_from(ValueRef state, const char* what) {
  std::optional<Value> deadline = state.get("deadline_ns");
  if (!deadline || !deadline->is_int() || deadline->as_int() <= 0) {
    return sdk::invalid_argument(
        std::string(what) + ": checkpoint state has no valid 'deadline_ns': " + state.to_json());
  }
  return deadline->as_int();
}

Result<Value> items_from(ValueRef state, const char* what) {
  std::optional<Value> items = state.get("items");
  if (!items || !items->is_array()) {
    return sdk::invalid_argument(std::string(what) +
                                 ": checkpoint state has no 'items' array: " + state.to_json());
  }
  return std::move(*items);
}

}  // namespace

// -- timed_window ----------------------------------------------------------------

TimedWindow::TimedWindow(Context /*ctx*/, const Config& cfg)
    : clock_(positive_interval(cfg)),
      emit_empty_(cfg.get_bool("emit_empty")),
      emit_partial_(cfg.get_bool("emit_partial")) {}

Status TimedWindow::start(Context ctx) { return clock_.start(ctx); }

Status TimedWindow::process(Context /*ctx*/, uint32_t /*input*/, Batch batch) {
  for (const sl_message& m : batch) items_.push_back(Value::borrow(ValueRef(m.value)));
  return {};
}

Status TimedWindow::emit_window(Context ctx) {
  const Value window = Value::array(items_);
  items_.clear();
  return ctx.emit(window);
}

Status TimedWindow::on_timer(Context ctx, uint64_t /*timer_id*/) {
  if (!items_.empty() || emit_empty_) SLUICE_SDK_RETURN_IF_ERROR(emit_window(ctx));
  return clock_.advance(ctx);
}

Status TimedWindow::finish(Context ctx) {
  ctx.timer_cancel(WindowClock::k_timer);
  if (emit_partial_ && !items_.empty()) return emit_window(ctx);
  items_.clear();
  return {};
}

Result<Value> TimedWindow::snapshot(Context /*ctx*/) {
  return Value::object(
      {{"items", Value::array(items_)}, {"deadline_ns", Value::integer(clock_.deadline_ns())}});
}

Status TimedWindow::restore(Context /*ctx*/, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(const int64_t deadline, deadline_from(state, k_name));
  SLUICE_SDK_ASSIGN_OR_RETURN(const Value items, items_from(state, k_name));
  items_.clear();
  for (size_t i = 0; i < items.size(); ++i) items_.push_back(items[i]);
  clock_.restore(deadline);
  return {};
}

// -- timed_window_unique ---------------------------------------------------------

TimedWindowUnique::TimedWindowUnique(Context ctx, const Config& cfg)
    : clock_(positive_interval(cfg)),
      keep_last_(cfg.get_choice("keep", {"first", "last"}) == 1),
      emit_empty_(cfg.get_bool("emit_empty")),
      emit_partial_(cfg.get_bool("emit_partial")) {
  // Any bound function will do (a Lua function reports itself as a map); it is called
  // with the element as its one argument.
  if (cfg.has("key")) key_fn_ = ctx.bind_function(cfg.get_value("key")).value();
}

Status TimedWindowUnique::start(Context ctx) { return clock_.start(ctx); }

void TimedWindowUnique::add(Value key, Value value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    if (!keep_last_) return;
    // "last": the kept element moves to where the latest occurrence arrived, as streamz's
    // dict pop + re-insert does.
    entries_[it->second].alive = false;
    it->second = entries_.size();
  } else {
    index_.emplace(key, entries_.size());
  }
  entries_.push_back(Entry{std::move(key), std::move(value), true});
}

Status TimedWindowUnique::process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& m) {
  Value value = Value::borrow(ValueRef(m.value));
  if (!key_fn_) {
    add(value, value);
    return {};
  }
  SLUICE_SDK_ASSIGN_OR_RETURN(Value key, key_fn_.call(value));
  add(std::move(key), std::move(value));
  return {};
}

Status TimedWindowUnique::emit_window(Context ctx) {
  std::vector<Value> kept;
  kept.reserve(alive_count());
  for (Entry& e : entries_) {
    if (e.alive) kept.push_back(std::move(e.value));
  }
  entries_.clear();
  index_.clear();
  return ctx.emit(Value::array(kept));
}

Status TimedWindowUnique::on_timer(Context ctx, uint64_t /*timer_id*/) {
  if (alive_count() > 0 || emit_empty_) SLUICE_SDK_RETURN_IF_ERROR(emit_window(ctx));
  return clock_.advance(ctx);
}

Status TimedWindowUnique::finish(Context ctx) {
  ctx.timer_cancel(WindowClock::k_timer);
  if (emit_partial_ && alive_count() > 0) return emit_window(ctx);
  entries_.clear();
  index_.clear();
  return {};
}

Result<Value> TimedWindowUnique::snapshot(Context /*ctx*/) {
  std::vector<Value> items;
  items.reserve(alive_count());
  for (const Entry& e : entries_) {
    if (e.alive) items.push_back(Value::array({e.key, e.value}));
  }
  return Value::object(
      {{"items", Value::array(items)}, {"deadline_ns", Value::integer(clock_.deadline_ns())}});
}

Status TimedWindowUnique::restore(Context /*ctx*/, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(const int64_t deadline, deadline_from(state, k_name));
  SLUICE_SDK_ASSIGN_OR_RETURN(const Value items, items_from(state, k_name));
  entries_.clear();
  index_.clear();
  for (size_t i = 0; i < items.size(); ++i) {
    const Value pair = items[i];
    if (!pair.is_array() || pair.size() != 2) {
      return sdk::invalid_argument(
          std::string(k_name) +
          ": checkpoint item is not a [key, element] pair: " + pair.to_json());
    }
    add(pair[0], pair[1]);
  }
  clock_.restore(deadline);
  return {};
}

}  // namespace sluice::core_ops
