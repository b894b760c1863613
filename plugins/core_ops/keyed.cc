// key_by and aggregate (keyed.hpp).
#include "keyed.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "elementwise.hpp"
#include "functions.hpp"
#include "map_filter.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

constexpr uint64_t k_sweep_timer = 1;
constexpr int64_t k_state_version = 1;

[[noreturn]] void bad_state(const std::string& what, ValueRef state) {
  throw sdk::Error(SL_INVALID_ARGUMENT,
                   "aggregate: checkpoint state " + what + ": " + preview(state));
}

}  // namespace

// ---- shared by the keyed operators (keyed_state.hpp) -----------------------------------

Value owned_key(ValueRef key) {
  if (key.is_string()) return Value::string(key.as_str());
  if (key.is_bytes()) return Value::bytes(key.as_str());
  return Value::borrow(key);
}

std::string_view function_name(const Value& spec) {
  if (spec.is_string()) return spec.as_str();
  if (!spec.is_object()) return {};
  const std::optional<Value> name = spec.get("name");
  // The view stays valid: `spec` (the node's config) holds the name's block.
  return name && name->is_string() ? name->as_str() : std::string_view();
}

std::optional<uint64_t> parse_key_group(std::string_view name) {
  if (name.empty()) return std::nullopt;
  uint64_t id = 0;
  for (char c : name) {
    if (c < '0' || c > '9' || id > (UINT64_MAX - 9) / 10) return std::nullopt;
    id = id * 10 + static_cast<uint64_t>(c - '0');
  }
  return id;
}

Reducer::Reducer(Context ctx, const Config& cfg) : fn_(bind_callable(ctx, cfg, "function")) {
  if (std::optional<Value> start = cfg.find_value("start")) {
    start_ = std::move(*start);
    has_start_ = true;
  }
  const std::string_view name = function_name(cfg.get_value("function"));
  if (name == Count::k_name) fast_ = Fast::count;
  if (name == Sum::k_name) fast_ = Fast::sum;
}

// ---- key_by -------------------------------------------------------------------------------

KeyBy::KeyBy(Context ctx, const Config& cfg) : fn_(bind_element_function(ctx, cfg, "function")) {}

Status KeyBy::process(Context ctx, uint32_t /*input*/, Batch batch) {
  batch.gather_values(in_);  // borrowed from the batch
  keys_.clear();
  keys_.resize(batch.size());  // null slots, as map_keys expects
  SLUICE_SDK_RETURN_IF_ERROR(map_keys(ctx, in_, keys_));
  messages_.clear();
  messages_.reserve(batch.size());
  size_t i = 0;
  for (const sl_message& m : batch) {
    sl_message& out = messages_.emplace_back(m);  // value, headers, time, key group kept
    out.key = keys_[i++].raw();                   // owned by keys_ until the emit returned
  }
  Status st = ctx.emit(messages_);
  keys_.clear();
  return st;
}

Status KeyBy::map_keys(Context /*ctx*/, std::span<const sl_value> in, std::span<Value> out) {
  return fn_.call_batch(in, out);
}

// ---- aggregate ----------------------------------------------------------------------------

Aggregate::Aggregate(Context ctx, const Config& cfg) : reducer_(ctx, cfg) {
  if (cfg.has("ttl_ms")) {
    const int64_t ms = cfg.get_duration("ttl_ms").count();
    if (ms < 1) cfg.fail("ttl_ms", "must be at least 1 (got " + std::to_string(ms) + ")");
    ttl_ns_ = ms * 1'000'000;
  }
}

Aggregate::Group& Aggregate::group(uint64_t key_group) {
  if (last_group_ == nullptr || key_group != last_group_id_) {
    last_group_ = &groups_[key_group];  // node-based: the reference survives rehashing
    last_group_id_ = key_group;
  }
  return *last_group_;
}

Status Aggregate::process(Context ctx, uint32_t /*input*/, Batch batch) {
  out_.clear();
  messages_.clear();
  messages_.reserve(batch.size());
  const int64_t now = ttl_ns_ != 0 ? ctx.now_ns() : 0;
  Status failed;
  for (const sl_message& m : batch) {
    if (m.key.kind == SL_KIND_NULL) {
      failed = sdk::invalid_argument(
          "aggregate: the message has no key (set one with key_by before aggregate; a "
          "Kafka record without a key has none)");
      break;
    }
    const ValueRef x(m.value);
    Group& g = group(m.key_group);
    auto it = g.find(ValueRef(m.key));
    const bool fresh = it == g.end() || (ttl_ns_ != 0 && now - it->second.seen_ns >= ttl_ns_);
    if (fresh) {
      // A new key, or one idle past ttl_ms that the sweep has not dropped yet: it starts
      // again. A failed first step leaves no trace of the key.
      Result<Value> first = reducer_.first(x);
      if (!first.is_ok()) {
        failed = first.status();
        break;
      }
      Value acc = std::move(first).value();
      if (it == g.end()) {
        it = g.emplace(owned_key(ValueRef(m.key)), Entry{std::move(acc), now}).first;
      } else {
        it->second.acc = std::move(acc);
      }
    } else {
      failed = reducer_.step(it->second.acc, x);
      if (!failed.is_ok()) break;
    }
    it->second.seen_ns = now;
    sl_message& out = messages_.emplace_back(m);  // key, headers, time, key group kept
    out.value = it->second.acc.raw();
    // A boxed state is kept alive until the emit returned: a later message of the same
    // key in this batch replaces the entry's reference.
    if (sl_value_is_boxed(out.value)) out_.push_back(it->second.acc);
  }
  if (ttl_ns_ != 0 && !sweep_armed_ && !messages_.empty()) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_sweep_timer, std::chrono::nanoseconds(ttl_ns_)));
    sweep_armed_ = true;
  }
  // What was computed before a failure goes out (the state already holds it); then the
  // failure, which the node's on_error handles (the host retries message by message).
  Status st = messages_.empty() ? Status() : ctx.emit(messages_);
  out_.clear();
  if (!st.is_ok()) return st;
  return failed;
}

Status Aggregate::start(Context ctx) {
  // Restored keys are dropped on time even when no message comes.
  if (ttl_ns_ == 0 || sweep_armed_) return {};
  for (const auto& [id, g] : groups_) {
    if (g.empty()) continue;
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_sweep_timer, std::chrono::nanoseconds(ttl_ns_)));
    sweep_armed_ = true;
    break;
  }
  return {};
}

Status Aggregate::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id != k_sweep_timer) return {};
  sweep_armed_ = false;
  return sweep(ctx, ctx.now_ns());
}

Status Aggregate::sweep(Context ctx, int64_t now_ns) {
  // A key idle for ttl_ms is already treated as new by process, so the sweep only frees
  // memory: once per ttl_ms, a key goes at most 2 x ttl_ms after its last message.
  bool any = false;
  int64_t oldest = now_ns;
  for (auto& [id, g] : groups_) {
    for (auto it = g.begin(); it != g.end();) {
      if (now_ns - it->second.seen_ns >= ttl_ns_) {
        it = g.erase(it);
      } else {
        oldest = std::min(oldest, it->second.seen_ns);
        any = true;
        ++it;
      }
    }
  }
  if (!any) return {};
  // Next sweep when the oldest remaining key expires.
  sweep_armed_ = true;
  return ctx.timer_start(k_sweep_timer, std::chrono::nanoseconds(oldest + ttl_ns_ - now_ns));
}

Result<Value> Aggregate::snapshot(Context /*ctx*/) {
  // {"version": 1, "groups": {"<key group>": {"keys": [...], "states": [...],
  //  "seen_ns": [...] (with ttl_ms)}}}: columns rather than one pair per key, so that a
  // group of a million keys is three arrays (fast to write and to restore), and each
  // group one entry the host can move alone. Keys keep their kind (bytes stay bytes).
  std::vector<std::string> names;
  std::vector<Value> tables;
  names.reserve(groups_.size());
  tables.reserve(groups_.size());
  std::vector<Value> keys;
  std::vector<Value> states;
  std::vector<Value> seen;
  for (const auto& [id, g] : groups_) {
    if (g.empty()) continue;
    keys.clear();
    states.clear();
    seen.clear();
    keys.reserve(g.size());
    states.reserve(g.size());
    for (const auto& [key, entry] : g) {
      keys.push_back(key);
      states.push_back(entry.acc);
      if (ttl_ns_ != 0) seen.push_back(Value::integer(entry.seen_ns));
    }
    std::vector<std::pair<std::string_view, Value>> columns{{"keys", Value::array(keys)},
                                                            {"states", Value::array(states)}};
    if (ttl_ns_ != 0) columns.emplace_back("seen_ns", Value::array(seen));
    names.push_back(std::to_string(id));
    tables.push_back(Value::object(columns));
  }
  std::vector<std::pair<std::string_view, Value>> entries;
  entries.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) entries.emplace_back(names[i], std::move(tables[i]));
  return Value::object(
      {{"version", Value::integer(k_state_version)}, {"groups", Value::object(entries)}});
}

Status Aggregate::restore(Context ctx, ValueRef state) {
  const std::optional<Value> version = state.get("version");
  if (!version || !version->is_int() || version->as_int() != k_state_version) {
    bad_state("has no \"version\": 1 (written by another version of aggregate?)", state);
  }
  const std::optional<Value> groups = state.get("groups");
  if (!groups || !groups->is_object()) bad_state("has no 'groups' object", state);
  // Parsed aside first: a bad group leaves the state as it was.
  std::unordered_map<uint64_t, Group> restored;
  const int64_t now = ttl_ns_ != 0 ? ctx.now_ns() : 0;
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string_view name = groups->key_at(i);
    const std::optional<uint64_t> id = parse_key_group(name);
    if (!id) {
      bad_state("has a key group that is not a number (\"" + std::string(name) + "\")", state);
    }
    restored[*id] = parse_group(name, (*groups)[i], now);
  }
  groups_ = std::move(restored);
  last_group_ = nullptr;
  return {};
}

Aggregate::Group Aggregate::parse_group(std::string_view name, ValueRef table,
                                        int64_t now_ns) const {
  const std::optional<Value> keys = table.get("keys");
  const std::optional<Value> states = table.get("states");
  const std::optional<Value> seen = table.get("seen_ns");
  if (!keys || !states || !keys->is_array() || !states->is_array() ||
      keys->size() != states->size() ||
      (seen && (!seen->is_array() || seen->size() != keys->size()))) {
    bad_state(
        "group " + std::string(name) + " is not {keys, states[, seen_ns]} arrays of one length",
        table);
  }
  Group g;
  g.reserve(keys->size());
  for (size_t k = 0; k < keys->size(); ++k) {
    Value key = (*keys)[k];
    if (key.is_null()) bad_state("group " + std::string(name) + " has a null key", table);
    // Without seen_ns (written without ttl_ms), a key's idle time starts now.
    int64_t seen_ns = now_ns;
    if (ttl_ns_ != 0 && seen) {
      const Value t = (*seen)[k];
      if (!t.is_int()) bad_state("group " + std::string(name) + " has a seen_ns not an int", table);
      seen_ns = t.as_int();
    }
    g.insert_or_assign(std::move(key), Entry{(*states)[k], seen_ns});
  }
  return g;
}

Status Aggregate::restore_group(Context ctx, uint32_t group, ValueRef state) {
  // Parsed before anything is replaced: a bad state leaves the group as it was.
  Group g;
  if (!state.is_null()) {
    g = parse_group(std::to_string(group), state, ttl_ns_ != 0 ? ctx.now_ns() : 0);
  }
  last_group_ = nullptr;
  if (g.empty()) {
    groups_.erase(group);
    return {};
  }
  groups_[group] = std::move(g);
  // Restored keys are dropped on time even when no message comes (start() armed the sweep
  // only for what was there then).
  if (ttl_ns_ != 0 && !sweep_armed_) {
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_sweep_timer, std::chrono::nanoseconds(ttl_ns_)));
    sweep_armed_ = true;
  }
  return {};
}

Status Aggregate::drop_group(Context /*ctx*/, uint32_t group) {
  last_group_ = nullptr;
  groups_.erase(group);
  return {};
}

}  // namespace sluice::core_ops
