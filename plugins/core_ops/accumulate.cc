// accumulate and frequencies: running reductions over the whole input.
#include <sluice/sluice.hpp>

#include <optional>
#include <string>
#include <utility>

#include "elementwise.hpp"
#include "functions.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

// ---- accumulate ---------------------------------------------------------------------------

Accumulate::Accumulate(Context ctx, const Config& cfg)
    : fn_(bind_callable(ctx, cfg, "function")),
      returns_state_(cfg.get_bool("returns_state")),
      with_state_(cfg.get_bool("with_state")) {
  if (std::optional<Value> start = cfg.find_value("start")) {
    state_ = std::move(*start);
    has_state_ = true;
  }
  // count_by is this plugin's own function (names are unique across plugins), so it can be
  // called directly; a Lua function or any other name goes through the host as usual.
  const Value spec = cfg.get_value("function");
  if (!returns_state_ && !with_state_ && spec.is_object()) {
    const std::optional<Value> name = spec.get("name");
    // sum of two ints is added here (overflow, floats and errors still go to Sum::call).
    int_sum_ = name && name->is_string() && name->as_str() == Sum::k_name;
    if (name && name->is_string() && name->as_str() == CountBy::k_name) {
      const Value args = spec.get("args").value_or(Value::object({}));
      count_by_.emplace(sdk::Config(args, "node '" + std::string(ctx.node_id()) + "'"));
    }
  }
}

Status Accumulate::process_count_by(Context ctx, Batch batch) {
  for (const sl_message& m : batch) {
    const ValueRef x(m.value);
    if (!has_state_) {
      state_ = Value::borrow(x);
      has_state_ = true;
    } else {
      // One element per emit: once it returned, the state is usually ours alone again
      // (downstream did not keep it), and step updates it in place; if it is shared,
      // step copies it as the reducer always does.
      SLUICE_SDK_ASSIGN_OR_RETURN(std::optional<Value> next, count_by_->step(state_, x));
      if (next) state_ = std::move(*next);  // nullopt: state_ itself was updated in place
    }
    sl_message out = m;  // key, headers, timestamp borrowed from m
    out.value = state_.raw();
    if (Status st = ctx.emit(out); !st.is_ok()) return st;
  }
  return {};
}

size_t Accumulate::sum_ints(Batch batch, size_t from) {
  int64_t total = state_.raw().as.i;
  size_t i = from;
  for (; i < batch.size(); ++i) {
    const sl_message& m = batch[i];
    int64_t next = 0;
    if (m.value.kind != SL_KIND_INT || __builtin_add_overflow(total, m.value.as.i, &next)) break;
    total = next;
    sl_message& out = messages_.emplace_back(m);  // key, headers, timestamp borrowed from m
    out.value = sl_int(total);                    // an int: nothing to own
  }
  state_ = Value::integer(total);
  return i;
}

Status Accumulate::process(Context ctx, uint32_t /*input*/, Batch batch) {
  if (count_by_) return process_count_by(ctx, batch);
  out_.clear();
  messages_.clear();
  messages_.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (int_sum_ && has_state_ && state_.is_int()) {
      i = sum_ints(batch, i);  // as far as the elements are ints and the total fits
      if (i == batch.size()) break;
    }
    const sl_message& m = batch[i];
    const ValueRef x(m.value);
    Value result;
    if (!has_state_) {
      state_ = Value::borrow(x);
      has_state_ = true;
      result = Value::borrow(x);
    } else {
      SLUICE_SDK_ASSIGN_OR_RETURN(Value r, fn_.call(state_, x));
      if (returns_state_) {
        if (!r.is_array() || r.size() != 2) {
          return sdk::invalid_argument(
              "accumulate: with returns_state = true the function must return [new_state, "
              "emitted] (an array of 2 items), got " +
              std::string(r.kind_name()) + " " + preview(r));
        }
        state_ = r[0];
        result = r[1];
      } else {
        state_ = r;
        result = std::move(r);
      }
    }
    out_.push_back(with_state_ ? Value::array({state_, result}) : std::move(result));
    sl_message& out = messages_.emplace_back(m);  // key, headers, timestamp borrowed from m
    out.value = out_.back().raw();                // owned by out_ until the emit returned
  }
  Status st = ctx.emit(messages_);
  out_.clear();
  return st;
}

Result<Value> Accumulate::snapshot(Context /*ctx*/) {
  if (!has_state_) return Value::object({{"has_state", Value::boolean(false)}});
  return Value::object({{"has_state", Value::boolean(true)}, {"state", state_}});
}

Status Accumulate::restore(Context /*ctx*/, ValueRef state) {
  // has_state false: no element was seen and `start` was not given, so there is none yet.
  std::optional<Value> has = state.get("has_state");
  std::optional<Value> s = state.get("state");
  if (!has || !has->is_bool() || (has->as_bool() && !s)) {
    return sdk::invalid_argument("accumulate: checkpoint state is not {has_state, state}: " +
                                 preview(state));
  }
  has_state_ = has->as_bool();
  state_ = has_state_ ? std::move(*s) : Value();
  return {};
}

// ---- frequencies --------------------------------------------------------------------------

Frequencies::Frequencies(Context /*ctx*/, const Config& /*cfg*/) {}

void Frequencies::count(std::string key, int64_t n) {
  auto [it, fresh] = index_.try_emplace(key, counts_.size());
  if (fresh) {
    counts_.emplace_back(std::move(key), n);
  } else {
    counts_[it->second].second += n;
  }
}

Value Frequencies::table() const {
  std::vector<std::pair<std::string_view, Value>> entries;
  entries.reserve(counts_.size());
  for (const auto& [k, n] : counts_) entries.emplace_back(k, Value::integer(n));
  return Value::object(entries);
}

Status Frequencies::process(Context ctx, uint32_t /*input*/, Batch batch) {
  out_.clear();
  out_.reserve(batch.size());
  for (const sl_message& m : batch) {
    const ValueRef x(m.value);
    count(string_form(x), 1);  // the keys of count_by and to_string
    out_.push_back(table());
  }
  Status st = ctx.emit_mapped(batch, std::span<const Value>(out_));
  out_.clear();
  return st;
}

Result<Value> Frequencies::snapshot(Context /*ctx*/) {
  return Value::object({{"counts", table()}});
}

Status Frequencies::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> counts = state.get("counts");
  if (!counts || !counts->is_object()) {
    return sdk::invalid_argument("frequencies: checkpoint state has no 'counts' object: " +
                                 preview(state));
  }
  counts_.clear();
  index_.clear();
  for (size_t i = 0, n = counts->size(); i < n; ++i) {
    const Value c = (*counts)[i];
    if (!c.is_int()) {
      return sdk::invalid_argument("frequencies: checkpoint count of \"" +
                                   std::string(counts->key_at(i)) + "\" is not an int");
    }
    count(std::string(counts->key_at(i)), c.as_int());
  }
  return {};
}

}  // namespace sluice::core_ops
