// The standard function library of the core_ops plugin: named functions that map, filter,
// accumulate and the other higher-order operators call. Each has a batch form where it is
// cheap. Errors name the function and the kind of the offending value ("add: expected a
// number, got string"). Definitions: functions.cc (identity, arithmetic, comparisons, JSON),
// functions_text.cc (get, strings, conversions), functions_reduce.cc (reducers).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace sluice::core_ops {

// --- helpers shared by the function files ------------------------------------------------

/// A path into nested values: object keys (strings) and array indexes (ints, negative from
/// the end as in Python), applied in order. Built from the `path` argument of get, the
/// predicates and count_by: a string, an int, or an array of them.
class Path {
 public:
  /// Parses `spec`; throws (through cfg.fail) naming `key` when it is of another kind.
  Path(const sdk::Config& cfg, std::string_view key);
  /// The value at the path in `x`, or nullopt when a step is missing: an absent key, an
  /// index out of range, or a step into a value that is not a container of that kind.
  [[nodiscard]] std::optional<sdk::Value> lookup(sdk::ValueRef x) const;

 private:
  std::vector<std::variant<std::string, int64_t>> steps_;
};

/// x's text as count_by keys and to_string give it: a string as is, bytes as their
/// characters, an int in decimal, a float as Python's repr (1.0, 1e+16, inf, nan), and
/// null, bools, arrays and objects as compact JSON (null, true, [1,2]).
std::string string_form(sdk::ValueRef x);

// --- identity and JSON ----------------------------------------------------------------------

/// `identity`: x.
struct Identity {
  static constexpr const char* k_name = "identity";
  static constexpr const char* k_doc = "Returns its argument unchanged.";
  static sdk::Value call(sdk::ValueRef x) { return sdk::Value::borrow(x); }
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

/// `json_parse`: the value a JSON text (string or bytes) describes.
struct JsonParse {
  static constexpr const char* k_name = "json_parse";
  static constexpr const char* k_doc =
      "Parses a string (or bytes) of JSON text into a value; invalid JSON is an error.";
  static sdk::Result<sdk::Value> call(sdk::Context ctx, sdk::ValueRef x);
};

/// The body of `json_dump` (a free function, not a lambda: the alias below lives in a header
/// and must name one type in every translation unit).
inline sdk::Value json_dump_value(sdk::ValueRef x) { return x.json_dump(); }
/// `json_dump`: compact JSON text of any value.
using JsonDump = sdk::SimpleFunction<"json_dump",
                                     "The compact JSON text of a value, as a string (bytes "
                                     "become base64 strings).",
                                     &json_dump_value>;

// --- arithmetic ------------------------------------------------------------------------------

/// The operation of an Arithmetic function.
enum class ArithOp { add, sub, mul, div, mod };

/// a <op> b into r for the int-preserving ops (add, sub, mul, mod); false on int64
/// overflow (and for div, which is never int). mod's divisor is non-zero (checked by the
/// caller). The int step of Arithmetic and of the int fast path below.
template <ArithOp Op>
inline bool int_op(int64_t a, int64_t b, int64_t& r) noexcept {
  if constexpr (Op == ArithOp::add) return !__builtin_add_overflow(a, b, &r);
  if constexpr (Op == ArithOp::sub) return !__builtin_sub_overflow(a, b, &r);
  if constexpr (Op == ArithOp::mul) return !__builtin_mul_overflow(a, b, &r);
  if constexpr (Op == ArithOp::mod) {
    if (b == -1) {  // INT64_MIN % -1 traps in C; Python says 0
      r = 0;
      return true;
    }
    r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;  // Python: the sign of the divisor
    return true;
  }
  return false;
}

/// `add`, `sub`, `mul`, `div`, `mod`: x <op> value, with Python's semantics on int and float:
/// int <op> int stays an int for add, sub, mul and mod (overflow is an OUT_OF_RANGE error);
/// div is true division (always a float); mod takes the sign of the divisor; a zero divisor
/// is an INVALID_ARGUMENT error (for floats too, as Python raises); any float makes a float.
/// add also concatenates two strings. Bools are not numbers here (an error, unlike Python).
template <ArithOp Op>
class Arithmetic {
 public:
  static constexpr const char* k_name = Op == ArithOp::add   ? "add"
                                        : Op == ArithOp::sub ? "sub"
                                        : Op == ArithOp::mul ? "mul"
                                        : Op == ArithOp::div ? "div"
                                                             : "mod";
  static constexpr const char* k_doc =
      Op == ArithOp::add
          ? "x + value. Ints stay ints (overflow is an error); a float makes a float; two "
            "strings concatenate."
      : Op == ArithOp::sub
          ? "x - value. Ints stay ints (overflow is an error); a float makes a float."
      : Op == ArithOp::mul
          ? "x * value. Ints stay ints (overflow is an error); a float makes a float."
      : Op == ArithOp::div
          ? "x / value, Python's true division: always a float (7 / 2 = 3.5); a zero divisor "
            "is an error."
          : "x % value with Python's sign rule (the result has the divisor's sign: -7 % 3 = "
            "2); ints stay ints; a zero divisor is an error.";
  static constexpr std::array k_params{
      sdk::required("value", SL_PARAM_ANY,
                    Op == ArithOp::add ? "The other operand: an int, a float or (to append) a "
                                         "string."
                                       : "The other operand: an int or a float."),
  };

  /// The constructor's checks of the args, for `sluiced validate` (it has no side effects).
  static void validate(const sdk::Config& args) { static_cast<void>(Arithmetic(args)); }
  explicit Arithmetic(const sdk::Config& args);
  [[nodiscard]] sdk::Result<sdk::Value> call(sdk::ValueRef x) const;
  sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out) const;

 private:
  sdk::Value operand_;
};
using Add = Arithmetic<ArithOp::add>;
using Sub = Arithmetic<ArithOp::sub>;
using Mul = Arithmetic<ArithOp::mul>;
using Div = Arithmetic<ArithOp::div>;
using Mod = Arithmetic<ArithOp::mod>;
extern template class Arithmetic<ArithOp::add>;
extern template class Arithmetic<ArithOp::sub>;
extern template class Arithmetic<ArithOp::mul>;
extern template class Arithmetic<ArithOp::div>;
extern template class Arithmetic<ArithOp::mod>;

// --- predicates ------------------------------------------------------------------------------

/// The test of a Compare predicate.
enum class CompareOp { eq, ne, gt, ge, lt, le };

// --- the int fast path -----------------------------------------------------------------------
// One implementation of "an int element and an int operand: compute inline, no host call,
// no Value per element", used by the batch forms of Arithmetic and Compare below and by
// map/filter/remove's operator chaining (IntKernel in map_filter.hpp), so the two cannot
// drift apart. Each run works over a prefix of `in` and returns its length: it stops at the
// first element that is not an int, or whose result does not fit (the caller hands that one
// to the function's full form, so results and error messages stay the function's own).
// Results are ints or bools (nothing owned), each written straight into its slot (built in a
// local and copied, a 4-byte kind store then a 16-byte load stalled store forwarding: 12 ns
// per element); one loop per operation, so no switch runs per element.

/// a <op> b for two ints, as Compare computes it (the host's order on ints is theirs).
template <CompareOp Op>
constexpr bool int_compare(int64_t a, int64_t b) noexcept {
  if constexpr (Op == CompareOp::eq) return a == b;
  if constexpr (Op == CompareOp::ne) return a != b;
  if constexpr (Op == CompareOp::gt) return a > b;
  if constexpr (Op == CompareOp::ge) return a >= b;
  if constexpr (Op == CompareOp::lt) return a < b;
  if constexpr (Op == CompareOp::le) return a <= b;
}

/// out[i] = in[i] <op> b (an int) for the int-preserving ops (not div; mod: b != 0).
template <ArithOp Op>
size_t int_arith_run(const sl_value* in, size_t n, int64_t b, sl_value* out) noexcept {
  static_assert(Op != ArithOp::div, "div is never int");
  size_t i = 0;
  for (; i < n; ++i) {
    int64_t r = 0;
    if (in[i].kind != SL_KIND_INT || !int_op<Op>(in[i].as.i, b, r)) break;
    out[i] = sl_int(r);
  }
  return i;
}

/// keep[i] = whether in[i] <op> b is truthy (non-zero): a filter on an arithmetic function.
template <ArithOp Op>
size_t int_arith_test_run(const sl_value* in, size_t n, int64_t b, uint8_t* keep) noexcept {
  static_assert(Op != ArithOp::div, "div is never int");
  size_t i = 0;
  for (; i < n; ++i) {
    int64_t r = 0;
    if (in[i].kind != SL_KIND_INT || !int_op<Op>(in[i].as.i, b, r)) break;
    keep[i] = r != 0 ? 1 : 0;
  }
  return i;
}

/// out[i] = the bool in[i] <op> b.
template <CompareOp Op>
size_t int_compare_run(const sl_value* in, size_t n, int64_t b, sl_value* out) noexcept {
  size_t i = 0;
  for (; i < n && in[i].kind == SL_KIND_INT; ++i) {
    out[i] = sl_bool(int_compare<Op>(in[i].as.i, b) ? 1 : 0);
  }
  return i;
}

/// keep[i] = in[i] <op> b, as 0 or 1.
template <CompareOp Op>
size_t int_compare_test_run(const sl_value* in, size_t n, int64_t b, uint8_t* keep) noexcept {
  size_t i = 0;
  for (; i < n && in[i].kind == SL_KIND_INT; ++i) {
    keep[i] = int_compare<Op>(in[i].as.i, b) ? 1 : 0;
  }
  return i;
}

/// `eq`, `ne`, `gt`, `ge`, `lt`, `le`: x <op> value in the host's total order of values
/// (numbers compare by value, 1 == 1.0; across kinds null < bool < numbers < string < bytes <
/// array < object, so comparing different kinds never fails: gt(null, 5) is false). With
/// `path`, x is first replaced by the value at that path (null when missing).
template <CompareOp Op>
class Compare {
 public:
  static constexpr const char* k_name = Op == CompareOp::eq   ? "eq"
                                        : Op == CompareOp::ne ? "ne"
                                        : Op == CompareOp::gt ? "gt"
                                        : Op == CompareOp::ge ? "ge"
                                        : Op == CompareOp::lt ? "lt"
                                                              : "le";
  static constexpr const char* k_doc =
      Op == CompareOp::eq   ? "True when x == value (1 == 1.0; values of different kinds differ)."
      : Op == CompareOp::ne ? "True when x != value (1 == 1.0; values of different kinds differ)."
      : Op == CompareOp::gt ? "True when x > value (numbers by value; other kinds by kind order)."
      : Op == CompareOp::ge ? "True when x >= value (numbers by value; other kinds by kind order)."
      : Op == CompareOp::lt ? "True when x < value (numbers by value; other kinds by kind order)."
                            : "True when x <= value (numbers by value; other kinds by kind order).";
  static constexpr int32_t k_kind = SL_FUNCTION_PREDICATE;
  static constexpr std::array k_params{
      sdk::required("value", SL_PARAM_ANY, "The value to compare each element with."),
      sdk::param("path", SL_PARAM_ANY, nullptr,
                 "Compare the value at this path of x instead (as `get`: a key, an index or an "
                 "array of them; missing is null)."),
  };

  /// The constructor's checks of the args, for `sluiced validate` (it has no side effects).
  static void validate(const sdk::Config& args) { static_cast<void>(Compare(args)); }
  explicit Compare(const sdk::Config& args);
  [[nodiscard]] bool call(sdk::ValueRef x) const;
  sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out) const;

 private:
  sdk::Value operand_;
  std::optional<Path> path_;
};
using Eq = Compare<CompareOp::eq>;
using Ne = Compare<CompareOp::ne>;
using Gt = Compare<CompareOp::gt>;
using Ge = Compare<CompareOp::ge>;
using Lt = Compare<CompareOp::lt>;
using Le = Compare<CompareOp::le>;
extern template class Compare<CompareOp::eq>;
extern template class Compare<CompareOp::ne>;
extern template class Compare<CompareOp::gt>;
extern template class Compare<CompareOp::ge>;
extern template class Compare<CompareOp::lt>;
extern template class Compare<CompareOp::le>;

/// `not_null`: x is not null.
struct NotNull {
  static constexpr const char* k_name = "not_null";
  static constexpr const char* k_doc = "True when the element is not null.";
  static constexpr int32_t k_kind = SL_FUNCTION_PREDICATE;
  static bool call(sdk::ValueRef x) { return !x.is_null(); }
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

/// `truthy`: Python truthiness of x.
struct Truthy {
  static constexpr const char* k_name = "truthy";
  static constexpr const char* k_doc =
      "True when x is truthy as in Python: null, false, 0, 0.0, \"\", empty bytes, [] and {} "
      "are false; everything else (NaN included) is true.";
  static constexpr int32_t k_kind = SL_FUNCTION_PREDICATE;
  static bool call(sdk::ValueRef x) { return x.truthy(); }
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

// --- get, strings and conversions (functions_text.cc) -------------------------------------

/// `get`: the value at a path (see Path); `default` (null unless given) when missing.
class Get {
 public:
  static constexpr const char* k_name = "get";
  static constexpr const char* k_doc =
      "The value at `path` in x: a key of an object (string), an index of an array (int; "
      "negative counts from the end, as in Python), or an array of them to go deeper "
      "(path = [\"user\", \"tags\", 0]). When a step is missing (absent key, index out of "
      "range, or a step into a value of another kind) the result is `default` (null unless "
      "given), not an error: follow with filter(not_null) to drop such elements.";
  static constexpr std::array k_params{
      sdk::required("path", SL_PARAM_ANY, "A key, an index, or an array of them."),
      sdk::param("default", SL_PARAM_ANY, nullptr, "The result when the path is missing."),
  };

  /// The constructor's checks of the args, for `sluiced validate` (it has no side effects).
  static void validate(const sdk::Config& args) { static_cast<void>(Get(args)); }
  explicit Get(const sdk::Config& args);
  [[nodiscard]] sdk::Value call(sdk::ValueRef x) const;
  sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out) const;

 private:
  Path path_;
  sdk::Value default_;
};

/// `upper`, `lower`: ASCII case change of a string (other bytes unchanged).
template <bool ToUpper>
struct ChangeCase {
  static constexpr const char* k_name = ToUpper ? "upper" : "lower";
  static constexpr const char* k_doc =
      ToUpper ? "The string with ASCII letters upper-cased (other characters unchanged, unlike "
                "Python's Unicode-aware str.upper)."
              : "The string with ASCII letters lower-cased (other characters unchanged, unlike "
                "Python's Unicode-aware str.lower).";
  static sdk::Result<sdk::Value> call(sdk::ValueRef x);
};
using Upper = ChangeCase<true>;
using Lower = ChangeCase<false>;
extern template struct ChangeCase<true>;
extern template struct ChangeCase<false>;

/// `split`: Python's str.split(sep, maxsplit) as an array of strings.
class Split {
 public:
  static constexpr const char* k_name = "split";
  static constexpr const char* k_doc =
      "Splits a string into an array of strings, as Python's str.split: without `sep`, on "
      "runs of whitespace (Unicode whitespace, as str.isspace), ignoring it at both ends "
      "(\"  a b \" gives [\"a\", \"b\"], \"\" gives []); with `sep`, on each occurrence of "
      "it (\"a,,b\" gives [\"a\", \"\", \"b\"], \"\" gives [\"\"]).";
  static constexpr std::array k_params{
      sdk::param("sep", SL_PARAM_STRING, nullptr, "The separator (non-empty).").non_empty(),
      sdk::param("maxsplit", SL_PARAM_INT, "-1",
                 "At most this many splits (the rest stays in the last item); -1: no limit."),
  };

  /// The constructor's checks of the args, for `sluiced validate` (it has no side effects).
  static void validate(const sdk::Config& args) { static_cast<void>(Split(args)); }
  explicit Split(const sdk::Config& args);
  [[nodiscard]] sdk::Result<sdk::Value> call(sdk::ValueRef x) const;

 private:
  std::optional<std::string> sep_;
  int64_t maxsplit_;
  // call's scratch, reused (a binding is called on its node's executor thread only): no
  // growth of a fresh vector per string.
  mutable std::vector<sdk::Value> parts_;
};

/// `strip`: Python's str.strip(chars).
class Strip {
 public:
  static constexpr const char* k_name = "strip";
  static constexpr const char* k_doc =
      "The string without leading and trailing whitespace (Unicode whitespace, as Python's "
      "str.strip()), or without any of the characters of `chars` at both ends.";
  static constexpr std::array k_params{
      sdk::param("chars", SL_PARAM_STRING, nullptr,
                 "The characters to remove (each a Unicode character); default whitespace."),
  };

  explicit Strip(const sdk::Config& args);
  [[nodiscard]] sdk::Result<sdk::Value> call(sdk::ValueRef x) const;

 private:
  std::optional<std::vector<uint32_t>> chars_;  // code points; nullopt: whitespace
};

/// `len`: Python's len().
struct Len {
  static constexpr const char* k_name = "len";
  static constexpr const char* k_doc =
      "The length of x as Python's len(): a string's characters (UTF-8 code points, so "
      "len(\"héllo\") is 5), the bytes of bytes, an array's items, an object's entries; "
      "another kind is an error.";
  static sdk::Result<sdk::Value> call(sdk::ValueRef x);
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

/// `to_int`: Python's int().
struct ToInt {
  static constexpr const char* k_name = "to_int";
  static constexpr const char* k_doc =
      "x as an int, as Python's int(): a float truncates toward zero (NaN and infinities are "
      "errors), a bool is 0 or 1, a string (or bytes) of a decimal integer is parsed "
      "(surrounding whitespace, a sign and single underscores between digits allowed: "
      "\" -1_000 \" is -1000; \"3.5\" is an error). Out of the 64-bit range is an error.";
  static sdk::Result<sdk::Value> call(sdk::ValueRef x);
};

/// `to_float`: Python's float().
struct ToFloat {
  static constexpr const char* k_name = "to_float";
  static constexpr const char* k_doc =
      "x as a float, as Python's float(): ints and bools convert, a string (or bytes) is "
      "parsed (surrounding whitespace allowed; \"1e3\", \"-inf\", \"nan\" accepted; too large "
      "is inf, as Python); another kind or text is an error.";
  static sdk::Result<sdk::Value> call(sdk::ValueRef x);
};

/// `to_string`: string_form(x).
struct ToString {
  static constexpr const char* k_name = "to_string";
  static constexpr const char* k_doc =
      "x as a string: a string unchanged, bytes as their characters, an int in decimal, a "
      "float as Python's repr (1.0, 0.1, 1e+16, inf, nan), and null, bools, arrays and "
      "objects as compact JSON (null, true, [1,\"a\"]) -- JSON spelling rather than Python's "
      "None/True.";
  static sdk::Value call(sdk::ValueRef x);
};

// --- reducers (functions_reduce.cc), called (acc, x) -------------------------------------

/// `sum`: acc + x (numbers; ints stay ints, overflow is an error); with one argument, the
/// sum of an array's items (Python's sum(iterable): 0 + x0 + x1 + ..., left to right).
struct Sum {
  static constexpr const char* k_name = "sum";
  static constexpr const char* k_doc =
      "Reducer: acc + x. Ints stay ints (overflow is an error), a float makes a float; "
      "another kind is an error. Without `start`, accumulate starts from the first element "
      "(a running total); with start = 0 the same. With one argument (map, filter), the sum "
      "of an array's items as Python's sum(iterable): 0 + x0 + x1 + ... left to right with "
      "the same rules ([] gives 0, [1, 2] gives 3, [1, 2.5] gives 3.5), so sliding_window "
      "followed by map(function = \"sum\") is streamz's map(sum); an element that is not an "
      "array, or an item that is not a number, is an error.";
  static constexpr int32_t k_kind = SL_FUNCTION_REDUCER;
  static constexpr uint32_t k_min_arity = 1;  // (items) or (acc, x)
  static constexpr uint32_t k_max_arity = 2;
  static sdk::Result<sdk::Value> call(sdk::Args args);
  /// The one-argument form on a batch of arrays (map(function = "sum")).
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

/// `count`: acc + 1.
struct Count {
  static constexpr const char* k_name = "count";
  static constexpr const char* k_doc =
      "Reducer: acc + 1, the number of elements seen. Give accumulate start = 0: without "
      "`start` the first element itself becomes the state (as in streamz), so counting would "
      "go on from its value; a state that is not an int is an error.";
  static constexpr int32_t k_kind = SL_FUNCTION_REDUCER;
  static sdk::Result<sdk::Value> call(sdk::Args args);
};

/// `min`, `max`: the smaller / larger of acc and x; with one argument, of an array's items
/// (Python's min(iterable) / max(iterable): the first such item).
template <bool Max>
struct Extreme {
  static constexpr const char* k_name = Max ? "max" : "min";
  static constexpr const char* k_doc =
      Max ? "Reducer: the larger of acc and x in the host's order of values (numbers by value; "
            "on a tie acc is kept). Works with or without `start`. With one argument (map, "
            "filter), the largest item of an array as Python's max(iterable): the first of "
            "equal ones; an empty array or an element that is not an array is an error."
          : "Reducer: the smaller of acc and x in the host's order of values (numbers by value; "
            "on a tie acc is kept). Works with or without `start`. With one argument (map, "
            "filter), the smallest item of an array as Python's min(iterable): the first of "
            "equal ones; an empty array or an element that is not an array is an error.";
  static constexpr int32_t k_kind = SL_FUNCTION_REDUCER;
  static constexpr uint32_t k_min_arity = 1;  // (items) or (acc, x)
  static constexpr uint32_t k_max_arity = 2;
  static sdk::Result<sdk::Value> call(sdk::Args args);
};
using Min = Extreme<false>;
using Max = Extreme<true>;
extern template struct Extreme<false>;
extern template struct Extreme<true>;

/// Whether reducer `name` of this library also has a one-argument form (an array's sum,
/// min or max), so map and filter may call it with one element. Names are unique across
/// plugins, so a reducer of that name is this library's.
[[nodiscard]] constexpr bool reducer_takes_one_argument(std::string_view name) noexcept {
  return (name == Sum::k_name && Sum::k_min_arity == 1) ||
         (name == Min::k_name && Min::k_min_arity == 1) ||
         (name == Max::k_name && Max::k_min_arity == 1);
}

/// `count_by`: acc with acc[string_form(key)] incremented, key = x or x at `path`.
class CountBy {
 public:
  static constexpr const char* k_name = "count_by";
  static constexpr const char* k_doc =
      "Reducer: an object of counts keyed by the string form of x (as to_string; with `path`, "
      "of the value at that path, \"null\" when missing) -- word frequencies with "
      "split and flatten before it. Keys keep first-seen order. Start with start = {}; "
      "without `start`, a state that is not an object is taken to be the first element "
      "(streamz makes it the state) and counted, so elements that are objects need start = {}.";
  static constexpr int32_t k_kind = SL_FUNCTION_REDUCER;
  static constexpr std::array k_params{
      sdk::param("path", SL_PARAM_ANY, nullptr,
                 "Count the value at this path of x (as `get`) instead of x."),
  };

  /// The constructor's checks of the args, for `sluiced validate` (it has no side effects).
  static void validate(const sdk::Config& args) { static_cast<void>(CountBy(args)); }
  explicit CountBy(const sdk::Config& args);
  [[nodiscard]] sdk::Result<sdk::Value> call(sdk::Args args) const;
  /// The same step for a caller whose `state` is to be replaced by the result (accumulate):
  /// when the caller's reference is the only one, `state` itself is updated in place and
  /// nullopt is returned (the caller keeps `state`): the key is found with host
  /// object_get and set or added with object_put_unique (which may move the object to a
  /// larger block: `state` then holds it), O(1) (amortised) instead of copying every key.
  /// Otherwise the new state, exactly call({state, x}). On failure `state` is unchanged.
  [[nodiscard]] sdk::Result<std::optional<sdk::Value>> step(sdk::Value& state,
                                                            sdk::ValueRef x) const;

 private:
  [[nodiscard]] std::string key_of(sdk::ValueRef x) const;
  std::optional<Path> path_;
};

/// `collect_list`: acc with x appended.
struct CollectList {
  static constexpr const char* k_name = "collect_list";
  static constexpr const char* k_doc =
      "Reducer: the array acc with x appended (a copy: O(n) per element, for modest lists). "
      "Start with start = []; without `start`, a state that is not an array is taken to be the "
      "first element and becomes [first, x], so elements that are arrays need start = [].";
  static constexpr int32_t k_kind = SL_FUNCTION_REDUCER;
  static sdk::Value call(sdk::Args args);
};

}  // namespace sluice::core_ops
