// The standard function library, part 3: reducers, called (acc, x) by accumulate. Without
// accumulate's `start`, the first element becomes the state unchanged (as in streamz), so
// each reducer says what it does with such a state (see the k_doc of each).
#include <sluice/sluice.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
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

Result<Value> Sum::call(Args args) {
  const ValueRef acc = args[0];
  const ValueRef x = args[1];
  if (!x.is_number()) {
    return sdk::invalid_argument("sum: expected a number, got " + std::string(x.kind_name()));
  }
  if (!acc.is_number()) {
    return sdk::invalid_argument("sum: the total so far must be a number, got " +
                                 std::string(acc.kind_name()));
  }
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
Value Extreme<Max>::call(Args args) {
  const int c = sdk::compare(args[1], args[0]);
  return Value::borrow((Max ? c > 0 : c < 0) ? args[1] : args[0]);
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

Result<Value> CountBy::step(const Value& state, ValueRef x) {
  const sl_host_api& h = sdk::host();
  if (h.struct_size < offsetof(sl_host_api, object_set_unique) + sizeof(void*) ||
      h.object_set_unique == nullptr) {
    const std::array<ValueRef, 2> args{state.ref(), x};
    return call(args);  // an older host: no in-place update
  }
  const std::string key = key_of(x);
  bool hit = false;
  size_t at = 0;
  if (state.is_object()) {
    if (state.raw().as.block != indexed_) {  // another object (first call, restore): index it
      index_.clear();
      for (size_t i = 0; i < state.size(); ++i) index_.emplace(std::string(state.key_at(i)), i);
      indexed_ = state.raw().as.block;
    }
    auto it = index_.find(key);
    if (it != index_.end() && it->second < state.size() && state.key_at(it->second) == key) {
      hit = true;
      at = it->second;
      const sl_value count = h.value_at(state.raw(), at);
      if (count.kind == SL_KIND_INT &&
          h.object_set_unique(state.raw(), at, sl_int(count.as.i + 1)) != 0) {
        return state;  // updated in place: nobody else held it
      }
    }
  }
  const std::array<ValueRef, 2> args{state.ref(), x};
  SLUICE_SDK_ASSIGN_OR_RETURN(Value next, call(args));
  // Keep the index for the new object: same entries in the same order, plus `key` at the
  // end when it was new. Anything else is re-indexed on the next call.
  const bool appended = !hit && state.is_object() && next.size() == state.size() + 1 &&
                        next.key_at(state.size()) == key;
  if (state.is_object() && state.raw().as.block == indexed_ && (hit || appended)) {
    if (appended) index_.emplace(key, state.size());
    indexed_ = next.raw().as.block;
  } else {
    indexed_ = nullptr;
  }
  return next;
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
