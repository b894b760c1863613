// The standard function library, part 3: reducers, called (acc, x) by accumulate. Without
// accumulate's `start`, the first element becomes the state unchanged (as in streamz), so
// each reducer says what it does with such a state (see the k_doc of each).
#include <sluice/sluice.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "functions.hpp"

namespace sluice::core_ops {

using sdk::Args;
using sdk::Config;
using sdk::Result;
using sdk::Value;
using sdk::ValueRef;

namespace {

/// acc + x for two numbers, the step of sum in both its forms (ints stay ints, overflow is
/// an error, a float makes a float).
Result<Value> add_numbers(ValueRef acc, ValueRef x) {
  if (acc.is_int() && x.is_int()) {
    int64_t r = 0;
    if (__builtin_add_overflow(acc.raw().as.i, x.raw().as.i, &r)) {
      return sdk::out_of_range("sum: " + std::to_string(acc.raw().as.i) + " + " +
                               std::to_string(x.raw().as.i) + " does not fit in a 64-bit int");
    }
    return Value::integer(r);
  }
  return Value::floating(acc.as_float() + x.as_float());
}

/// Sums the leading int items of `array` into `total` (no Value, no Result per item) and
/// returns how many it took: all of them, or up to the first non-int item or overflow
/// (then `total` is the sum of the items before it).
size_t sum_int_prefix(const sl_host_api& h, sl_value array, size_t n, int64_t& total) {
  // One host call for the whole array where the host has array_items (a call per item
  // through value_at was 28 % of sliding_window -> map(sum)).
  const sl_value* run =
      SL_HAS_FIELD(&h, sl_host_api, array_items) && h.array_items ? h.array_items(array) : nullptr;
  size_t k = 0;
  for (; k < n; ++k) {
    const sl_value x = run ? run[k] : h.value_at(array, k);
    int64_t next = 0;
    if (x.kind != SL_KIND_INT || __builtin_add_overflow(total, x.as.i, &next)) break;
    total = next;
  }
  return k;
}

/// sum(items): Python's sum(iterable), 0 + items[0] + items[1] + ... left to right, each
/// step as add_numbers. Items are read borrowed (no reference taken).
Result<Value> sum_items(ValueRef items) {
  if (!items.is_array()) {
    return sdk::invalid_argument("sum: with one argument, expected an array, got " +
                                 std::string(items.kind_name()));
  }
  const sl_host_api& h = sdk::host();
  const sl_value array = items.raw();
  const size_t n = h.value_size(array);
  int64_t total = 0;
  size_t k = sum_int_prefix(h, array, n, total);
  if (k == n) return Value::integer(total);
  Value acc = Value::integer(total);  // where the int fast path stopped: general steps
  for (; k < n; ++k) {
    const ValueRef x(h.value_at(array, k));
    if (!x.is_number()) {
      return sdk::invalid_argument("sum: item " + std::to_string(k) +
                                   " of the array: expected a number, got " +
                                   std::string(x.kind_name()));
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(acc, add_numbers(acc, x));
  }
  return acc;
}

/// Sums `n` items if every one is an int and no partial sum (left to right) overflows:
/// then true, with the sum in `total`. Else false (`total` meaningless), and the caller
/// takes the exact path (sum_items), which finds the item or step at fault.
bool sum_all_ints(const sl_value* items, size_t n, int64_t& total) {
  int64_t t = 0;
#pragma GCC unroll 4
  for (size_t k = 0; k < n; ++k) {
    if (items[k].kind != SL_KIND_INT || __builtin_add_overflow(t, items[k].as.i, &t)) {
      return false;
    }
  }
  total = t;
  return true;
}

}  // namespace

Result<Value> Sum::call(Args args) {
  if (args.size() == 1) return sum_items(args[0]);
  const ValueRef acc = args[0];
  const ValueRef x = args[1];
  if (!x.is_number()) {
    return sdk::invalid_argument("sum: expected a number, got " + std::string(x.kind_name()));
  }
  if (!acc.is_number()) {
    return sdk::invalid_argument("sum: the total so far must be a number, got " +
                                 std::string(acc.kind_name()));
  }
  return add_numbers(acc, x);
}

sdk::Status Sum::call_batch(sdk::Context /*ctx*/, Args in, std::span<Value> out) {
  const sl_host_api& h = sdk::host();
  const bool has_items = SL_HAS_FIELD(&h, sl_host_api, array_items) && h.array_items;
  for (size_t i = 0; i < in.size(); ++i) {
    const sl_value array = in[i].raw();
    if (array.kind == SL_KIND_ARRAY && has_items) {  // arrays of ints: summed here
      const size_t n = h.value_size(array);
      int64_t total = 0;
      if (n == 0 || sum_all_ints(h.array_items(array), n, total)) {
        out[i] = Value::integer(total);
        continue;
      }
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(out[i], sum_items(in[i]));  // floats, errors, overflow
  }
  return {};
}

Result<Value> Count::call(Args args) {
  const ValueRef acc = args[0];
  if (!acc.is_int()) {
    return sdk::invalid_argument("count: the count so far must be an int, got " +
                                 std::string(acc.kind_name()) + " (give accumulate start = 0)");
  }
  int64_t r = 0;
  if (__builtin_add_overflow(acc.raw().as.i, int64_t{1}, &r)) {
    return sdk::out_of_range("count: the count overflows a 64-bit int");
  }
  return Value::integer(r);
}

template <bool Max>
Result<Value> Extreme<Max>::call(Args args) {
  const auto better = [](ValueRef x, ValueRef best) {  // x replaces best: ties keep best
    const int c = sdk::compare(x, best);
    return Max ? c > 0 : c < 0;
  };
  if (args.size() == 2) return Value::borrow(better(args[1], args[0]) ? args[1] : args[0]);
  // One argument: Python's min(iterable) / max(iterable), the first extreme item.
  const ValueRef items = args[0];
  if (!items.is_array()) {
    return sdk::invalid_argument(std::string(k_name) +
                                 ": with one argument, expected an array, got " +
                                 std::string(items.kind_name()));
  }
  const sl_host_api& h = sdk::host();
  const size_t n = h.value_size(items.raw());
  if (n == 0) return sdk::invalid_argument(std::string(k_name) + ": the array is empty");
  ValueRef best(h.value_at(items.raw(), 0));  // borrowed from items, like every item
  for (size_t k = 1; k < n; ++k) {
    const ValueRef x(h.value_at(items.raw(), k));
    if (better(x, best)) best = x;
  }
  return Value::borrow(best);
}

template struct Extreme<false>;
template struct Extreme<true>;

CountBy::CountBy(const Config& args) {
  if (args.has("path")) path_.emplace(args, "path");
}

std::string CountBy::key_of(ValueRef x) const {
  if (path_) return string_form(path_->lookup(x).value_or(Value()));
  return string_form(x);
}

Result<Value> CountBy::call(Args args) const {
  const ValueRef acc = args[0];
  std::vector<std::pair<std::string, Value>> counts;  // keys owned: key_at views die with acc
  if (acc.is_object()) {
    counts.reserve(acc.size() + 1);
    for (size_t i = 0; i < acc.size(); ++i) {
      counts.emplace_back(std::string(acc.key_at(i)), acc[i]);
    }
  } else {
    // No `start`: accumulate made the first element the state. Count it.
    counts.emplace_back(key_of(acc), Value::integer(1));
  }
  const std::string key = key_of(args[1]);
  bool found = false;
  for (auto& [k, v] : counts) {
    if (k != key) continue;
    if (!v.is_int()) {
      return sdk::invalid_argument("count_by: the count of \"" + key + "\" must be an int, got " +
                                   std::string(v.kind_name()));
    }
    v = Value::integer(v.as_int() + 1);
    found = true;
    break;
  }
  if (!found) counts.emplace_back(key, Value::integer(1));
  std::vector<std::pair<std::string_view, Value>> entries;
  entries.reserve(counts.size());
  for (auto& [k, v] : counts) entries.emplace_back(k, std::move(v));
  return Value::object(entries);
}

Result<std::optional<Value>> CountBy::step(Value& state, ValueRef x) const {
  const sl_host_api& h = sdk::host();
  const bool host_updates_in_place =
      SL_HAS_FIELD(&h, sl_host_api, object_put_unique) && h.object_put_unique != nullptr;
  if (host_updates_in_place && state.is_object()) {
    // The key: a string element's own text (borrowed from x), else its string form.
    std::string owned;
    std::string_view key;
    if (!path_ && x.is_string()) {
      key = x.as_str();
    } else {
      owned = key_of(x);
      key = owned;
    }
    // The host's object is its own hash index: a lookup, then an in-place set that also
    // adds a new key (the block doubles when full), both O(1) when `state` is ours alone.
    sl_value count = sl_null();
    const bool known = h.object_get(state.raw(), key.data(), key.size(), &count) != 0;
    if (!known || count.kind == SL_KIND_INT) {  // else call() reports the bad count
      sl_value raw = state.release();
      const int32_t put =
          h.object_put_unique(&raw, key.data(), key.size(), sl_int(known ? count.as.i + 1 : 1));
      state = Value::adopt(raw);  // the same object, perhaps moved to a larger block
      if (put != 0) return std::optional<Value>();
    }
  }
  // Shared (a downstream node kept the state), not an object yet, or an older host:
  // the new state is built as call() builds it, and `state` is left as it was.
  const std::array<ValueRef, 2> args{state.ref(), x};
  SLUICE_SDK_ASSIGN_OR_RETURN(Value next, call(args));
  return std::optional<Value>(std::move(next));
}

Value CollectList::call(Args args) {
  const ValueRef acc = args[0];
  std::vector<Value> items;
  if (acc.is_array()) {
    items.reserve(acc.size() + 1);
    for (size_t i = 0; i < acc.size(); ++i) items.push_back(acc[i]);
  } else {
    items.push_back(Value::borrow(acc));  // no `start`: acc is the first element
  }
  items.push_back(Value::borrow(args[1]));
  return Value::array(items);
}

}  // namespace sluice::core_ops
