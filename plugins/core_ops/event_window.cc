// window: event-time tumbling, hopping and session windows (event_window.hpp).
#include "event_window.hpp"

#include <sluice/sluice.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

namespace {

constexpr int64_t k_state_version = 1;
constexpr int64_t k_ns_per_ms = 1'000'000;
constexpr uint32_t k_no_slot = UINT32_MAX;
constexpr size_t k_flush_at = 4096;  // outputs per emit when a watermark fires many windows

/// a / b rounded down (b > 0): event times before the epoch fall into the window below.
int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
/// a mod b in [0, b) (b > 0).
int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}
/// a + b, held at the int64 bounds.
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MIN : INT64_MAX;
}
/// ms as ns, held at the bounds: a window ending after year 2262 fires at end of input
/// only. The lower bound stays above SL_NO_WATERMARK, so nothing is closed before a
/// watermark came.
int64_t ms_to_ns(int64_t ms) {
  int64_t r = 0;
  if (!__builtin_mul_overflow(ms, k_ns_per_ms, &r)) return r;
  return ms < 0 ? INT64_MIN + 1 : INT64_MAX;
}

/// Min-heap order of the firing index: due time, then end, then start, then creation.
bool later(const auto& a, const auto& b) {
  if (a.due_ns != b.due_ns) return a.due_ns > b.due_ns;
  if (a.end != b.end) return a.end > b.end;
  if (a.start != b.start) return a.start > b.start;
  if (a.seq != b.seq) return a.seq > b.seq;
  return a.drop > b.drop;
}

[[noreturn]] void bad_state(const std::string& what, ValueRef state) {
  throw sdk::Error(SL_INVALID_ARGUMENT, "window: checkpoint state " + what + ": " + preview(state));
}

const char* kind_name(size_t kind) {
  static constexpr const char* k_names[] = {"tumbling", "hopping", "session"};
  return k_names[kind];
}

}  // namespace

// ---- config --------------------------------------------------------------------------------

void EventWindow::validate(const Config& cfg) {
  const size_t kind = cfg.get_choice("kind", {"tumbling", "hopping", "session"});
  const std::string with = std::string("with kind = \"") + kind_name(kind) + "\"";
  auto need = [&](std::string_view key) {
    if (!cfg.has(key)) cfg.fail(key, "is required " + with);
  };
  auto refuse = [&](std::string_view key, const char* kinds) {
    if (cfg.has(key)) {
      cfg.fail(key, "does not apply " + with + " (it is a key of " + kinds + " windows)");
    }
  };
  auto positive = [&](std::string_view key) {
    const int64_t ms = cfg.get_duration(key).count();
    if (ms < 1) cfg.fail(key, "must be at least 1 (got " + std::to_string(ms) + ")");
    return ms;
  };
  switch (kind) {
    case 0:    // tumbling
    case 1: {  // hopping
      need("size_ms");
      if (kind == 1) need("slide_ms");
      if (kind == 0) refuse("slide_ms", "hopping");
      refuse("gap_ms", "session");
      const int64_t size = positive("size_ms");
      const int64_t period = kind == 1 ? positive("slide_ms") : size;
      if (kind == 1 && (size - 1) / period + 1 > k_max_windows_per_element) {
        cfg.fail("slide_ms", "is too small for size_ms: an element would go into " +
                                 std::to_string((size - 1) / period + 1) +
                                 " windows (size_ms / slide_ms " + "must be at most " +
                                 std::to_string(k_max_windows_per_element) + ")");
      }
      if (cfg.has("offset_ms")) {
        const int64_t offset = cfg.get_duration("offset_ms").count();
        if (offset >= period) {
          cfg.fail("offset_ms",
                   "must be less than " + std::string(kind == 1 ? "slide_ms" : "size_ms") + " (" +
                       std::to_string(period) + "; got " + std::to_string(offset) + ")");
        }
      }
      break;
    }
    default:  // session
      need("gap_ms");
      refuse("size_ms", "tumbling and hopping");
      refuse("slide_ms", "hopping");
      refuse("offset_ms", "tumbling and hopping");
      positive("gap_ms");
      break;
  }
  if (function_name(cfg.get_value("function")) == Count::k_name && !cfg.has("start")) {
    cfg.fail("function",
             "count needs start = 0 (without start a window's first element would be its value)");
  }
}

EventWindow::EventWindow(Context ctx, const Config& cfg) : reducer_(ctx, cfg) {
  validate(cfg);
  kind_ = static_cast<Kind>(cfg.get_choice("kind", {"tumbling", "hopping", "session"}));
  if (kind_ == Kind::session) {
    gap_ = cfg.get_duration("gap_ms").count();
  } else {
    size_ = cfg.get_duration("size_ms").count();
    slide_ = kind_ == Kind::hopping ? cfg.get_duration("slide_ms").count() : size_;
    offset_ = cfg.has("offset_ms") ? cfg.get_duration("offset_ms").count() : 0;
  }
  lateness_ns_ = ms_to_ns(cfg.get_duration("allowed_lateness_ms").count());
  update_ = cfg.get_string("emit") == "update";
}

// ---- elements ------------------------------------------------------------------------------

EventWindow::Group& EventWindow::group(uint64_t key_group) {
  if (last_group_ == nullptr || key_group != last_group_id_) {
    last_group_ = &groups_[key_group];  // node-based: the reference survives rehashing
    last_group_id_ = key_group;
  }
  return *last_group_;
}

bool EventWindow::closed_for_good(int64_t end_ms) const {
  return sat_add(ms_to_ns(end_ms), lateness_ns_) <= watermark_;
}

Status EventWindow::process(Context ctx, uint32_t /*input*/, Batch batch) {
  Status failed;
  for (const sl_message& m : batch) {
    if (m.timestamp_ns == SL_NO_TIMESTAMP) {
      failed = sdk::invalid_argument(
          "window: the message has no event time; put event_time before window");
      break;
    }
    const int64_t t = floor_div(m.timestamp_ns, k_ns_per_ms);
    failed = kind_ == Kind::session ? add_session(m, t) : add_fixed(m, t);
    if (!failed.is_ok()) break;
  }
  // What the elements before a failure changed goes out (the state holds it); then the
  // failure, which the node's on_error handles (the host retries message by message).
  Status st = flush(ctx);
  if (!st.is_ok()) return st;
  return failed;
}

Status EventWindow::add_fixed(const sl_message& m, int64_t t) {
  // The windows of t, newest first: starts s = offset (mod slide) with s <= t < s + size.
  starts_.clear();
  bool any = false;
  for (int64_t s = t - floor_mod(t - offset_, slide_); s > t - size_; s -= slide_) {
    any = true;
    if (!closed_for_good(s + size_)) starts_.push_back(s);
  }
  if (starts_.empty()) {
    if (any) late_.push_back(m);  // else: between two hopping windows, in none
    return {};
  }
  std::reverse(starts_.begin(), starts_.end());
  const ValueRef x(m.value);
  Group& g = group(m.key_group);
  auto it = g.find(ValueRef(m.key));
  // Every window's next value first, then the state: a failing reducer leaves no trace.
  targets_.clear();
  next_.clear();
  // The key's windows and starts_ are both by start: one walk finds the existing ones.
  const KeyWindows* kw = it != g.end() ? &it->second : nullptr;
  size_t j = kw != nullptr ? kw->size() : 0;
  while (j > 0 && slots_[(*kw)[j - 1]].start >= starts_.front()) --j;
  for (const int64_t s : starts_) {
    uint32_t slot = k_no_slot;
    if (kw != nullptr) {
      while (j < kw->size() && slots_[(*kw)[j]].start < s) ++j;
      if (j < kw->size() && slots_[(*kw)[j]].start == s) slot = (*kw)[j];
    }
    if (slot == k_no_slot) {
      SLUICE_SDK_ASSIGN_OR_RETURN(Value acc, reducer_.first(x));
      next_.push_back(std::move(acc));
    } else {
      Value acc = slots_[slot].acc;
      SLUICE_SDK_RETURN_IF_ERROR(reducer_.step(acc, x));
      next_.push_back(std::move(acc));
    }
    targets_.push_back(slot);
  }
  if (it == g.end()) it = g.emplace(owned_key(ValueRef(m.key)), KeyWindows{}).first;
  for (size_t i = 0; i < targets_.size(); ++i) {
    if (targets_[i] == k_no_slot) {
      targets_[i] = open(m.key_group, it->first, it->second, starts_[i], starts_[i] + size_,
                         std::move(next_[i]));
    } else {
      slots_[targets_[i]].acc = std::move(next_[i]);
    }
  }
  for (const uint32_t slot : targets_) changed(slot);
  return {};
}

Status EventWindow::add_session(const sl_message& m, int64_t t) {
  const int64_t lo = t;
  const int64_t hi = t + gap_;
  Group& g = group(m.key_group);
  auto it = g.find(ValueRef(m.key));
  // The key's sessions [lo, hi) overlaps or touches (a.start <= b.end && b.start <= a.end):
  // sessions are disjoint and apart, sorted by start and so by end: a run [first, last).
  size_t first = 0;
  size_t last = 0;
  int64_t start = lo;
  int64_t end = hi;
  if (it != g.end()) {
    const KeyWindows& kw = it->second;
    last = kw.size();
    while (last > 0 && slots_[kw[last - 1]].start > hi) --last;
    first = last;
    while (first > 0 && slots_[kw[first - 1]].end >= lo) --first;
    if (first < last) {
      start = std::min(lo, slots_[kw[first]].start);
      end = std::max(hi, slots_[kw[last - 1]].end);
    }
  }
  if (closed_for_good(end)) {
    late_.push_back(m);
    return {};
  }
  const ValueRef x(m.value);
  if (first == last) {  // a new session
    SLUICE_SDK_ASSIGN_OR_RETURN(Value acc, reducer_.first(x));
    if (it == g.end()) it = g.emplace(owned_key(ValueRef(m.key)), KeyWindows{}).first;
    const uint32_t slot = open(m.key_group, it->first, it->second, lo, hi, std::move(acc));
    slots_[slot].elements.push_back({owned_key(x), next_order_++});
    changed(slot);
    return {};
  }
  KeyWindows& kw = it->second;
  uint32_t slot = kw[first];
  bool moved_start = start < slots_[slot].start;
  if (last - first == 1) {  // extends one session
    Value acc = slots_[slot].acc;
    SLUICE_SDK_RETURN_IF_ERROR(reducer_.step(acc, x));
    slots_[slot].acc = std::move(acc);
  } else {
    // Bridges several: their union, folded again in arrival order (a reducer cannot merge
    // two values), goes into the oldest one's slot.
    merged_.clear();
    for (size_t i = first; i < last; ++i) {
      const uint32_t s = kw[i];
      if (slots_[s].seq < slots_[slot].seq) slot = s;
      for (const Element& e : slots_[s].elements) merged_.push_back(e);
    }
    std::sort(merged_.begin(), merged_.end(),
              [](const Element& a, const Element& b) { return a.order < b.order; });
    SLUICE_SDK_ASSIGN_OR_RETURN(Value acc, reducer_.first(merged_.front().value));
    for (size_t i = 1; i < merged_.size(); ++i) {
      SLUICE_SDK_RETURN_IF_ERROR(reducer_.step(acc, merged_[i].value));
    }
    SLUICE_SDK_RETURN_IF_ERROR(reducer_.step(acc, x));
    for (size_t i = first; i < last; ++i) {
      if (kw[i] != slot) release(kw[i]);
    }
    kw.erase(kw.begin() + static_cast<ptrdiff_t>(first) + 1,
             kw.begin() + static_cast<ptrdiff_t>(last));
    kw[first] = slot;
    Slot& w = slots_[slot];
    w.elements.swap(merged_);
    merged_.clear();
    w.acc = std::move(acc);
    moved_start = true;  // a new entry in the firing index: its bounds changed
    w.fired = false;
  }
  Slot& w = slots_[slot];
  w.elements.push_back({owned_key(x), next_order_++});
  w.start = start;
  w.end = end;
  if (w.fired && ms_to_ns(end) > watermark_) {
    w.fired = false;  // grew past the watermark: it fires again at its new end
    push_due(slot, false);
  } else if (moved_start && !w.fired) {
    push_due(slot, false);
  }
  changed(slot);
  return {};
}

uint32_t EventWindow::open(uint64_t group, const Value& key, KeyWindows& kw, int64_t start,
                           int64_t end, Value acc) {
  uint32_t slot = 0;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& w = slots_[slot];
  w.seq = next_seq_++;
  w.start = start;
  w.end = end;
  w.key = key;
  w.acc = std::move(acc);
  w.group = group;
  w.owner = &kw;
  w.fired = false;
  kw.insert(std::upper_bound(kw.begin(), kw.end(), start,
                             [this](int64_t s, uint32_t i) { return s < slots_[i].start; }),
            slot);
  ++live_;
  push_due(slot, false);
  return slot;
}

void EventWindow::changed(uint32_t slot) {
  Slot& w = slots_[slot];
  if (ms_to_ns(w.end) <= watermark_) {
    // Fired already (or opened within the allowed lateness): its new value goes out now.
    output(slot);
    if (!w.fired) {
      w.fired = true;
      push_due(slot, true);
    }
  } else if (update_) {
    output(slot);
  }
}

void EventWindow::push_due(uint32_t slot, bool drop) {
  const Slot& w = slots_[slot];
  const int64_t end_ns = ms_to_ns(w.end);
  due_.push_back(
      Due{drop ? sat_add(end_ns, lateness_ns_) : end_ns, w.end, w.start, w.seq, slot, drop});
  std::push_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return later(a, b); });
}

void EventWindow::output(uint32_t slot) {
  const Slot& w = slots_[slot];
  Value v = Value::object({{"key", w.key},
                           {"start", Value::integer(w.start)},
                           {"end", Value::integer(w.end)},
                           {"value", w.acc}});
  sl_message m{};
  m.value = v.raw();
  m.key = w.key.raw();
  m.headers = sl_null();
  m.timestamp_ns = ms_to_ns(w.end - 1);
  m.key_group = w.group;
  out_.push_back(m);
  out_values_.push_back(std::move(v));
  // The window may close before the emit: its key stays alive until then.
  if (sl_value_is_boxed(m.key)) out_values_.push_back(w.key);
}

void EventWindow::close(uint32_t slot) {
  Slot& w = slots_[slot];
  KeyWindows& kw = *w.owner;
  kw.erase(std::find(kw.begin(), kw.end(), slot));
  if (kw.empty()) {
    auto g = groups_.find(w.group);
    if (g != groups_.end()) g->second.erase(w.key);
  }
  release(slot);
}

void EventWindow::release(uint32_t slot) {
  Slot& w = slots_[slot];
  w.seq = 0;
  w.key = Value();
  w.acc = Value();
  w.elements.clear();  // its capacity stays for the slot's next session
  w.owner = nullptr;
  w.fired = false;
  free_.push_back(slot);
  --live_;
}

Status EventWindow::flush(Context ctx) {
  Status st;
  if (!out_.empty()) st = ctx.emit(out_);
  if (st.is_ok() && !late_.empty()) st = ctx.emit_side(0, late_);
  out_.clear();
  late_.clear();
  out_values_.clear();
  return st;
}

// ---- watermarks ----------------------------------------------------------------------------

Status EventWindow::on_watermark(Context ctx, int64_t watermark_ns) {
  watermark_ = std::max(watermark_, watermark_ns);
  if (watermark_ns != SL_WATERMARK_END) finite_watermark_ = watermark_;
  const auto heap_order = [](const Due& a, const Due& b) { return later(a, b); };
  while (!due_.empty() && due_.front().due_ns <= watermark_) {
    std::pop_heap(due_.begin(), due_.end(), heap_order);
    const Due d = due_.back();
    due_.pop_back();
    Slot& w = slots_[d.slot];
    if (w.seq != d.seq) continue;  // closed (or merged away) since
    if (!d.drop) {
      if (w.fired || w.start != d.start) continue;  // fired, or its start moved
      if (w.end != d.end) {
        push_due(d.slot, false);  // a session that grew: due at its new end
        continue;
      }
      output(d.slot);
      w.fired = true;
      if (closed_for_good(w.end)) {
        close(d.slot);
      } else {
        push_due(d.slot, true);
      }
      // Out in batches: a watermark that fires a million windows (the end of input) does
      // not hold all their outputs at once.
      if (out_.size() >= k_flush_at) SLUICE_SDK_RETURN_IF_ERROR(flush(ctx));
    } else {
      if (!w.fired) continue;  // grew past the watermark again: a fire entry is due
      if (w.end != d.end) {
        push_due(d.slot, true);
        continue;
      }
      close(d.slot);
    }
  }
  compact();
  SLUICE_SDK_RETURN_IF_ERROR(flush(ctx));
  // The end of input is the host's to forward, after finish.
  if (watermark_ns == SL_WATERMARK_END) return {};
  return ctx.emit_watermark(watermark_);
}

void EventWindow::compact() {
  if (due_.size() < 1024 || due_.size() <= 2 * live_) return;
  std::erase_if(due_, [this](const Due& d) {
    const Slot& w = slots_[d.slot];
    if (w.seq != d.seq) return true;
    return d.drop ? !w.fired : (w.fired || w.start != d.start);
  });
  std::make_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return later(a, b); });
}

// ---- state ---------------------------------------------------------------------------------

Result<Value> EventWindow::snapshot(Context /*ctx*/) {
  // {"version": 1, "watermark": W or null, "groups": {"<key group>": {"keys", "starts",
  //  "ends", "values", "fired", "seqs"[, "elements", "orders"]}}}: one column per field
  // (a million windows are a few arrays, fast to write and to restore), each window's
  // entries at one index, windows in creation order; sessions add their elements and the
  // elements' arrival order (arrays per window).
  std::vector<std::string> names;
  std::vector<Value> tables;
  std::vector<uint32_t> order;
  std::vector<Value> keys, starts, ends, values, fired, seqs, elements, orders, items, places;
  for (const auto& [id, g] : groups_) {
    order.clear();
    for (const auto& [key, kw] : g) order.insert(order.end(), kw.begin(), kw.end());
    if (order.empty()) continue;
    std::sort(order.begin(), order.end(),
              [this](uint32_t a, uint32_t b) { return slots_[a].seq < slots_[b].seq; });
    for (std::vector<Value>* column :
         {&keys, &starts, &ends, &values, &fired, &seqs, &elements, &orders}) {
      column->clear();
      column->reserve(order.size());
    }
    for (const uint32_t slot : order) {
      const Slot& w = slots_[slot];
      keys.push_back(w.key);
      starts.push_back(Value::integer(w.start));
      ends.push_back(Value::integer(w.end));
      values.push_back(w.acc);
      fired.push_back(Value::boolean(w.fired));
      seqs.push_back(Value::integer(static_cast<int64_t>(w.seq)));
      if (kind_ != Kind::session) continue;
      items.clear();
      places.clear();
      for (const Element& e : w.elements) {
        items.push_back(e.value);
        places.push_back(Value::integer(static_cast<int64_t>(e.order)));
      }
      elements.push_back(Value::array(items));
      orders.push_back(Value::array(places));
    }
    std::vector<std::pair<std::string_view, Value>> columns{
        {"keys", Value::array(keys)},   {"starts", Value::array(starts)},
        {"ends", Value::array(ends)},   {"values", Value::array(values)},
        {"fired", Value::array(fired)}, {"seqs", Value::array(seqs)}};
    if (kind_ == Kind::session) {
      columns.emplace_back("elements", Value::array(elements));
      columns.emplace_back("orders", Value::array(orders));
    }
    names.push_back(std::to_string(id));
    tables.push_back(Value::object(columns));
  }
  std::vector<std::pair<std::string_view, Value>> entries;
  entries.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) entries.emplace_back(names[i], std::move(tables[i]));
  // The end of input is not kept: a pipeline restarted with more input takes it.
  const Value watermark =
      finite_watermark_ == SL_NO_WATERMARK ? Value() : Value::integer(finite_watermark_);
  return Value::object({{"version", Value::integer(k_state_version)},
                        {"watermark", watermark},
                        {"groups", Value::object(entries)}});
}

std::vector<EventWindow::Parsed> EventWindow::parse_group(std::string_view name,
                                                          ValueRef table) const {
  const std::string where = "group " + std::string(name);
  auto column = [&](const char* key) {
    std::optional<Value> c = table.get(key);
    if (!c || !c->is_array()) bad_state(where + " has no '" + key + "' array", table);
    return std::move(*c);
  };
  const Value keys = column("keys");
  const Value starts = column("starts");
  const Value ends = column("ends");
  const Value values = column("values");
  const Value fired = column("fired");
  const Value seqs = column("seqs");
  const bool session = kind_ == Kind::session;
  const Value elements = session ? column("elements") : Value();
  const Value orders = session ? column("orders") : Value();
  const size_t n = keys.size();
  for (const Value* c : {&starts, &ends, &values, &fired, &seqs}) {
    if (c->size() != n) bad_state(where + " has columns of different lengths", table);
  }
  if (session && (elements.size() != n || orders.size() != n)) {
    bad_state(where + " has columns of different lengths", table);
  }
  std::vector<Parsed> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Value s = starts[i];
    const Value e = ends[i];
    const Value f = fired[i];
    const Value q = seqs[i];
    if (!s.is_int() || !e.is_int() || s.as_int() >= e.as_int() || !f.is_bool() || !q.is_int() ||
        q.as_int() < 1) {
      bad_state(where + " has a window that is not {start < end, fired bool, seq >= 1} at " +
                    std::to_string(i),
                table);
    }
    Parsed p{keys[i],   s.as_int(),  e.as_int(),
             values[i], f.as_bool(), static_cast<uint64_t>(q.as_int()),
             {}};
    if (session) {
      const Value items = elements[i];
      const Value places = orders[i];
      if (!items.is_array() || !places.is_array() || items.size() != places.size() ||
          items.size() == 0) {
        bad_state(where + " has a session without its elements at " + std::to_string(i), table);
      }
      p.elements.reserve(items.size());
      for (size_t k = 0; k < items.size(); ++k) {
        const Value o = places[k];
        if (!o.is_int() || o.as_int() < 1) {
          bad_state(where + " has an element order that is not a positive int", table);
        }
        p.elements.push_back({items[k], static_cast<uint64_t>(o.as_int())});
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

void EventWindow::install(uint64_t id, std::vector<Parsed>&& windows, bool keep_seqs) {
  std::sort(windows.begin(), windows.end(),
            [](const Parsed& a, const Parsed& b) { return a.seq < b.seq; });
  Group& g = groups_[id];
  g.reserve(g.size() + windows.size());
  last_group_ = nullptr;
  for (Parsed& p : windows) {
    auto it = g.try_emplace(std::move(p.key)).first;
    const uint64_t seq = keep_seqs ? p.seq : next_seq_;
    next_seq_ = std::max(next_seq_, seq + 1);
    for (const Element& e : p.elements) next_order_ = std::max(next_order_, e.order + 1);
    // open() without its firing entry: the caller rebuilds the heap once.
    uint32_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& w = slots_[slot];
    w.seq = seq;
    w.start = p.start;
    w.end = p.end;
    w.key = it->first;
    w.acc = std::move(p.acc);
    w.group = id;
    w.owner = &it->second;
    w.fired = p.fired;
    w.elements = std::move(p.elements);
    KeyWindows& kw = it->second;
    kw.insert(std::upper_bound(kw.begin(), kw.end(), p.start,
                               [this](int64_t s, uint32_t i) { return s < slots_[i].start; }),
              slot);
    ++live_;
    const int64_t end_ns = ms_to_ns(w.end);
    due_.push_back(Due{w.fired ? sat_add(end_ns, lateness_ns_) : end_ns, w.end, w.start, w.seq,
                       slot, w.fired});
  }
}

void EventWindow::forget_group(uint64_t id) {
  auto it = groups_.find(id);
  if (it == groups_.end()) return;
  for (const auto& [key, kw] : it->second) {
    for (const uint32_t slot : kw) release(slot);
  }
  groups_.erase(it);
  last_group_ = nullptr;
}

Status EventWindow::restore(Context /*ctx*/, ValueRef state) {
  const std::optional<Value> version = state.get("version");
  if (!version || !version->is_int() || version->as_int() != k_state_version) {
    bad_state("has no \"version\": 1 (written by another version of window?)", state);
  }
  const std::optional<Value> watermark = state.get("watermark");
  if (watermark && !watermark->is_null() && !watermark->is_int()) {
    bad_state("has a watermark that is not an int", state);
  }
  const std::optional<Value> groups = state.get("groups");
  if (!groups || !groups->is_object()) bad_state("has no 'groups' object", state);
  // Parsed aside first: a bad group leaves the state as it was.
  std::vector<std::pair<uint64_t, std::vector<Parsed>>> parsed;
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string_view name = groups->key_at(i);
    const std::optional<uint64_t> id = parse_key_group(name);
    if (!id) {
      bad_state("has a key group that is not a number (\"" + std::string(name) + "\")", state);
    }
    parsed.emplace_back(*id, parse_group(name, (*groups)[i]));
  }
  groups_.clear();
  last_group_ = nullptr;
  slots_.clear();
  free_.clear();
  due_.clear();
  live_ = 0;
  next_seq_ = 1;
  next_order_ = 1;
  for (auto& [id, windows] : parsed) install(id, std::move(windows), true);
  std::make_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return later(a, b); });
  watermark_ = watermark && watermark->is_int() ? watermark->as_int() : SL_NO_WATERMARK;
  finite_watermark_ = watermark_;
  return {};
}

Status EventWindow::restore_group(Context /*ctx*/, uint32_t group, ValueRef state) {
  // Parsed before anything is replaced: a bad state leaves the group as it was.
  std::vector<Parsed> parsed;
  if (!state.is_null()) parsed = parse_group(std::to_string(group), state);
  forget_group(group);
  // New seqs (after this task's windows): seqs of another task's snapshot may collide.
  if (!parsed.empty()) install(group, std::move(parsed), false);
  std::make_heap(due_.begin(), due_.end(), [](const Due& a, const Due& b) { return later(a, b); });
  compact();
  return {};
}

Status EventWindow::drop_group(Context /*ctx*/, uint32_t group) {
  forget_group(group);
  compact();
  return {};
}

}  // namespace sluice::core_ops
