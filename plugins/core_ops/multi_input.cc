// zip, combine_latest, zip_latest, union and collect. Behaviour and the choices made where
// streamz is silent (end of input, bounds) are documented in each k_doc (multi_input.hpp).
#include <sluice/sluice.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "multi_input.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

/// The later of two event times (either may be SL_NO_TIMESTAMP).
int64_t later(int64_t a, int64_t b) noexcept {
  if (a == SL_NO_TIMESTAMP) return b;
  if (b == SL_NO_TIMESTAMP) return a;
  return std::max(a, b);
}

Held held_of(const sl_message& m) {
  return Held{Value::borrow(m.value), m.timestamp_ns, m.key_group};
}

/// Emits `values` (each with its parts' event time and key group, no key or headers) as one
/// batch and clears both vectors.
Status emit_all(Context ctx, std::vector<Value>& values, std::vector<Parts>& parts) {
  if (values.empty()) return {};
  std::vector<sl_message> messages(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    messages[i].value = values[i].raw();
    messages[i].key = sl_null();
    messages[i].headers = sl_null();
    messages[i].timestamp_ns = parts[i].time_ns;
    messages[i].key_group = parts[i].key_group;
  }
  Status st = ctx.emit(messages);
  values.clear();
  parts.clear();
  return st;
}

size_t maxsize_of(const Config& cfg) {
  const int64_t n = cfg.get_int("maxsize");
  if (n < 1) cfg.fail("maxsize", "must be at least 1 (got " + std::to_string(n) + ")");
  return static_cast<size_t>(n);
}

// --- state encoding: an element is [value, time] (time null when absent), or
// [value, time, key group] when it has one --------------------------------------------------

Value encode(const Held& h) {
  Value time = h.time_ns == SL_NO_TIMESTAMP ? Value() : Value::integer(h.time_ns);
  if (h.key_group == sdk::k_no_key_group) return Value::array({h.value, time});
  return Value::array({h.value, time, Value::integer(static_cast<int64_t>(h.key_group))});
}

Value encode(const std::deque<Held>& items) {
  std::vector<Value> out;
  out.reserve(items.size());
  for (const Held& h : items) out.push_back(encode(h));
  return Value::array(out);
}

Value encode(const std::vector<std::optional<Held>>& latest) {
  std::vector<Value> out;
  out.reserve(latest.size());
  for (const auto& h : latest) out.push_back(h ? encode(*h) : Value());
  return Value::array(out);
}

/// Throws INVALID_ARGUMENT "NODE restore: ..." for a state this version cannot read.
[[noreturn]] void bad_state(const char* type, const std::string& what) {
  throw sdk::Error(SL_INVALID_ARGUMENT, std::string(type) + ": cannot restore state: " + what);
}

Value field(const char* type, ValueRef state, const char* key) {
  std::optional<Value> v = state.get(key);
  if (!v || !v->is_array()) bad_state(type, std::string("no array '") + key + "'");
  return *v;
}

Held decode(const char* type, ValueRef pair) {
  if (!pair.is_array() || (pair.size() != 2 && pair.size() != 3)) {
    bad_state(type, "an element is not [value, time] or [value, time, key group]");
  }
  const Value t = pair[1];
  if (!t.is_null() && !t.is_int()) bad_state(type, "an event time is not an int");
  uint64_t group = sdk::k_no_key_group;
  if (pair.size() == 3) {
    const Value g = pair[2];
    if (!g.is_int() || g.as_int() < 0) bad_state(type, "a key group is not an int >= 0");
    group = static_cast<uint64_t>(g.as_int());
  }
  return Held{pair[0], t.is_null() ? SL_NO_TIMESTAMP : t.as_int(), group};
}

std::deque<Held> decode_deque(const char* type, ValueRef items) {
  std::deque<Held> out;
  for (size_t i = 0; i < items.size(); ++i) out.push_back(decode(type, items[i]));
  return out;
}

std::vector<std::optional<Held>> decode_latest(const char* type, ValueRef items, size_t n) {
  if (items.size() != n) {
    bad_state(type, "it has " + std::to_string(items.size()) + " inputs, the node has " +
                        std::to_string(n));
  }
  std::vector<std::optional<Held>> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Value item = items[i];
    if (!item.is_null()) out[i] = decode(type, item);
  }
  return out;
}

}  // namespace

void Parts::add(const Held& h) noexcept {
  time_ns = later(time_ns, h.time_ns);
  key_group = empty || key_group == h.key_group ? h.key_group : sdk::k_no_key_group;
  empty = false;
}

// --- zip -------------------------------------------------------------------------------------

void Zip::validate(const Config& cfg) {
  const uint32_t n = cfg.input_count();
  const Value literals = cfg.get_array("literals");
  const size_t width = n + literals.size();
  std::vector<int64_t> taken;
  for (size_t i = 0; i < literals.size(); ++i) {
    const Value lit = literals[i];
    const std::string where = "item " + std::to_string(i);
    std::optional<Value> at = lit.get("at");
    std::optional<Value> value = lit.get("value");
    if (!lit.is_object() || !at || !value || lit.size() != 2) {
      cfg.fail("literals", where + " must be a table { at = POSITION, value = V }");
    }
    if (!at->is_int() || at->as_int() < 0 || at->as_int() >= static_cast<int64_t>(width)) {
      cfg.fail("literals", where + ": 'at' must be a position from 0 to " +
                               std::to_string(width - 1) + " (the output has " +
                               std::to_string(width) + " items: " + std::to_string(n) +
                               " inputs and " + std::to_string(literals.size()) + " literals)");
    }
    if (std::find(taken.begin(), taken.end(), at->as_int()) != taken.end()) {
      cfg.fail("literals", where + ": position " + std::to_string(at->as_int()) + " is taken");
    }
    taken.push_back(at->as_int());
  }
}

Zip::Zip(Context /*ctx*/, const Config& cfg) : maxsize_(maxsize_of(cfg)) {
  validate(cfg);  // the literals' shape and positions: what follows only reads them
  const uint32_t n = cfg.input_count();
  const Value literals = cfg.get_array("literals");
  for (size_t i = 0; i < literals.size(); ++i) {
    const Value lit = literals[i];
    literals_.emplace_back(static_cast<size_t>(lit.get("at")->as_int()), *lit.get("value"));
  }
  std::sort(literals_.begin(), literals_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  buffers_.resize(n);
  ended_.assign(n, false);
  paused_.assign(n, false);
  reported_depth_.assign(n, SIZE_MAX);
}

Status Zip::start(Context ctx) {
  for (uint32_t i = 0; i < buffers_.size(); ++i) update_backpressure(ctx, i);  // after restore
  return {};
}

void Zip::update_backpressure(Context ctx, uint32_t input) {
  // Also reports the input's buffer length, when it changed (once per batch at most).
  if (reported_depth_[input] != buffers_[input].size()) {
    reported_depth_[input] = buffers_[input].size();
    ctx.gauge_set("queue_depth", "input=" + std::to_string(input),
                  static_cast<double>(buffers_[input].size()));
  }
  const bool full = !exhausted_ && buffers_[input].size() >= maxsize_;
  if (paused_[input] == full) return;
  paused_[input] = full;
  ctx.set_input_backpressure(input, full);
}

void Zip::exhaust(Context ctx) {
  exhausted_ = true;
  for (auto& b : buffers_) {
    dropped_ += b.size();
    b.clear();
  }
  for (uint32_t i = 0; i < buffers_.size(); ++i) update_backpressure(ctx, i);
}

Status Zip::process(Context ctx, uint32_t input, Batch batch) {
  if (exhausted_) {
    dropped_ += batch.size();
    return {};
  }
  const size_t width = buffers_.size() + literals_.size();
  for (const sl_message& m : batch) {
    if (exhausted_) {
      ++dropped_;
      continue;
    }
    buffers_[input].push_back(held_of(m));
    if (!std::all_of(buffers_.begin(), buffers_.end(), [](const auto& b) { return !b.empty(); })) {
      continue;
    }
    std::vector<Value> items;
    items.reserve(width);
    Parts parts;
    auto lit = literals_.begin();
    size_t next_input = 0;
    for (size_t pos = 0; pos < width; ++pos) {
      if (lit != literals_.end() && lit->first == pos) {
        items.push_back((lit++)->second);
        continue;
      }
      Held& h = buffers_[next_input++].front();
      parts.add(h);
      items.push_back(std::move(h.value));
    }
    for (auto& b : buffers_) b.pop_front();
    out_values_.push_back(Value::array(items));
    out_parts_.push_back(parts);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      if (ended_[i] && buffers_[i].empty()) {
        exhaust(ctx);  // like Python's zip: the shortest input ends it
        break;
      }
    }
  }
  for (uint32_t i = 0; i < buffers_.size(); ++i) update_backpressure(ctx, i);
  return emit_all(ctx, out_values_, out_parts_);
}

Status Zip::on_input_end(Context ctx, uint32_t input) {
  ended_[input] = true;
  if (!exhausted_ && buffers_[input].empty()) exhaust(ctx);
  return {};
}

Status Zip::finish(Context ctx) {
  if (!exhausted_) exhaust(ctx);
  if (dropped_ > 0) {
    ctx.log_info("zip: " + std::to_string(dropped_) +
                 " elements had no partner: an input ended before them (dropped, as Python's "
                 "zip stops at the shortest input)");
  }
  return {};
}

Result<Value> Zip::snapshot(Context /*ctx*/) {
  std::vector<Value> buffers;
  buffers.reserve(buffers_.size());
  for (const auto& b : buffers_) buffers.push_back(encode(b));
  return Value::object({{"buffers", Value::array(buffers)}});
}

Status Zip::restore(Context /*ctx*/, ValueRef state) {
  const Value buffers = field(k_name, state, "buffers");
  if (buffers.size() != buffers_.size()) {
    bad_state(k_name, "it has " + std::to_string(buffers.size()) + " inputs, the node has " +
                          std::to_string(buffers_.size()));
  }
  for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i] = decode_deque(k_name, buffers[i]);
  return {};
}

// --- combine_latest --------------------------------------------------------------------------

void CombineLatest::validate(const Config& cfg) {
  if (std::optional<Value> on = cfg.find_value("emit_on")) {
    if (on->is_array()) {
      if (on->size() == 0) cfg.fail("emit_on", "must name at least one input");
      for (size_t i = 0; i < on->size(); ++i)
        static_cast<void>(cfg.input_index("emit_on", (*on)[i]));
    } else {
      static_cast<void>(cfg.input_index("emit_on", *on));
    }
  }
}

CombineLatest::CombineLatest(Context /*ctx*/, const Config& cfg)
    : hold_early_(cfg.get_bool("hold_early")), maxsize_(maxsize_of(cfg)) {
  const uint32_t n = cfg.input_count();
  if (std::optional<Value> on = cfg.find_value("emit_on")) {
    emit_on_.assign(n, false);
    if (on->is_array()) {
      if (on->size() == 0) cfg.fail("emit_on", "must name at least one input");
      for (size_t i = 0; i < on->size(); ++i) emit_on_[cfg.input_index("emit_on", (*on)[i])] = true;
    } else {
      emit_on_[cfg.input_index("emit_on", *on)] = true;
    }
  } else {
    emit_on_.assign(n, true);
  }
  latest_.resize(n);
  missing_ = n;
  paused_.assign(n, false);
}

Status CombineLatest::start(Context ctx) {
  update_backpressure(ctx);
  return {};
}

void CombineLatest::update_backpressure(Context ctx) {
  const bool holding_too_many = hold_early_ && !dead_ && missing_ > 0 && held_.size() >= maxsize_;
  for (uint32_t i = 0; i < latest_.size(); ++i) {
    const bool pause = holding_too_many && latest_[i].has_value();
    if (paused_[i] == pause) continue;
    paused_[i] = pause;
    ctx.set_input_backpressure(i, pause);
  }
}

void CombineLatest::combine() {
  std::vector<Value> items;
  items.reserve(latest_.size());
  Parts parts;
  for (const auto& h : latest_) {
    items.push_back(h->value);
    parts.add(*h);
  }
  out_values_.push_back(Value::array(items));
  out_parts_.push_back(parts);
}

void CombineLatest::arrive(uint32_t input, Held item) {
  if (missing_ == 0) {
    latest_[input] = std::move(item);
    if (emit_on_[input]) combine();
    return;
  }
  const bool first = !latest_[input].has_value();
  if (!hold_early_) {  // streamz: remember it, emit nothing until every input has a value
    latest_[input] = std::move(item);
    if (first) --missing_;
    if (missing_ == 0 && emit_on_[input]) combine();
    return;
  }
  if (!(first && missing_ == 1)) {
    if (first) {
      latest_[input] = item;  // marks the input as having a value
      --missing_;
    }
    held_.emplace_back(input, std::move(item));
    return;
  }
  // The last missing input completes the set: start from every input's first element and
  // replay the held arrivals in order.
  std::vector<std::optional<Held>> first_values(latest_.size());
  for (const auto& [j, h] : held_) {
    if (!first_values[j]) first_values[j] = h;
  }
  for (size_t j = 0; j < latest_.size(); ++j) {
    if (!first_values[j]) first_values[j] = latest_[j];  // (also covers a held_ cut short)
  }
  first_values[input] = item;
  latest_ = std::move(first_values);
  missing_ = 0;
  for (auto& [j, h] : held_) {
    latest_[j] = std::move(h);
    if (emit_on_[j]) combine();
  }
  held_.clear();
  if (emit_on_[input]) combine();
}

Status CombineLatest::process(Context ctx, uint32_t input, Batch batch) {
  if (dead_) return {};
  for (const sl_message& m : batch) arrive(input, held_of(m));
  update_backpressure(ctx);
  return emit_all(ctx, out_values_, out_parts_);
}

Status CombineLatest::on_input_end(Context ctx, uint32_t input) {
  if (!latest_[input] && !dead_) {
    dead_ = true;  // it can never have a value: nothing can be combined any more
    if (!held_.empty()) {
      ctx.log_info("combine_latest: input " + std::to_string(input) +
                   " ended before it had an element; " + std::to_string(held_.size()) +
                   " held arrivals dropped");
    }
    held_.clear();
    update_backpressure(ctx);
  }
  return {};
}

Result<Value> CombineLatest::snapshot(Context /*ctx*/) {
  std::vector<Value> held;
  held.reserve(held_.size());
  for (const auto& [j, h] : held_) {
    held.push_back(Value::array({Value::integer(j), encode(h)}));
  }
  return Value::object({{"latest", encode(latest_)}, {"held", Value::array(held)}});
}

Status CombineLatest::restore(Context /*ctx*/, ValueRef state) {
  latest_ = decode_latest(k_name, field(k_name, state, "latest"), latest_.size());
  missing_ = static_cast<size_t>(
      std::count_if(latest_.begin(), latest_.end(), [](const auto& h) { return !h.has_value(); }));
  const Value held = field(k_name, state, "held");
  held_.clear();
  for (size_t i = 0; i < held.size(); ++i) {
    const Value entry = held[i];
    const Value j = entry[0];
    if (!entry.is_array() || entry.size() != 2 || !j.is_int() || j.as_int() < 0 ||
        j.as_int() >= static_cast<int64_t>(latest_.size())) {
      bad_state(k_name, "a held arrival is not [input, [value, time]]");
    }
    held_.emplace_back(static_cast<uint32_t>(j.as_int()), decode(k_name, entry[1]));
  }
  return {};
}

// --- zip_latest ------------------------------------------------------------------------------

void ZipLatest::validate(const Config& cfg) {
  static_cast<void>(cfg.input_index("lossless", cfg.get_value("lossless")));
}

ZipLatest::ZipLatest(Context /*ctx*/, const Config& cfg)
    : lossless_(cfg.input_index("lossless", cfg.get_value("lossless"))), maxsize_(maxsize_of(cfg)) {
  latest_.resize(cfg.input_count());
  missing_ = latest_.size() - 1;
}

Status ZipLatest::start(Context ctx) {
  update_backpressure(ctx);
  return {};
}

void ZipLatest::update_backpressure(Context ctx) {
  const bool full = !dead_ && missing_ > 0 && buffer_.size() >= maxsize_;
  if (paused_ == full) return;
  paused_ = full;
  ctx.set_input_backpressure(lossless_, full);
}

void ZipLatest::emit_one(const Held& lossless) {
  std::vector<Value> items;
  items.reserve(latest_.size());
  Parts parts;
  for (uint32_t i = 0; i < latest_.size(); ++i) {
    if (i == lossless_) {
      items.push_back(lossless.value);
      parts.add(lossless);
    } else {
      items.push_back(latest_[i]->value);
      parts.add(*latest_[i]);
    }
  }
  out_values_.push_back(Value::array(items));
  out_parts_.push_back(parts);
}

Status ZipLatest::process(Context ctx, uint32_t input, Batch batch) {
  for (const sl_message& m : batch) {
    if (input == lossless_) {
      if (missing_ == 0) {
        emit_one(held_of(m));
      } else if (dead_) {
        ++dropped_;
      } else {
        buffer_.push_back(held_of(m));
      }
      continue;
    }
    const bool first = !latest_[input].has_value();
    latest_[input] = held_of(m);
    if (first && --missing_ == 0) {
      for (const Held& h : buffer_) emit_one(h);  // each with the latest values now
      buffer_.clear();
    }
  }
  update_backpressure(ctx);
  return emit_all(ctx, out_values_, out_parts_);
}

Status ZipLatest::on_input_end(Context ctx, uint32_t input) {
  if (input != lossless_ && !latest_[input] && !dead_) {
    dead_ = true;  // the lossless elements can never be paired
    dropped_ += buffer_.size();
    buffer_.clear();
    update_backpressure(ctx);
  }
  return {};
}

Status ZipLatest::finish(Context ctx) {
  dropped_ += buffer_.size();
  buffer_.clear();
  if (dropped_ > 0) {
    ctx.log_info("zip_latest: " + std::to_string(dropped_) +
                 " lossless elements dropped: another input never had an element");
  }
  return {};
}

Result<Value> ZipLatest::snapshot(Context /*ctx*/) {
  return Value::object({{"latest", encode(latest_)}, {"buffer", encode(buffer_)}});
}

Status ZipLatest::restore(Context /*ctx*/, ValueRef state) {
  latest_ = decode_latest(k_name, field(k_name, state, "latest"), latest_.size());
  latest_[lossless_].reset();
  missing_ = 0;
  for (uint32_t i = 0; i < latest_.size(); ++i) {
    if (i != lossless_ && !latest_[i]) ++missing_;
  }
  buffer_ = decode_deque(k_name, field(k_name, state, "buffer"));
  return {};
}

// --- union -----------------------------------------------------------------------------------

Status Union::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (batch.contiguous()) return ctx.emit(batch.messages());
  copy_.assign(batch.begin(), batch.end());
  return ctx.emit(copy_);
}

// --- collect ---------------------------------------------------------------------------------

Collect::Collect(Context /*ctx*/, const Config& cfg)
    : maxsize_(maxsize_of(cfg)), flush_at_end_(cfg.get_bool("flush_at_end")) {}

Status Collect::start(Context ctx) {
  set_paused(ctx, cache_.size() >= maxsize_);
  return {};
}

void Collect::set_paused(Context ctx, bool paused) {
  paused = paused && !flush_ended_;
  if (paused_ == paused) return;
  paused_ = paused;
  ctx.set_input_backpressure(0, paused);
}

Status Collect::flush(Context ctx) {
  std::vector<Value> items;
  items.reserve(cache_.size());
  Parts parts;
  for (Held& h : cache_) {
    parts.add(h);
    items.push_back(std::move(h.value));
  }
  cache_.clear();
  set_paused(ctx, false);
  std::vector<Value> out{Value::array(items)};
  std::vector<Parts> all_parts{parts};
  return emit_all(ctx, out, all_parts);
}

Status Collect::process(Context ctx, uint32_t input, Batch batch) {
  if (input == 1) {
    for (size_t i = 0; i < batch.size(); ++i) SLUICE_SDK_RETURN_IF_ERROR(flush(ctx));
    return {};
  }
  for (const sl_message& m : batch) {
    cache_.push_back(held_of(m));
    if (cache_.size() > maxsize_) {
      cache_.pop_front();
      if (!warned_) {
        warned_ = true;
        ctx.log_warn("collect: more than maxsize = " + std::to_string(maxsize_) +
                     " elements arrived before a flush; the oldest are dropped");
      }
    }
  }
  set_paused(ctx, cache_.size() >= maxsize_);
  return {};
}

Status Collect::on_input_end(Context ctx, uint32_t input) {
  if (input == 1) {
    flush_ended_ = true;
    set_paused(ctx, false);
  }
  return {};
}

Status Collect::finish(Context ctx) {
  if (flush_at_end_ && !cache_.empty()) return flush(ctx);
  return {};
}

Result<Value> Collect::snapshot(Context /*ctx*/) {
  return Value::object({{"cache", encode(cache_)}});
}

Status Collect::restore(Context /*ctx*/, ValueRef state) {
  cache_ = decode_deque(k_name, field(k_name, state, "cache"));
  return {};
}

}  // namespace sluice::core_ops
