// Element-wise and stateful per-element operators of the core_ops plugin (streamz names and
// parameters): starmap, pluck, flatten, slice, unique (elementwise.cc) and
// accumulate, frequencies (accumulate.cc). Each keeps the key, headers and event time of the
// message its output comes from. The count-based windows are in windows.hpp.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <iterator>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "functions.hpp"

namespace sluice::core_ops {

/// Binds the SL_PARAM_FUNCTION key `key` (a named function or a Lua function) without
/// checking its kind: callers call it with the arity they need, and a function that does not
/// take it fails at its first call with its own message. A failure is already reported on
/// `ctx`; the returned exception carries it to create.
sdk::Function bind_callable(sdk::Context ctx, const sdk::Config& cfg, std::string_view key);

/// `value` as short JSON text for error messages (cut after about 120 characters).
std::string preview(sdk::ValueRef value);

/// `starmap`: function(*x) for each array x.
class Starmap final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "starmap";
  static constexpr const char* k_doc =
      "Emits function(x[0], x[1], ...) for each array element x: the items are spread as the "
      "function's arguments (streamz starmap; its extra *args are the function's `args` "
      "here). Keeps each message's key, headers and event time. An element that is not an "
      "array is an error, as in streamz (Python cannot splay a non-tuple).";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION,
                    "The function called with the element's items as its arguments."),
  };

  Starmap(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;

 private:
  sdk::Function fn_;
  std::vector<sl_value> argv_;  // per-element scratch, reused
  std::vector<sdk::Value> items_;
  std::vector<sdk::Value> out_;
};

/// `pluck`: x[pick], or the array of x[p] for each p of a list.
class Pluck final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "pluck";
  static constexpr const char* k_doc =
      "Emits x[pick] for each element x (streamz pluck): `pick` is a key of an object "
      "(string), an index of an array (int; negative counts from the end, as in Python), or "
      "an array of keys and indexes, which emits the array of the picked items (a tuple in "
      "streamz). A missing key or an index out of range is an error, as in streamz (KeyError, "
      "IndexError); so is picking from a string or a number, which Python would index by "
      "character or refuse. Keeps each message's key, headers and event time.";
  static constexpr std::array k_params{
      sdk::required("pick", SL_PARAM_ANY,
                    "A key (string), an index (int), or an array of them (emits an array)."),
  };

  /// `pick` is a key, an index or an array of them.
  static void validate(const sdk::Config& cfg);
  Pluck(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;

 private:
  sdk::Value picks_;  // an array of strings and ints
  bool many_ = false;
  std::vector<sdk::Value> out_;
};

/// `flatten`: the items of each array element, one level deep.
class Flatten final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "flatten";
  static constexpr const char* k_doc =
      "Emits each item of each array element, in order, one level deep: [[1, [2]], []] "
      "gives 1 then [2] (streamz flatten; also called concat). Every item keeps the key, "
      "headers and event time of its array's message (streamz passes the metadata with the "
      "last item only). An element that is not an array is an error: streamz would iterate a "
      "string's characters or an object's keys, which is almost never what a pipeline means.";

  Flatten(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;

 private:
  // One message per item, its value borrowed from the batch's array (alive for the call):
  // no reference taken per item.
  std::vector<sl_message> messages_;
};

/// `slice`: the elements at positions start, start+step, ... before end.
class Slice final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "slice";
  static constexpr const char* k_doc =
      "Passes on the elements at positions start, start + step, start + 2*step, ... (0 is "
      "the first element) up to but excluding `end`, like list[start:end:step] (streamz "
      "slice). Fixes to streamz: the step counts from `start` (streamz keeps the positions "
      "that are multiples of step, so slice(1, None, 2) gave 2, 4, 6 instead of 1, 3, 5); "
      "end = 0 passes nothing (streamz ignored a zero end); step = 0 is a config error "
      "(streamz silently used 1). Negative bounds are config errors, as in streamz. After "
      "`end` the rest of the input is read and dropped (streamz disconnects from upstream). "
      "Keeps messages unchanged. State: the position.";
  static constexpr std::array k_params{
      sdk::param("start", SL_PARAM_INT, "0", "Position of the first element passed on.").min(0),
      sdk::param("end", SL_PARAM_INT, nullptr,
                 "Position where passing stops (excluded); absent: never stop.")
          .min(0),
      sdk::param("step", SL_PARAM_INT, "1", "Pass every step-th element from start (>= 1).").min(1),
  };

  Slice(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  int64_t start_;
  int64_t end_;  // INT64_MAX when absent
  int64_t step_;
  int64_t position_ = 0;  // of the next element; stops growing at end_
};

/// `unique`: elements whose key was not seen (among the last `maxsize` distinct keys).
class Unique final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "unique";
  static constexpr const char* k_doc =
      "Passes on an element only when its key (the element itself, or key(x)) has not been "
      "seen (streamz unique). With `maxsize`, only the last `maxsize` distinct keys are "
      "remembered, least recently seen evicted first; seeing a key again (even when the "
      "element is dropped) makes it the most recent, as streamz's LRU does: maxsize = 1 "
      "drops only immediate repeats. Without `maxsize` every key is remembered for the life "
      "of the node. maxsize = 0 is a config error (streamz treated 0 as unbounded). Keys "
      "compare as the host compares values (1 equals 1.0; streamz's `hashable` option is not "
      "needed: every value can be a key). Keeps messages unchanged. State: the remembered "
      "keys, in LRU order.";
  static constexpr std::array k_params{
      sdk::param("maxsize", SL_PARAM_INT, nullptr,
                 "How many distinct keys to remember (LRU, >= 1); absent: all of them.")
          .min(1),
      sdk::param("key", SL_PARAM_FUNCTION, nullptr,
                 "Function giving an element's key, e.g. key = \"get\", key_args = { path = "
                 "\"id\" }; absent: the element itself."),
  };

  Unique(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  /// Records `key` as the most recent; true when it was not remembered.
  bool see(sdk::Value key);

  sdk::Function key_fn_;       // empty: the element itself
  int64_t maxsize_;            // 0: unbounded
  std::list<sdk::Value> lru_;  // least recently seen first
  sdk::ValueMap<std::list<sdk::Value>::iterator> where_;
  std::vector<sl_value> in_;
  std::vector<sdk::Value> keys_;
};

/// `accumulate`: a running reduction state = function(state, x).
class Accumulate final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "accumulate";
  static constexpr const char* k_doc =
      "A running reduction (streamz accumulate, also called scan): for each element x, "
      "result = function(state, x) is emitted and becomes the state. Without `start`, the "
      "first element becomes the state and is emitted unchanged (the function is not called "
      "for it), as in streamz. With returns_state = true the function returns [new_state, "
      "emitted] (a 2-element array; a Lua function returns the two values) and only "
      "`emitted` goes out; any other result is an error. With with_state = true the node "
      "emits [state, result] instead of result (the first element without `start` gives "
      "[x, x]), as streamz's with_state. Keeps each message's key, headers and event time. "
      "State: the accumulated value.";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION,
                    R"(The reducer, called (state, x), e.g. "sum" or lua = "acc + x".)"),
      sdk::param("start", SL_PARAM_ANY, nullptr,
                 "The initial state; absent: the first element becomes the state."),
      sdk::param("returns_state", SL_PARAM_BOOL, "false",
                 "The function returns [new_state, emitted] rather than the new state."),
      sdk::param("with_state", SL_PARAM_BOOL, "false",
                 "Emit [state, result] arrays instead of the result."),
  };

  Accumulate(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  // function = "count_by" (without returns_state / with_state): called directly, one
  // element at a time, so that the state object, once emitted and dropped downstream, is
  // ours alone again and the count is updated in place instead of copying every key.
  sdk::Status process_count_by(sdk::Context ctx, sdk::Batch batch);
  // function = "sum" with an int state: adds the int elements of the batch from `from` on
  // into messages_ (no Value, no call per element; what Sum::call returns) and stops at
  // the first element that is not an int or would overflow (Sum::call then takes it, with
  // its own result or error). Returns the index it stopped at.
  size_t sum_ints(sdk::Batch batch, size_t from);

  sdk::Function fn_;
  bool returns_state_;
  bool with_state_;
  bool has_state_ = false;
  sdk::Value state_;
  std::vector<sdk::Value> out_;
  std::vector<sl_message> messages_;
  std::optional<CountBy> count_by_;
  bool int_sum_ = false;  // function = "sum" (without returns_state): ints added inline
};

/// `frequencies`: the running count of each distinct element, as an object.
class Frequencies final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "frequencies";
  static constexpr const char* k_doc =
      "For each element, emits an object of how many times each distinct element has been "
      "seen so far, in order of first appearance (streamz frequencies: accumulate with "
      "toolz.assoc from {}). Object keys are strings, so each element counts under its "
      "string form, as count_by and to_string write it (a string as is, 1 as \"1\", 1.5 as "
      "\"1.5\", [1, 2] as \"[1,2]\"): the string \"1\" and the int 1 share a count, where "
      "Python would keep two keys; unlike streamz, arrays and objects can be counted "
      "(Python's dict refuses unhashable elements). Like streamz, every output is the whole table: "
      "for many "
      "distinct elements prefer accumulate with count_by. Keeps each message's key, headers "
      "and event time. State: the counts.";

  Frequencies(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  void count(std::string key, int64_t n);
  [[nodiscard]] sdk::Value table() const;

  std::vector<std::pair<std::string, int64_t>> counts_;  // first appearance order
  std::unordered_map<std::string, size_t> index_;
  std::vector<sdk::Value> out_;
};

}  // namespace sluice::core_ops
