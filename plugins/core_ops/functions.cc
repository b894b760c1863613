// The standard function library, part 1: identity, JSON, arithmetic and comparisons.
#include <sluice/sluice.hpp>

#include <cmath>
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

Result<Value> JsonParse::call(Context ctx, ValueRef x) {
  if (!x.is_string() && !x.is_bytes()) {
    return sdk::invalid_argument("json_parse: expected a string or bytes, got " +
                                 std::string(x.kind_name()));
  }
  return ctx.parse_json(x.as_str());
}

// --- arithmetic --------------------------------------------------------------------------

namespace {

constexpr const char* symbol(ArithOp op) noexcept {
  switch (op) {
    case ArithOp::add: return "+";
    case ArithOp::sub: return "-";
    case ArithOp::mul: return "*";
    case ArithOp::div: return "/";
    case ArithOp::mod: return "%";
  }
  return "?";
}

template <ArithOp Op>
double float_op(double a, double b) noexcept {
  if constexpr (Op == ArithOp::add) return a + b;
  if constexpr (Op == ArithOp::sub) return a - b;
  if constexpr (Op == ArithOp::mul) return a * b;
  if constexpr (Op == ArithOp::div) return a / b;
  if constexpr (Op == ArithOp::mod) {
    double r = std::fmod(a, b);
    if (r != 0.0) {
      if ((r < 0) != (b < 0)) r += b;
    } else {
      r = std::copysign(0.0, b);  // Python: -0.0 % 3 == 0.0, 0.0 % -3 == -0.0
    }
    return r;
  }
}

template <ArithOp Op>
Status division_by_zero(ValueRef x) {
  return sdk::invalid_argument(std::string(Arithmetic<Op>::k_name) + ": division by zero (" +
                               x.to_json() + " " + symbol(Op) + " 0)");
}

template <ArithOp Op>
Result<Value> apply(ValueRef x, ValueRef y) {
  constexpr const char* name = Arithmetic<Op>::k_name;
  if constexpr (Op == ArithOp::add) {
    if (y.is_string()) {
      if (!x.is_string()) {
        return sdk::invalid_argument(std::string(name) +
                                     ": expected a string (value is a string), got " +
                                     std::string(x.kind_name()));
      }
      std::string s(x.as_str());
      s.append(y.as_str());
      return Value::string(s);
    }
  }
  if (!x.is_number()) {
    return sdk::invalid_argument(std::string(name) + ": expected a number, got " +
                                 std::string(x.kind_name()));
  }
  if (x.is_int() && y.is_int() && Op != ArithOp::div) {
    const int64_t a = x.raw().as.i;
    const int64_t b = y.raw().as.i;
    if (Op == ArithOp::mod && b == 0) return division_by_zero<Op>(x);
    int64_t r = 0;
    if (!int_op<Op>(a, b, r)) {
      return sdk::out_of_range(std::string(name) + ": " + std::to_string(a) + " " + symbol(Op) +
                               " " + std::to_string(b) + " does not fit in a 64-bit int");
    }
    return Value::integer(r);
  }
  const double b = y.as_float();
  if ((Op == ArithOp::div || Op == ArithOp::mod) && b == 0.0) return division_by_zero<Op>(x);
  return Value::floating(float_op<Op>(x.as_float(), b));
}

}  // namespace

template <ArithOp Op>
Arithmetic<Op>::Arithmetic(const Config& args) : operand_(args.get_value("value")) {
  const bool ok = operand_.is_number() || (Op == ArithOp::add && operand_.is_string());
  if (!ok) {
    args.fail("value", std::string(Op == ArithOp::add ? "must be a number or a string"
                                                      : "must be a number") +
                           " (got " + std::string(operand_.kind_name()) + ")");
  }
  if ((Op == ArithOp::div || Op == ArithOp::mod) && operand_.as_float() == 0.0) {
    args.fail("value", "must not be zero (division by zero)");
  }
}

template <ArithOp Op>
Result<Value> Arithmetic<Op>::call(ValueRef x) const {
  return apply<Op>(x, operand_);
}

template <ArithOp Op>
Status Arithmetic<Op>::call_batch(Context /*ctx*/, Args in, std::span<Value> out) const {
  // The slots are null on entry (the SDK's trampoline) and ValueRef and Value have
  // sl_value's layout: the int fast path writes its ints straight into them.
  const auto* raw_in = reinterpret_cast<const sl_value*>(in.data());
  auto* raw_out = reinterpret_cast<sl_value*>(out.data());
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i) {
    if constexpr (Op != ArithOp::div) {
      if (operand_.is_int()) {
        i += int_arith_run<Op>(raw_in + i, n - i, operand_.raw().as.i, raw_out + i);
        if (i == n) break;
      }
    }
    SLUICE_SDK_ASSIGN_OR_RETURN(out[i], apply<Op>(in[i], operand_));  // the rest, errors
  }
  return {};
}

template class Arithmetic<ArithOp::add>;
template class Arithmetic<ArithOp::sub>;
template class Arithmetic<ArithOp::mul>;
template class Arithmetic<ArithOp::div>;
template class Arithmetic<ArithOp::mod>;

// --- predicates --------------------------------------------------------------------------

namespace {

template <CompareOp Op>
constexpr bool holds(int c) noexcept {
  if constexpr (Op == CompareOp::eq) return c == 0;
  if constexpr (Op == CompareOp::ne) return c != 0;
  if constexpr (Op == CompareOp::gt) return c > 0;
  if constexpr (Op == CompareOp::ge) return c >= 0;
  if constexpr (Op == CompareOp::lt) return c < 0;
  if constexpr (Op == CompareOp::le) return c <= 0;
}

}  // namespace

template <CompareOp Op>
Compare<Op>::Compare(const Config& args) : operand_(args.get_value("value")) {
  if (args.has("path")) path_.emplace(args, "path");
}

template <CompareOp Op>
bool Compare<Op>::call(ValueRef x) const {
  if (path_) return holds<Op>(sdk::compare(path_->lookup(x).value_or(Value()), operand_));
  return holds<Op>(sdk::compare(x, operand_));
}

template <CompareOp Op>
Status Compare<Op>::call_batch(Context /*ctx*/, Args in, std::span<Value> out) const {
  if (path_) {
    for (size_t i = 0; i < in.size(); ++i) out[i] = Value::boolean(call(in[i]));
    return {};
  }
  // As Arithmetic's: null slots on entry, filled by the int fast path where it can.
  const auto* raw_in = reinterpret_cast<const sl_value*>(in.data());
  auto* raw_out = reinterpret_cast<sl_value*>(out.data());
  const size_t n = in.size();
  for (size_t i = 0; i < n; ++i) {
    if (operand_.is_int()) {
      i += int_compare_run<Op>(raw_in + i, n - i, operand_.raw().as.i, raw_out + i);
      if (i == n) break;
    }
    out[i] = Value::boolean(holds<Op>(sdk::compare(in[i], operand_)));
  }
  return {};
}

template class Compare<CompareOp::eq>;
template class Compare<CompareOp::ne>;
template class Compare<CompareOp::gt>;
template class Compare<CompareOp::ge>;
template class Compare<CompareOp::lt>;
template class Compare<CompareOp::le>;

Status NotNull::call_batch(Context /*ctx*/, Args in, std::span<Value> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = Value::boolean(!in[i].is_null());
  return {};
}

Status Truthy::call_batch(Context /*ctx*/, Args in, std::span<Value> out) {
  for (size_t i = 0; i < in.size(); ++i) out[i] = Value::boolean(in[i].truthy());
  return {};
}

}  // namespace sluice::core_ops
