// The standard function library: identity, arithmetic, case, JSON and comparisons.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "functions.hpp"

namespace sluice::core_ops {

using sdk::Args;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

Status Identity::call_batch(Context /*ctx*/, Args in, std::span<Value> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = Value::borrow(in[i]);
  return {};
}

// --- arithmetic --------------------------------------------------------------------------

namespace {

constexpr const char* symbol(ArithOp op) noexcept {
  return op == ArithOp::add ? "+" : op == ArithOp::sub ? "-" : "*";
}

/// a <op> b into r; false on int64 overflow.
template <ArithOp Op>
bool int_op(int64_t a, int64_t b, int64_t& r) noexcept {
  if constexpr (Op == ArithOp::add) return !__builtin_add_overflow(a, b, &r);
  if constexpr (Op == ArithOp::sub) return !__builtin_sub_overflow(a, b, &r);
  if constexpr (Op == ArithOp::mul) return !__builtin_mul_overflow(a, b, &r);
}

template <ArithOp Op>
double float_op(double a, double b) noexcept {
  if constexpr (Op == ArithOp::add) return a + b;
  if constexpr (Op == ArithOp::sub) return a - b;
  if constexpr (Op == ArithOp::mul) return a * b;
}

template <ArithOp Op>
Result<Value> apply(ValueRef x, ValueRef y) {
  if (x.is_int() && y.is_int()) {
    int64_t r = 0;
    if (!int_op<Op>(x.raw().as.i, y.raw().as.i, r)) {
      return sdk::out_of_range(std::string(Arithmetic<Op>::k_name) + ": " +
                               std::to_string(x.raw().as.i) + " " + symbol(Op) + " " +
                               std::to_string(y.raw().as.i) + " does not fit in a 64-bit int");
    }
    return Value::integer(r);
  }
  if (!x.is_number()) {
    return sdk::invalid_argument(std::string(Arithmetic<Op>::k_name) + ": expected a number, got " +
                                 std::string(x.kind_name()));
  }
  return Value::floating(float_op<Op>(x.as_float(), y.as_float()));
}

}  // namespace

template <ArithOp Op>
Arithmetic<Op>::Arithmetic(const Config& args) : operand_(args.get_value("value")) {
  if (!operand_.is_number()) {
    args.fail("value", "must be a number (got " + std::string(operand_.kind_name()) + ")");
  }
}

template <ArithOp Op>
Result<Value> Arithmetic<Op>::call(ValueRef x) const {
  return apply<Op>(x, operand_);
}

template <ArithOp Op>
Status Arithmetic<Op>::call_batch(Context /*ctx*/, Args in, std::span<Value> out) const {
  const bool int_operand = operand_.is_int();
  const int64_t b = operand_.raw().as.i;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t r = 0;  // ints: inline, no host call, no Result
    if (int_operand && in[i].is_int() && int_op<Op>(in[i].raw().as.i, b, r)) {
      out[i] = Value::integer(r);
      continue;
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(out[i], apply<Op>(in[i], operand_));
  }
  return {};
}

template class Arithmetic<ArithOp::add>;
template class Arithmetic<ArithOp::sub>;
template class Arithmetic<ArithOp::mul>;

// --- strings and JSON --------------------------------------------------------------------

template <bool ToUpper>
Result<Value> ChangeCase<ToUpper>::call(ValueRef x) {
  if (!x.is_string()) {
    return sdk::invalid_argument(std::string(k_name) + ": expected a string, got " +
                                 std::string(x.kind_name()));
  }
  const auto changes = [](char c) {
    return ToUpper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z');
  };
  const std::string_view s = x.as_str();
  const auto first = std::find_if(s.begin(), s.end(), changes);
  if (first == s.end()) return Value::borrow(x);  // nothing to change: share, don't copy
  std::string t(s);
  for (auto it = t.begin() + (first - s.begin()); it != t.end(); ++it) {
    if (changes(*it)) *it = static_cast<char>(*it ^ 0x20);
  }
  return Value::string(t);
}

template struct ChangeCase<true>;
template struct ChangeCase<false>;

Result<Value> JsonParse::call(Context ctx, ValueRef x) {
  if (!x.is_string() && !x.is_bytes()) {
    return sdk::invalid_argument("json_parse: expected a string or bytes, got " +
                                 std::string(x.kind_name()));
  }
  return ctx.parse_json(x.as_str());
}

// --- predicates --------------------------------------------------------------------------

namespace {

template <CompareOp Op>
constexpr bool holds(int c) noexcept {
  if constexpr (Op == CompareOp::gt) return c > 0;
  if constexpr (Op == CompareOp::lt) return c < 0;
  if constexpr (Op == CompareOp::eq) return c == 0;
}

}  // namespace

template <CompareOp Op>
bool Compare<Op>::call(ValueRef x) const {
  return holds<Op>(sdk::compare(x, operand_));
}

template <CompareOp Op>
Status Compare<Op>::call_batch(Context /*ctx*/, Args in, std::span<Value> out) const {
  const bool int_operand = operand_.is_int();
  const int64_t b = operand_.raw().as.i;
  for (size_t i = 0; i < in.size(); ++i) {
    int c = 0;
    if (int_operand && in[i].is_int()) {  // ints: compare inline, no host call
      const int64_t a = in[i].raw().as.i;
      c = (a > b) - (a < b);
    } else {
      c = sdk::compare(in[i], operand_);
    }
    out[i] = Value::boolean(holds<Op>(c));
  }
  return {};
}

template class Compare<CompareOp::gt>;
template class Compare<CompareOp::lt>;
template class Compare<CompareOp::eq>;

Status NotNull::call_batch(Context /*ctx*/, Args in, std::span<Value> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = Value::boolean(!in[i].is_null());
  return {};
}

}  // namespace sluice::core_ops
