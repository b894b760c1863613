// starmap, pluck, flatten, slice and unique.
#include <sluice/sluice.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "elementwise.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Function;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

Function bind_callable(Context ctx, const Config& cfg, std::string_view key) {
  return ctx.bind_function(cfg.get_value(key)).value();  // a failure is already on ctx
}

std::string preview(ValueRef value) {
  constexpr size_t k_max = 120;
  std::string text = value.to_json();
  if (text.size() > k_max) text = text.substr(0, k_max) + "...";
  return text;
}

namespace {

/// Int key `key` of `cfg`, which must be at least `min` when present.
std::optional<int64_t> find_int_at_least(const Config& cfg, std::string_view key, int64_t min) {
  std::optional<int64_t> v = cfg.find_int(key);
  if (v && *v < min) {
    cfg.fail(key, "must be " +
                      std::string(min == 0 ? "0 or more" : "at least " + std::to_string(min)) +
                      " (got " + std::to_string(*v) + ")");
  }
  return v;
}

}  // namespace

// ---- starmap ------------------------------------------------------------------------------

Starmap::Starmap(Context ctx, const Config& cfg) : fn_(bind_callable(ctx, cfg, "function")) {}

Status Starmap::process(Context ctx, uint32_t /*input*/, Batch batch) {
  out_.clear();
  out_.reserve(batch.size());
  for (const sl_message& m : batch) {
    const ValueRef x(m.value);
    if (!x.is_array()) {
      return sdk::invalid_argument("starmap: element must be an array of arguments (got " +
                                   std::string(x.kind_name()) + ": " + preview(x) + ")");
    }
    const size_t n = x.size();
    items_.clear();
    argv_.clear();
    for (size_t i = 0; i < n; ++i) {
      items_.push_back(x[i]);
      argv_.push_back(items_.back().raw());
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(Value y, fn_.call(std::span<const sl_value>(argv_)));
    out_.push_back(std::move(y));
  }
  items_.clear();
  Status st = ctx.emit_mapped(batch, std::span<const Value>(out_));
  out_.clear();
  return st;
}

// ---- pluck --------------------------------------------------------------------------------

void Pluck::validate(const Config& cfg) {
  const Value pick = cfg.get_value("pick");
  auto check = [&](const Value& p, const std::string& where) {
    if (!p.is_string() && !p.is_int()) {
      cfg.fail("pick", where + "must be a key (string) or an index (int) (got " +
                           std::string(p.kind_name()) + ")");
    }
  };
  if (pick.is_array()) {
    for (size_t i = 0; i < pick.size(); ++i) check(pick[i], "item " + std::to_string(i) + " ");
  } else {
    check(pick, "");
  }
}

Pluck::Pluck(Context /*ctx*/, const Config& cfg) {
  validate(cfg);
  const Value pick = cfg.get_value("pick");
  many_ = pick.is_array();
  picks_ = many_ ? pick : Value::array({pick});
}

namespace {

/// x[p] for a string or int `p`, as Python indexes a dict or a list.
Result<Value> pick_one(ValueRef x, ValueRef p) {
  if (p.is_string()) {
    if (!x.is_object()) {
      return sdk::invalid_argument("pluck: cannot take key \"" + std::string(p.as_str()) +
                                   "\" of " + std::string(x.kind_name()) + " " + preview(x));
    }
    std::optional<Value> v = x.get(p.as_str());
    if (!v) {
      return sdk::invalid_argument("pluck: no key \"" + std::string(p.as_str()) + "\" in " +
                                   preview(x));
    }
    return std::move(*v);
  }
  if (!x.is_array()) {
    return sdk::invalid_argument("pluck: cannot take index " + std::to_string(p.as_int()) + " of " +
                                 std::string(x.kind_name()) + " " + preview(x));
  }
  const auto n = static_cast<int64_t>(x.size());
  const int64_t i = p.as_int() < 0 ? p.as_int() + n : p.as_int();
  if (i < 0 || i >= n) {
    return sdk::invalid_argument("pluck: index " + std::to_string(p.as_int()) +
                                 " is out of range for an array of " + std::to_string(n) +
                                 " items: " + preview(x));
  }
  return x[static_cast<size_t>(i)];
}

}  // namespace

Status Pluck::process(Context ctx, uint32_t /*input*/, Batch batch) {
  out_.clear();
  out_.reserve(batch.size());
  const size_t n = picks_.size();
  std::vector<Value> picked;
  for (const sl_message& m : batch) {
    if (!many_) {
      SLUICE_SDK_ASSIGN_OR_RETURN(Value v, pick_one(m.value, picks_[0]));
      out_.push_back(std::move(v));
      continue;
    }
    picked.clear();
    for (size_t i = 0; i < n; ++i) {
      SLUICE_SDK_ASSIGN_OR_RETURN(Value v, pick_one(m.value, picks_[i]));
      picked.push_back(std::move(v));
    }
    out_.push_back(Value::array(picked));
  }
  Status st = ctx.emit_mapped(batch, std::span<const Value>(out_));
  out_.clear();
  return st;
}

// ---- flatten ------------------------------------------------------------------------------

Flatten::Flatten(Context /*ctx*/, const Config& /*cfg*/) {}

Status Flatten::process(Context ctx, uint32_t /*input*/, Batch batch) {
  const sl_host_api& h = sdk::host();
  messages_.clear();
  for (const sl_message& m : batch) {
    const ValueRef x(m.value);
    if (!x.is_array()) {
      return sdk::invalid_argument("flatten: element must be an array (got " +
                                   std::string(x.kind_name()) + ": " + preview(x) + ")");
    }
    for (size_t i = 0, n = h.value_size(m.value); i < n; ++i) {
      sl_message& out = messages_.emplace_back(m);  // key, headers, timestamp borrowed from m
      out.value = h.value_at(m.value, i);           // borrowed from m's array
    }
  }
  if (messages_.empty()) return {};
  return ctx.emit(messages_);
}

// ---- slice --------------------------------------------------------------------------------

Slice::Slice(Context /*ctx*/, const Config& cfg)
    : start_(find_int_at_least(cfg, "start", 0).value_or(0)),
      end_(find_int_at_least(cfg, "end", 0).value_or(std::numeric_limits<int64_t>::max())),
      step_(find_int_at_least(cfg, "step", 1).value_or(1)) {}

Status Slice::process(Context ctx, uint32_t /*input*/, Batch batch) {
  return ctx.emit_selected(batch, [this](const sl_message& /*m*/) {
    if (position_ >= end_) return false;  // the position stays at the end
    const bool keep = position_ >= start_ && (position_ - start_) % step_ == 0;
    ++position_;
    return keep;
  });
}

Result<Value> Slice::snapshot(Context /*ctx*/) {
  return Value::object({{"position", Value::integer(position_)}});
}

Status Slice::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> pos = state.get("position");
  if (!pos || !pos->is_int() || pos->as_int() < 0) {
    return sdk::invalid_argument("slice: checkpoint state has no valid 'position': " +
                                 preview(state));
  }
  position_ = pos->as_int();
  return {};
}

// ---- unique -------------------------------------------------------------------------------

Unique::Unique(Context ctx, const Config& cfg)
    : maxsize_(find_int_at_least(cfg, "maxsize", 1).value_or(0)) {
  if (cfg.has("key")) key_fn_ = bind_callable(ctx, cfg, "key");
}

bool Unique::see(Value key) {
  auto it = where_.find(key);
  if (it != where_.end()) {
    lru_.splice(lru_.end(), lru_, it->second);  // now the most recent
    return false;
  }
  lru_.push_back(std::move(key));
  where_.emplace(lru_.back(), std::prev(lru_.end()));
  if (maxsize_ > 0 && lru_.size() > static_cast<size_t>(maxsize_)) {
    where_.erase(lru_.front());
    lru_.pop_front();
  }
  return true;
}

Status Unique::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (key_fn_) {
    batch.gather_values(in_);
    keys_.resize(batch.size());
    SLUICE_SDK_RETURN_IF_ERROR(key_fn_.call_batch(in_, keys_));
  }
  size_t i = 0;
  Status st = ctx.emit_selected(batch, [&](const sl_message& m) {
    Value key = key_fn_ ? std::move(keys_[i]) : Value::borrow(m.value);
    ++i;
    return see(std::move(key));
  });
  keys_.clear();
  return st;
}

Result<Value> Unique::snapshot(Context /*ctx*/) {
  std::vector<Value> keys(lru_.begin(), lru_.end());
  return Value::object({{"seen", Value::array(keys)}});
}

Status Unique::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> seen = state.get("seen");
  if (!seen || !seen->is_array()) {
    return sdk::invalid_argument("unique: checkpoint state has no 'seen' array: " + preview(state));
  }
  lru_.clear();
  where_.clear();
  // Oldest first: replaying them in order rebuilds the LRU order (and applies a smaller
  // maxsize, should the config have changed, by evicting the oldest).
  for (size_t i = 0, n = seen->size(); i < n; ++i) static_cast<void>(see((*seen)[i]));
  return {};
}

}  // namespace sluice::core_ops
