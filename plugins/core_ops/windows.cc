// partition, partition_unique and sliding_window.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "windows.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

/// The int key `key`, which must be at least 1.
int64_t get_positive(const Config& cfg, std::string_view key) {
  const int64_t v = cfg.get_int(key);
  if (v < 1) cfg.fail(key, "must be at least 1 (got " + std::to_string(v) + ")");
  return v;
}

/// The keys of the batch's elements: key(x) through `fn`'s batch form, or x itself.
Status element_keys(const sdk::Function& fn, Batch batch, std::vector<sl_value>& in,
                    std::vector<Value>& keys) {
  keys.resize(batch.size());
  if (!fn) {
    size_t i = 0;
    for (const sl_message& m : batch) keys[i++] = Value::borrow(m.value);
    return {};
  }
  batch.gather_values(in);
  return fn.call_batch(in, keys);
}

/// The array items of `v` (a checkpoint field), or an error naming `what`.
Result<Value> state_array(ValueRef state, const char* what, const char* node) {
  std::optional<Value> v = state.get(what);
  if (!v || !v->is_array()) {
    return sdk::invalid_argument(std::string(node) + ": checkpoint state has no '" + what +
                                 "' array: " + preview(state));
  }
  return std::move(*v);
}

std::vector<Value> items_of(ValueRef array) {
  std::vector<Value> out;
  out.reserve(array.size());
  for (size_t i = 0, n = array.size(); i < n; ++i) out.push_back(array[i]);
  return out;
}

}  // namespace

// ---- partition ----------------------------------------------------------------------------

Partition::Partition(Context ctx, const Config& cfg)
    : n_(get_positive(cfg, "n")), emit_partial_(cfg.get_bool("emit_partial")) {
  if (cfg.has("timeout_ms")) {
    timeout_ns_ = std::chrono::nanoseconds(cfg.get_duration("timeout_ms")).count();
  }
  if (cfg.has("key")) key_fn_ = bind_callable(ctx, cfg, "key");
}

Status Partition::arm(Context ctx, const Group& g) const {
  return ctx.timer_start(
      g.seq, std::chrono::nanoseconds(std::max<int64_t>(0, g.deadline_ns - ctx.now_ns())));
}

Status Partition::start(Context ctx) {
  // After a restore: the pending groups' deadlines, which are absolute, re-armed.
  if (!timeout_ns_ || n_ == 1) return {};
  for (const auto& [seq, key] : by_seq_) SLUICE_SDK_RETURN_IF_ERROR(arm(ctx, groups_.at(key)));
  return {};
}

Status Partition::add(Context ctx, Value key, ValueRef x) {
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    Group g;
    g.seq = next_seq_++;
    if (timeout_ns_) g.deadline_ns = ctx.now_ns() + *timeout_ns_;
    g.items.reserve(static_cast<size_t>(std::min<int64_t>(n_, 1024)));
    by_seq_.emplace(g.seq, key);
    it = groups_.emplace(std::move(key), std::move(g)).first;
    if (timeout_ns_ && n_ > 1) SLUICE_SDK_RETURN_IF_ERROR(arm(ctx, it->second));
  }
  it->second.items.push_back(Value::borrow(x));
  if (static_cast<int64_t>(it->second.items.size()) < n_) return {};
  if (timeout_ns_ && n_ > 1) ctx.timer_cancel(it->second.seq);
  return flush(ctx, it);
}

Status Partition::flush(Context ctx, group_map::iterator it) {
  // Forget the group before emitting, so the node is consistent whatever emit returns.
  const Value key = it->first;
  const Value group = Value::array(it->second.items);
  by_seq_.erase(it->second.seq);
  groups_.erase(it);
  sl_message m{};
  m.value = group.raw();
  m.key = key_fn_ ? key.raw() : sl_null();
  m.headers = sl_null();
  m.timestamp_ns = SL_NO_TIMESTAMP;
  return ctx.emit(m);
}

Status Partition::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (key_fn_) {
    SLUICE_SDK_RETURN_IF_ERROR(element_keys(key_fn_, batch, in_, keys_));
  } else {
    keys_.assign(batch.size(), Value());  // one group, under the null key
  }
  size_t i = 0;
  Status st;
  for (const sl_message& m : batch) {
    st = add(ctx, std::move(keys_[i++]), m.value);
    if (!st.is_ok()) break;
  }
  keys_.clear();
  return st;
}

Status Partition::on_timer(Context ctx, uint64_t timer_id) {
  auto seq = by_seq_.find(timer_id);
  if (seq == by_seq_.end()) return {};  // the group filled up meanwhile
  return flush(ctx, groups_.find(seq->second));
}

Status Partition::finish(Context ctx) {
  while (!by_seq_.empty()) {
    auto oldest = groups_.find(by_seq_.begin()->second);
    if (timeout_ns_) ctx.timer_cancel(oldest->second.seq);
    if (emit_partial_) {
      SLUICE_SDK_RETURN_IF_ERROR(flush(ctx, oldest));
    } else {
      by_seq_.erase(by_seq_.begin());
      groups_.erase(oldest);
    }
  }
  return {};
}

Result<Value> Partition::snapshot(Context /*ctx*/) {
  std::vector<Value> groups;
  groups.reserve(by_seq_.size());
  for (const auto& [seq, key] : by_seq_) {
    const Group& g = groups_.at(key);
    groups.push_back(Value::object({{"key", key},
                                    {"items", Value::array(g.items)},
                                    {"deadline_ns", Value::integer(g.deadline_ns)}}));
  }
  return Value::object({{"groups", Value::array(groups)}});
}

Status Partition::restore(Context ctx, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(Value groups, state_array(state, "groups", "partition"));
  groups_.clear();
  by_seq_.clear();
  for (size_t i = 0, n = groups.size(); i < n; ++i) {
    const Value g = groups[i];
    std::optional<Value> key = g.get("key");
    std::optional<Value> items = g.get("items");
    std::optional<Value> deadline = g.get("deadline_ns");
    if (!key || !items || !items->is_array() || !deadline || !deadline->is_int()) {
      return sdk::invalid_argument("partition: checkpoint group " + std::to_string(i) +
                                   " is not {key, items, deadline_ns}: " + preview(g));
    }
    Group group;
    group.seq = next_seq_++;
    group.items = items_of(*items);
    // A group saved without a timeout gets a full one from now if the config now has one.
    group.deadline_ns = deadline->as_int();
    if (timeout_ns_ && group.deadline_ns == 0) group.deadline_ns = ctx.now_ns() + *timeout_ns_;
    if (groups_.contains(*key)) {
      return sdk::invalid_argument("partition: checkpoint has two groups of key " + preview(*key));
    }
    by_seq_.emplace(group.seq, *key);
    groups_.emplace(std::move(*key), std::move(group));
  }
  return {};
}

// ---- partition_unique ---------------------------------------------------------------------

PartitionUnique::PartitionUnique(Context ctx, const Config& cfg)
    : n_(get_positive(cfg, "n")),
      keep_last_(cfg.get_choice("keep", {"first", "last"}) == 1),
      emit_partial_(cfg.get_bool("emit_partial")) {
  if (cfg.has("key")) key_fn_ = bind_callable(ctx, cfg, "key");
}

void PartitionUnique::hold(Value key, Value item) {
  auto it = where_.find(key);
  if (it != where_.end()) {
    if (!keep_last_) return;
    held_.erase(it->second);
    where_.erase(it);
  }
  held_.push_back(Held{key, std::move(item)});
  where_.emplace(std::move(key), std::prev(held_.end()));
}

Status PartitionUnique::flush(Context ctx) {
  std::vector<Value> items;
  items.reserve(held_.size());
  for (Held& h : held_) items.push_back(std::move(h.item));
  held_.clear();
  where_.clear();
  return ctx.emit(Value::array(items));
}

Status PartitionUnique::process(Context ctx, uint32_t /*input*/, Batch batch) {
  SLUICE_SDK_RETURN_IF_ERROR(element_keys(key_fn_, batch, in_, keys_));
  size_t i = 0;
  Status st;
  for (const sl_message& m : batch) {
    hold(std::move(keys_[i++]), Value::borrow(m.value));
    if (static_cast<int64_t>(held_.size()) == n_) {
      st = flush(ctx);
      if (!st.is_ok()) break;
    }
  }
  keys_.clear();
  return st;
}

Status PartitionUnique::finish(Context ctx) {
  if (!emit_partial_ || held_.empty()) return {};
  return flush(ctx);
}

Result<Value> PartitionUnique::snapshot(Context /*ctx*/) {
  std::vector<Value> held;
  held.reserve(held_.size());
  for (const Held& h : held_) held.push_back(Value::array({h.key, h.item}));
  return Value::object({{"held", Value::array(held)}});
}

Status PartitionUnique::restore(Context /*ctx*/, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(Value held, state_array(state, "held", "partition_unique"));
  held_.clear();
  where_.clear();
  for (size_t i = 0, n = held.size(); i < n; ++i) {
    const Value h = held[i];
    if (!h.is_array() || h.size() != 2) {
      return sdk::invalid_argument("partition_unique: checkpoint entry " + std::to_string(i) +
                                   " is not [key, element]: " + preview(h));
    }
    hold(h[0], h[1]);
  }
  return {};
}

// ---- sliding_window -----------------------------------------------------------------------

SlidingWindow::SlidingWindow(Context /*ctx*/, const Config& cfg)
    : n_(static_cast<size_t>(get_positive(cfg, "n"))),
      return_partial_(cfg.get_bool("return_partial")),
      emit_partial_(cfg.get_bool("emit_partial")) {}

SlidingWindow::~SlidingWindow() { clear(); }

void SlidingWindow::clear() noexcept {
  const sl_value* w = buf_.data() + (window_full() ? head_ : 0);
  for (size_t i = 0, size = window_size(); i < size; ++i) {
    if (sl_value_is_boxed(w[i])) sdk::host().value_release(w[i]);
  }
  buf_.clear();
  head_ = 0;
}

void SlidingWindow::fill(sl_value v) {
  if (buf_.size() + 1 == n_) buf_.reserve(2 * n_);  // may throw: nothing changed yet
  buf_.push_back(v);                                // may throw likewise
  if (sl_value_is_boxed(v)) sdk::host().value_retain(v);
  if (buf_.size() < n_) return;
  // The n-th element: the window becomes the mirrored ring (no allocation: reserved).
  for (size_t i = 0; i < n_; ++i) buf_.push_back(buf_[i]);
  head_ = 0;
}

Value SlidingWindow::window_array() const {
  return Value::adopt(
      sdk::host().array_create(buf_.data() + (window_full() ? head_ : 0), window_size()));
}

Status SlidingWindow::process(Context ctx, uint32_t /*input*/, Batch batch) {
  out_.clear();
  out_.resize(batch.size());  // nulls, replaced in order by the windows that go out
  size_t produced = 0;
  auto it = batch.begin();
  const auto end = batch.end();
  for (; it != end && !window_full(); ++it) {  // the first n - 1 elements ever
    push(it->value);
    if (window_full()) full_ = true;
    if (return_partial_ || window_full()) out_[produced++] = window_array();
  }
  if (it != end) {
    // The window is full: each element replaces the oldest (push() written out), and the
    // window goes out. The state is held in locals, which the host calls cannot change
    // (members they could, as far as the compiler knows, so it reloaded each one).
    const sl_host_api& h = sdk::host();
    const auto retain = h.value_retain;
    const auto release = h.value_release;
    const auto array_create = h.array_create;
    sl_value* const buf = buf_.data();
    const size_t n = n_;
    size_t head = head_;
    Value* const out = out_.data();
    for (; it != end; ++it) {
      const sl_value v = it->value;
      if (sl_value_is_boxed(buf[head])) release(buf[head]);
      if (sl_value_is_boxed(v)) retain(v);
      buf[head] = v;
      buf[head + n] = v;
      head = head + 1 == n ? 0 : head + 1;
      head_ = head;
      // Stored as the raw sl_value into the null Value (a Value is pointer-interconvertible
      // with its one sl_value member): a Value move-assignment here went through the stack
      // in pieces, and reading them back whole stalled store forwarding twice an element.
      *reinterpret_cast<sl_value*>(&out[produced++]) = array_create(buf + head, n);
    }
  }
  out_.resize(produced);
  if (out_.empty()) return {};
  Status st = ctx.emit_values(out_);
  out_.clear();
  return st;
}

Status SlidingWindow::finish(Context ctx) {
  if (!emit_partial_ || return_partial_ || full_ || buf_.empty()) return {};
  return ctx.emit(window_array());
}

Result<Value> SlidingWindow::snapshot(Context /*ctx*/) {
  return Value::object({{"window", window_array()}, {"full", Value::boolean(full_)}});
}

Status SlidingWindow::restore(Context /*ctx*/, ValueRef state) {
  SLUICE_SDK_ASSIGN_OR_RETURN(Value window, state_array(state, "window", "sliding_window"));
  std::optional<Value> full = state.get("full");
  if (!full || !full->is_bool()) {
    return sdk::invalid_argument("sliding_window: checkpoint state has no 'full' bool: " +
                                 preview(state));
  }
  clear();
  for (const Value& v : items_of(window)) push(v.raw());  // keeps the last n_ (n may shrink)
  full_ = full->as_bool() || window_full();
  return {};
}

}  // namespace sluice::core_ops
