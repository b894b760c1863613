// The standard function library of the core_ops plugin: named functions that map, filter
// and the other higher-order operators call. Each has a batch form where it is cheap.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <span>

namespace sluice::core_ops {

/// `identity`: x.
struct Identity {
  static constexpr const char* k_name = "identity";
  static constexpr const char* k_doc = "Returns its argument unchanged.";
  static sdk::Value call(sdk::ValueRef x) { return sdk::Value::borrow(x); }
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

/// The operation of an Arithmetic function.
enum class ArithOp { add, sub, mul };

/// `add`, `sub`, `mul`: x <op> value. int <op> int stays an int (overflow is an
/// OUT_OF_RANGE error); any float makes a float; another kind is an INVALID_ARGUMENT error.
template <ArithOp Op>
class Arithmetic {
 public:
  static constexpr const char* k_name = Op == ArithOp::add   ? "add"
                                        : Op == ArithOp::sub ? "sub"
                                                             : "mul";
  static constexpr const char* k_doc =
      Op == ArithOp::add
          ? "x + value. Ints stay ints (overflow is an error); a float makes a float."
      : Op == ArithOp::sub
          ? "x - value. Ints stay ints (overflow is an error); a float makes a float."
          : "x * value. Ints stay ints (overflow is an error); a float makes a float.";
  static constexpr std::array k_params{
      sdk::required("value", SL_PARAM_ANY, "The other operand: an int or a float."),
  };

  explicit Arithmetic(const sdk::Config& args);
  [[nodiscard]] sdk::Result<sdk::Value> call(sdk::ValueRef x) const;
  sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out) const;

 private:
  sdk::Value operand_;
};
using Add = Arithmetic<ArithOp::add>;
using Sub = Arithmetic<ArithOp::sub>;
using Mul = Arithmetic<ArithOp::mul>;
extern template class Arithmetic<ArithOp::add>;
extern template class Arithmetic<ArithOp::sub>;
extern template class Arithmetic<ArithOp::mul>;

/// `upper`, `lower`: ASCII case change of a string (other bytes unchanged).
template <bool ToUpper>
struct ChangeCase {
  static constexpr const char* k_name = ToUpper ? "upper" : "lower";
  static constexpr const char* k_doc =
      ToUpper ? "The string with ASCII letters upper-cased (other characters unchanged)."
              : "The string with ASCII letters lower-cased (other characters unchanged).";
  static sdk::Result<sdk::Value> call(sdk::ValueRef x);
};
using Upper = ChangeCase<true>;
using Lower = ChangeCase<false>;
extern template struct ChangeCase<true>;
extern template struct ChangeCase<false>;

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

/// The test of a Compare predicate.
enum class CompareOp { gt, lt, eq };

/// `gt`, `lt`, `eq`: x <op> value in the host's total order of values (numbers compare by
/// value, 1 == 1.0; null < bool < numbers < string < bytes < array < object).
template <CompareOp Op>
class Compare {
 public:
  static constexpr const char* k_name = Op == CompareOp::gt   ? "gt"
                                        : Op == CompareOp::lt ? "lt"
                                                              : "eq";
  static constexpr const char* k_doc =
      Op == CompareOp::gt   ? "True when x > value (numbers by value; other kinds by kind order)."
      : Op == CompareOp::lt ? "True when x < value (numbers by value; other kinds by kind order)."
                            : "True when x == value (1 == 1.0; values of different kinds differ).";
  static constexpr int32_t k_kind = SL_FUNCTION_PREDICATE;
  static constexpr std::array k_params{
      sdk::required("value", SL_PARAM_ANY, "The value to compare each element with."),
  };

  explicit Compare(const sdk::Config& args) : operand_(args.get_value("value")) {}
  [[nodiscard]] bool call(sdk::ValueRef x) const;
  sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out) const;

 private:
  sdk::Value operand_;
};
using Gt = Compare<CompareOp::gt>;
using Lt = Compare<CompareOp::lt>;
using Eq = Compare<CompareOp::eq>;
extern template class Compare<CompareOp::gt>;
extern template class Compare<CompareOp::lt>;
extern template class Compare<CompareOp::eq>;

/// `not_null`: x is not null.
struct NotNull {
  static constexpr const char* k_name = "not_null";
  static constexpr const char* k_doc = "True when the element is not null.";
  static constexpr int32_t k_kind = SL_FUNCTION_PREDICATE;
  static bool call(sdk::ValueRef x) { return !x.is_null(); }
  static sdk::Status call_batch(sdk::Context ctx, sdk::Args in, std::span<sdk::Value> out);
};

}  // namespace sluice::core_ops
