// event_time (event_time.hpp).
#include "event_time.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <array>
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

constexpr uint64_t k_idle_timer = 1;
constexpr int64_t k_state_version = 1;
constexpr int64_t k_ns_per_ms = 1'000'000;

/// A DURATION key in ns, checked against the declared range here too (hosts before ABI 1.2
/// ignore constraints); 0 when absent.
int64_t duration_ns(const Config& cfg, std::string_view key, int64_t min_ms) {
  if (!cfg.has(key)) return 0;
  const int64_t ms = cfg.get_duration(key).count();
  if (ms < min_ms || ms > EventTime::k_max_duration_ms) {
    cfg.fail(key, "must be within " + std::to_string(min_ms) + ".." +
                      std::to_string(EventTime::k_max_duration_ms) + " (got " + std::to_string(ms) +
                      ")");
  }
  return ms * k_ns_per_ms;
}

/// a - b, or INT64_MIN when that is below the int64 range (b >= 0).
int64_t saturating_sub(int64_t a, int64_t b) noexcept {
  int64_t r = 0;
  return __builtin_sub_overflow(a, b, &r) ? INT64_MIN : r;
}
/// a + b, or INT64_MAX when that is above the int64 range (b >= 0).
int64_t saturating_add(int64_t a, int64_t b) noexcept {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/// Days from 1970-01-01 to y-m-d of the proleptic Gregorian calendar (Howard Hinnant's
/// days_from_civil).
constexpr int64_t days_from_civil(int64_t y, int64_t m, int64_t d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}
static_assert(days_from_civil(1970, 1, 1) == 0);
static_assert(days_from_civil(2000, 3, 1) == 11017);

constexpr int64_t days_in_month(int64_t y, int64_t m) noexcept {
  constexpr std::array<int64_t, 12> k_days{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : k_days[static_cast<size_t>(m - 1)];
}

/// An RFC 3339 date-time in ns since the epoch, or why it is not one.
struct Parsed {
  int64_t ns = 0;
  const char* error = nullptr;
};

/// Strict RFC 3339 (section 5.6): YYYY-MM-DD, 'T' (or 't', or a space, as its note
/// allows), hh:mm:ss, an optional fraction of any length (digits past ns are cut), and 'Z'
/// or a numeric offset +hh:mm / -hh:mm. A leap second (:60) counts as the next second.
Parsed parse_rfc3339(std::string_view s) {
  size_t at = 0;
  auto digits = [&](size_t n, int64_t& out) {
    if (at + n > s.size()) return false;
    out = 0;
    for (size_t i = 0; i < n; ++i) {
      const char c = s[at + i];
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    at += n;
    return true;
  };
  auto literal = [&](char c) {
    if (at >= s.size() || s[at] != c) return false;
    ++at;
    return true;
  };
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(4, year) || !literal('-') || !digits(2, month) || !literal('-') || !digits(2, day)) {
    return {0, "the date is not YYYY-MM-DD"};
  }
  if (at >= s.size() || (s[at] != 'T' && s[at] != 't' && s[at] != ' ')) {
    return {0, "the date is not followed by 'T' and a time"};
  }
  ++at;
  if (!digits(2, hour) || !literal(':') || !digits(2, minute) || !literal(':') ||
      !digits(2, second)) {
    return {0, "the time is not hh:mm:ss"};
  }
  if (month < 1 || month > 12) return {0, "the month is not 01 to 12"};
  if (day < 1 || day > days_in_month(year, month)) return {0, "the day is not in that month"};
  if (hour > 23 || minute > 59 || second > 60) return {0, "the time of day is out of range"};
  int64_t fraction_ns = 0;
  if (literal('.')) {
    const size_t first = at;
    int64_t scale = 100'000'000;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
      fraction_ns += (s[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == first) return {0, "the '.' of the seconds has no digits after it"};
  }
  int64_t offset_s = 0;
  if (literal('Z') || literal('z')) {
    // UTC
  } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
    const int64_t sign = s[at] == '-' ? -1 : 1;
    ++at;
    int64_t oh = 0, om = 0;
    if (!digits(2, oh) || !literal(':') || !digits(2, om) || oh > 23 || om > 59) {
      return {0, "the offset is not +hh:mm or -hh:mm"};
    }
    offset_s = sign * (oh * 3600 + om * 60);
  } else {
    return {0, "the time has no 'Z' or +hh:mm offset"};
  }
  if (at != s.size()) return {0, "there is text after the offset"};
  // Four-digit years keep these far inside the int64 range; only the ns can overflow.
  const int64_t seconds =
      days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  int64_t ns = 0;
  if (__builtin_mul_overflow(seconds, int64_t{1'000'000'000}, &ns) ||
      __builtin_add_overflow(ns, fraction_ns, &ns) || ns == INT64_MAX) {
    return {0, "it is outside the range of event times (years 1678 to 2262)"};
  }
  return {ns, nullptr};
}

[[noreturn]] void bad_state(const std::string& what, ValueRef state) {
  throw sdk::Error(SL_INVALID_ARGUMENT,
                   "event_time: checkpoint state " + what + ": " + preview(state));
}

/// The decimal key group of a snapshot's "groups"; throws on another name.
uint64_t group_id(std::string_view name, ValueRef state) {
  if (name.empty()) bad_state("has an empty key group name", state);
  uint64_t id = 0;
  for (char c : name) {
    if (c < '0' || c > '9' || id > (UINT64_MAX - 9) / 10) {
      bad_state("has a key group that is not a number (\"" + std::string(name) + "\")", state);
    }
    id = id * 10 + static_cast<uint64_t>(c - '0');
  }
  return id;
}

}  // namespace

void EventTime::validate(const Config& cfg) {
  if (cfg.has("path") && cfg.has("function")) {
    cfg.fail("path",
             "cannot be given with `function` (or `lua`): the event time comes from one of "
             "them; omit both to keep the time the messages have");
  }
}

EventTime::EventTime(Context ctx, const Config& cfg)
    : out_of_orderness_ns_(duration_ns(cfg, "max_out_of_orderness_ms", 0)),
      idle_ns_(duration_ns(cfg, "idle_timeout_ms", 1)),
      future_ns_(duration_ns(cfg, "max_future_ms", 1)) {
  validate(cfg);
  if (cfg.has("path")) {
    path_.emplace(cfg, "path");
    path_json_ = preview(cfg.get_value("path"));
    path_text_ = "the event time at path " + path_json_;
  } else if (cfg.has("function")) {
    fn_ = bind_element_function(ctx, cfg, "function");
    path_text_ = "the event time the function gave";
  }
}

EventTime::Partition& EventTime::partition(uint64_t key_group) {
  if (last_valid_ && parts_[last_].group == key_group) return parts_[last_];
  auto it = std::lower_bound(parts_.begin(), parts_.end(), key_group,
                             [](const Partition& p, uint64_t g) { return p.group < g; });
  if (it == parts_.end() || it->group != key_group) {
    it = parts_.insert(it, Partition{key_group, INT64_MIN, 0, true});
  }
  last_ = static_cast<size_t>(it - parts_.begin());
  last_valid_ = true;
  return *it;
}

Result<int64_t> EventTime::time_of(ValueRef t) const {
  if (t.is_int()) {
    int64_t ns = 0;
    if (__builtin_mul_overflow(t.raw().as.i, k_ns_per_ms, &ns)) {
      return sdk::out_of_range("event_time: " + path_text_ + ", " + std::to_string(t.raw().as.i) +
                               " ms, is outside the range of event times (years 1678 to 2262)");
    }
    return ns;
  }
  if (t.is_string()) {
    const Parsed p = parse_rfc3339(t.as_str());
    if (p.error == nullptr) return p.ns;
    return sdk::invalid_argument("event_time: " + path_text_ + ", " + preview(t) +
                                 ", is not an RFC 3339 date-time (such as "
                                 "\"2026-12-01T10:00:00Z\"): " +
                                 p.error);
  }
  return sdk::invalid_argument("event_time: " + path_text_ +
                               " must be an int (ms since the epoch) or an RFC 3339 string "
                               "(such as \"2026-12-01T10:00:00Z\"), got " +
                               std::string(t.kind_name()) + " " + preview(t));
}

Status EventTime::process(Context ctx, uint32_t /*input*/, Batch batch) {
  // One clock read per batch: delivery is synchronous, so it is when the source read them.
  const int64_t now = ctx.now_ns();
  const int64_t future_limit = future_ns_ != 0 ? saturating_add(now, future_ns_) : INT64_MAX;
  if (fn_) {
    batch.gather_values(in_);  // borrowed from the batch
    times_.clear();
    times_.resize(batch.size());  // null slots, as call_batch expects
    SLUICE_SDK_RETURN_IF_ERROR(fn_.call_batch(in_, times_));
  }
  messages_.clear();
  messages_.reserve(batch.size());
  late_.clear();
  Status failed;
  size_t i = 0;
  for (const sl_message& m : batch) {
    int64_t t = m.timestamp_ns;
    if (fn_) {
      Result<int64_t> r = time_of(times_[i]);
      if (!r.is_ok()) {
        failed = std::move(r).status();
        break;
      }
      t = *r;
    } else if (path_) {
      const std::optional<Value> at = path_->lookup(ValueRef(m.value));
      if (!at) {
        failed = sdk::invalid_argument("event_time: the value has nothing at path " + path_json_ +
                                       ": " + preview(ValueRef(m.value)));
        break;
      }
      Result<int64_t> r = time_of(*at);
      if (!r.is_ok()) {
        failed = std::move(r).status();
        break;
      }
      t = *r;
    } else if (t == SL_NO_TIMESTAMP) {
      t = now;
    }
    ++i;
    if (t > future_limit) {
      late_.push_back(m);  // unchanged, and its partition not moved
      continue;
    }
    Partition& p = partition(m.key_group);
    p.max_ns = std::max(p.max_ns, t);
    p.seen_ns = now;
    p.active = true;
    sl_message& out = messages_.emplace_back(m);  // value, key, headers, key group kept
    out.timestamp_ns = t;
  }
  // What was stamped before a failure goes out, then W; then the failure, which the node's
  // on_error handles (the host retries message by message).
  Status st = messages_.empty() ? Status() : ctx.emit(messages_);
  if (st.is_ok() && !late_.empty()) st = ctx.emit_side(0, late_);
  times_.clear();
  if (st.is_ok()) st = advance(ctx, now);
  if (!st.is_ok()) return st;
  return failed;
}

Status EventTime::advance(Context ctx, int64_t now_ns) {
  int64_t w = INT64_MAX;
  bool any_active = false;
  for (Partition& p : parts_) {
    if (p.active && idle_ns_ != 0 && now_ns - p.seen_ns >= idle_ns_) p.active = false;
    if (!p.active) continue;
    any_active = true;
    w = std::min(w, saturating_sub(p.max_ns, out_of_orderness_ns_));
  }
  // All idle (or none seen): W stays where it is.
  if (any_active && w > emitted_ns_) {
    emitted_ns_ = w;
    reemit_ = true;
  }
  if (reemit_ && emitted_ns_ != SL_NO_WATERMARK) {
    reemit_ = false;
    SLUICE_SDK_RETURN_IF_ERROR(ctx.emit_watermark(emitted_ns_));
  }
  return arm_idle_timer(ctx, now_ns);
}

Status EventTime::arm_idle_timer(Context ctx, int64_t now_ns) {
  if (idle_ns_ == 0 || timer_armed_) return {};
  int64_t next = INT64_MAX;
  for (const Partition& p : parts_) {
    if (p.active) next = std::min(next, saturating_add(p.seen_ns, idle_ns_));
  }
  if (next == INT64_MAX) return {};
  // A partition is idle once now - seen >= idle: the timer fires at that moment.
  SLUICE_SDK_RETURN_IF_ERROR(
      ctx.timer_start(k_idle_timer, std::chrono::nanoseconds(std::max<int64_t>(next - now_ns, 0))));
  timer_armed_ = true;
  return {};
}

Status EventTime::start(Context ctx) {
  // Restored partitions go idle on time even when no message comes.
  return arm_idle_timer(ctx, ctx.now_ns());
}

Status EventTime::on_timer(Context ctx, uint64_t timer_id) {
  if (timer_id != k_idle_timer) return {};
  timer_armed_ = false;
  return advance(ctx, ctx.now_ns());
}

Status EventTime::on_watermark(Context /*ctx*/, int64_t /*watermark_ns*/) { return {}; }

Result<Value> EventTime::snapshot(Context /*ctx*/) {
  // {"version": 1, "watermark": last emitted (null: none yet), "groups": {"<key group>":
  // {"max_ns": largest event time seen[, "seen_ns": its last message (task clock), "active":
  // false once idle] (with idle_timeout_ms)}}}: "watermark" stays with the task, each group
  // moves with its partition.
  std::vector<std::string> names;
  names.reserve(parts_.size());
  for (const Partition& p : parts_) names.push_back(std::to_string(p.group));
  std::vector<std::pair<std::string_view, Value>> groups;
  groups.reserve(parts_.size());
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Partition& p = parts_[i];
    groups.emplace_back(names[i], idle_ns_ == 0
                                      ? Value::object({{"max_ns", Value::integer(p.max_ns)}})
                                      : Value::object({{"max_ns", Value::integer(p.max_ns)},
                                                       {"seen_ns", Value::integer(p.seen_ns)},
                                                       {"active", Value::boolean(p.active)}}));
  }
  return Value::object(
      {{"version", Value::integer(k_state_version)},
       {"watermark", emitted_ns_ == SL_NO_WATERMARK ? Value() : Value::integer(emitted_ns_)},
       {"groups", Value::object(groups)}});
}

EventTime::Partition EventTime::parse_group(uint64_t group, std::string_view name, ValueRef table,
                                            int64_t now_ns) const {
  const std::optional<Value> max = table.is_object() ? table.get("max_ns") : std::nullopt;
  if (!max || !max->is_int()) {
    bad_state("group " + std::string(name) + " is not {\"max_ns\": int, ...}", table);
  }
  const std::optional<Value> seen = table.get("seen_ns");
  const std::optional<Value> active = table.get("active");
  if ((seen && !seen->is_int()) || (active && !active->is_bool())) {
    bad_state("group " + std::string(name) + " has a seen_ns not an int or an active not a bool",
              table);
  }
  // Back active, its idle time starting now, unless the state says more: with
  // idle_timeout_ms, a partition idle when the snapshot was taken stays idle until its next
  // message, and one seen less than the timeout ago keeps the rest of its time (so a
  // checkpoint restored at once, as `sluiced test`'s restart check does, changes nothing).
  // After a longer break every partition gets the whole timeout again: the processing time
  // before a restart says nothing about when its next message comes.
  Partition p{group, max->as_int(), now_ns, true};
  if (idle_ns_ != 0 && active && !active->as_bool()) {
    p.active = false;
  } else if (idle_ns_ != 0 && seen && now_ns - seen->as_int() < idle_ns_) {
    p.seen_ns = std::min(seen->as_int(), now_ns);
  }
  return p;
}

Status EventTime::restore(Context ctx, ValueRef state) {
  const std::optional<Value> version = state.is_object() ? state.get("version") : std::nullopt;
  if (!version || !version->is_int() || version->as_int() != k_state_version) {
    bad_state("has no \"version\": 1 (written by another version of event_time?)", state);
  }
  const std::optional<Value> groups = state.get("groups");
  if (!groups || !groups->is_object()) bad_state("has no 'groups' object", state);
  // A state made from groups alone (no task-level members) has no watermark: none yet.
  const std::optional<Value> watermark = state.get("watermark");
  if (watermark && !watermark->is_null() && !watermark->is_int()) {
    bad_state("has a 'watermark' that is not an int or null", state);
  }
  // Parsed aside first: a bad group leaves the state as it was.
  const int64_t now = ctx.now_ns();
  std::vector<Partition> restored;
  restored.reserve(groups->size());
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string_view name = groups->key_at(i);
    restored.push_back(parse_group(group_id(name, state), name, (*groups)[i], now));
  }
  std::sort(restored.begin(), restored.end(),
            [](const Partition& a, const Partition& b) { return a.group < b.group; });
  parts_ = std::move(restored);
  last_valid_ = false;
  emitted_ns_ = watermark && watermark->is_int() ? watermark->as_int() : SL_NO_WATERMARK;
  reemit_ = true;  // the host does not keep watermarks: say it again at the next batch
  return {};
}

Status EventTime::restore_group(Context ctx, uint32_t group, ValueRef state) {
  // Parsed before anything is replaced: a bad state leaves the group as it was.
  const int64_t now = ctx.now_ns();
  std::optional<Partition> restored;
  if (!state.is_null()) restored = parse_group(group, std::to_string(group), state, now);
  last_valid_ = false;
  auto it = std::lower_bound(parts_.begin(), parts_.end(), uint64_t{group},
                             [](const Partition& p, uint64_t g) { return p.group < g; });
  const bool found = it != parts_.end() && it->group == group;
  if (!restored) {
    if (found) parts_.erase(it);
    return {};
  }
  if (found) {
    *it = *restored;
  } else {
    parts_.insert(it, *restored);
  }
  // The restored partition goes idle on time even when no message comes.
  return arm_idle_timer(ctx, now);
}

Status EventTime::drop_group(Context /*ctx*/, uint32_t group) {
  last_valid_ = false;
  std::erase_if(parts_, [group](const Partition& p) { return p.group == group; });
  return {};
}

}  // namespace sluice::core_ops
