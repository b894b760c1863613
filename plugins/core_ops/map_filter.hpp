// Element-wise operators of the core_ops plugin: map, filter and remove (a filter with the
// test negated), driven by a named function and called with its batch form. All three
// offer operator chaining (map_values / select_values).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sluice::core_ops {

/// Binds the FUNCTION key `key` and checks it takes one element: a map or predicate
/// function, or one of this library's reducers that also reduce an array given alone
/// (sum, min, max: streamz's map(sum) after a window). Throws Config::fail otherwise; a
/// bind failure is already reported on `ctx`. Used by map, filter and key_by.
sdk::Function bind_element_function(sdk::Context ctx, const sdk::Config& cfg, const char* key);

/// This library's element functions that map and filter run inline on int elements, without
/// a call through the host or a Value per element: add, sub, mul and mod with an int
/// `value`, and eq, ne, gt, ge, lt and le with an int `value` and no `path`. The runs are
/// the functions' own int fast path (functions.hpp: int_arith_run, int_compare_run...),
/// which their batch forms use too. An element of another kind, or an overflow, is left to
/// the bound function, so results and error messages stay the function's own. Names are
/// unique across plugins, so a function of one of these names is this library's.
class IntKernel {
 public:
  /// The kernel for the normalised function spec of map/filter (`name` or `{name, args}`),
  /// or nullopt when the function is another one (or its `value` is not an int).
  static std::optional<IntKernel> of(const sdk::Value& spec);
  /// f(in[i]) into out[i] (an int, or a bool for a comparison) over a run of values (operator
  /// chaining): false as soon as one is not an int or needs the bound function; out[0, n) then
  /// holds only ints and bools (nothing owned).
  [[nodiscard]] bool map(const sl_value* in, size_t n, sl_value* out) const noexcept;
  /// The same for a predicate: keep[i] = whether f(in[i]) is truthy.
  [[nodiscard]] bool select(const sl_value* in, size_t n, uint8_t* keep) const noexcept;

 private:
  enum class Op : uint8_t { add, sub, mul, mod, eq, ne, gt, ge, lt, le };
  IntKernel(Op op, int64_t operand) noexcept : op_(op), operand_(operand) {}
  Op op_;
  int64_t operand_;
};

/// `map`: each element replaced by function(element); key, headers and timestamp are kept.
class Map final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "map";
  static constexpr const char* k_doc =
      "Emits function(x) for each element x, keeping each message's key, headers and event "
      "time (streamz map). `function` names a map (or predicate) function; its arguments go "
      "in `args`, e.g. function = \"add\", args = { value = 1 }. The reducers sum, min and "
      "max also serve: given one array they reduce its items, as Python's sum(iterable) "
      "(streamz sliding_window(n).map(sum)).";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION, "The function to apply to each element.")
          .one_of("map|predicate"),
  };

  Map(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  /// Operator chaining (sl_node_type.map_values): what process emits, as bare values.
  sdk::Status map_values(sdk::Context ctx, std::span<const sl_value> in, std::span<sdk::Value> out);

 private:
  sdk::Function fn_;
  std::optional<IntKernel> kernel_;
  std::vector<sl_value> in_;  // per-batch scratch, reused
  std::vector<sdk::Value> out_;
};

/// `filter`: the elements whose predicate result (or own value) is truthy. `remove` is a
/// Filter with `negate` set.
class Filter : public sdk::Operator {
 public:
  static constexpr const char* k_name = "filter";
  static constexpr const char* k_doc =
      "Keeps the elements for which `function` returns a truthy result (streamz filter). "
      "Without `function`, keeps the elements that are themselves truthy, as Python's "
      "filter(None, ...): null, false, 0, 0.0, \"\", empty bytes, arrays and objects are "
      "dropped.";
  static constexpr std::array k_params{
      sdk::param("function", SL_PARAM_FUNCTION, nullptr,
                 "The predicate (or map function whose result is tested for truthiness).")
          .one_of("map|predicate"),
  };

  Filter(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  /// Operator chaining (sl_node_type.select_values): which messages process passes.
  sdk::Status select_values(sdk::Context ctx, std::span<const sl_value> in,
                            std::span<uint8_t> keep);

 protected:
  /// Keeps the elements for which `fn` (empty: the element itself) is truthy, or with
  /// `negate` those for which it is falsy. `kernel` is IntKernel::of(the function's spec).
  Filter(sdk::Function fn, std::optional<IntKernel> kernel, bool negate);

 private:
  /// truthy[i] = whether fn_(in[i]) (or in[i] itself) is truthy, as 0 or 1.
  sdk::Status test(std::span<const sl_value> in, std::span<uint8_t> truthy);

  sdk::Function fn_;  // empty: test the elements themselves
  std::optional<IntKernel> kernel_;
  bool negate_ = false;  // remove: keep what the test rejects
  std::vector<sl_value> in_;
  std::vector<sdk::Value> out_;
  std::vector<uint8_t> keep_;
};

/// `remove`: the elements whose predicate result is falsy (the opposite of filter).
class Remove final : public Filter {
 public:
  static constexpr const char* k_name = "remove";
  static constexpr const char* k_doc =
      "Drops the elements for which `function` returns a truthy result and passes the others "
      "on unchanged (streamz remove: filter(lambda x: not predicate(x))). Truthiness is "
      "Python's: null, false, 0, 0.0, \"\", empty bytes, arrays and objects are falsy.";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION,
                    "The predicate (or map function whose result is tested for truthiness)."),
  };

  /// Binds `function` as bind_callable does (no kind check, unlike filter's).
  Remove(sdk::Context ctx, const sdk::Config& cfg);
};

}  // namespace sluice::core_ops
