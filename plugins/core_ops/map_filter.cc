// map, filter and remove.
#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "elementwise.hpp"
#include "functions.hpp"
#include "map_filter.hpp"

namespace sluice::core_ops {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Function;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

Function bind_element_function(Context ctx, const Config& cfg, const char* key) {
  const Value spec = cfg.get_value(key);
  Function fn = ctx.bind_function(spec).value();  // a failure is already reported on ctx
  if (fn.kind() == SL_FUNCTION_REDUCER) {
    std::optional<Value> name = spec.is_string() ? std::optional(spec) : spec.get("name");
    const std::string_view text = name && name->is_string() ? name->as_str() : "?";
    if (!reducer_takes_one_argument(text)) {
      cfg.fail(key, "must be a map or predicate function; '" + std::string(text) +
                        "' is a reducer (use accumulate)");
    }
  }
  return fn;
}

std::optional<IntKernel> IntKernel::of(const Value& spec) {
  if (!spec.is_object()) return std::nullopt;  // a bare name: no `value`; or Lua
  const std::optional<Value> name = spec.get("name");
  const std::optional<Value> args = spec.get("args");
  if (!name || !name->is_string() || !args || !args->is_object()) return std::nullopt;
  const std::optional<Value> value = args->get("value");
  if (!value || !value->is_int() || args->get("path")) return std::nullopt;
  const int64_t b = value->as_int();
  static constexpr std::array<std::pair<std::string_view, Op>, 10> k_ops{{
      {Add::k_name, Op::add},
      {Sub::k_name, Op::sub},
      {Mul::k_name, Op::mul},
      {Mod::k_name, Op::mod},
      {Eq::k_name, Op::eq},
      {Ne::k_name, Op::ne},
      {Gt::k_name, Op::gt},
      {Ge::k_name, Op::ge},
      {Lt::k_name, Op::lt},
      {Le::k_name, Op::le},
  }};
  for (const auto& [n, op] : k_ops) {
    if (n != name->as_str()) continue;
    if (op == Op::mod && b == 0) return std::nullopt;  // refused when the function binds
    return IntKernel(op, b);
  }
  return std::nullopt;
}

// The runs are functions.hpp's int fast path, which the functions' own batch forms use too.
bool IntKernel::map(const sl_value* in, size_t n, sl_value* out) const noexcept {
  const int64_t b = operand_;
  switch (op_) {
    case Op::add: return int_arith_run<ArithOp::add>(in, n, b, out) == n;
    case Op::sub: return int_arith_run<ArithOp::sub>(in, n, b, out) == n;
    case Op::mul: return int_arith_run<ArithOp::mul>(in, n, b, out) == n;
    case Op::mod: return int_arith_run<ArithOp::mod>(in, n, b, out) == n;
    case Op::eq: return int_compare_run<CompareOp::eq>(in, n, b, out) == n;
    case Op::ne: return int_compare_run<CompareOp::ne>(in, n, b, out) == n;
    case Op::gt: return int_compare_run<CompareOp::gt>(in, n, b, out) == n;
    case Op::ge: return int_compare_run<CompareOp::ge>(in, n, b, out) == n;
    case Op::lt: return int_compare_run<CompareOp::lt>(in, n, b, out) == n;
    case Op::le: return int_compare_run<CompareOp::le>(in, n, b, out) == n;
  }
  return false;
}

bool IntKernel::select(const sl_value* in, size_t n, uint8_t* keep) const noexcept {
  const int64_t b = operand_;
  switch (op_) {
    case Op::add: return int_arith_test_run<ArithOp::add>(in, n, b, keep) == n;
    case Op::sub: return int_arith_test_run<ArithOp::sub>(in, n, b, keep) == n;
    case Op::mul: return int_arith_test_run<ArithOp::mul>(in, n, b, keep) == n;
    case Op::mod: return int_arith_test_run<ArithOp::mod>(in, n, b, keep) == n;
    case Op::eq: return int_compare_test_run<CompareOp::eq>(in, n, b, keep) == n;
    case Op::ne: return int_compare_test_run<CompareOp::ne>(in, n, b, keep) == n;
    case Op::gt: return int_compare_test_run<CompareOp::gt>(in, n, b, keep) == n;
    case Op::ge: return int_compare_test_run<CompareOp::ge>(in, n, b, keep) == n;
    case Op::lt: return int_compare_test_run<CompareOp::lt>(in, n, b, keep) == n;
    case Op::le: return int_compare_test_run<CompareOp::le>(in, n, b, keep) == n;
  }
  return false;
}

Map::Map(Context ctx, const Config& cfg)
    : fn_(bind_element_function(ctx, cfg, "function")),
      kernel_(IntKernel::of(cfg.get_value("function"))) {}

Status Map::process(Context ctx, uint32_t /*input*/, Batch batch) {
  // The chained form over the batch's values, then each result in its message.
  batch.gather_values(in_);
  out_.clear();
  out_.resize(batch.size());  // null slots, as map_values expects
  SLUICE_SDK_RETURN_IF_ERROR(map_values(ctx, in_, out_));
  Status st = ctx.emit_mapped(batch, std::span<const Value>(out_));
  out_.clear();  // release the results now rather than at the next batch
  return st;
}

Status Map::map_values(Context /*ctx*/, std::span<const sl_value> in, std::span<Value> out) {
  // The slots are null on entry (the ABI; process resizes out_ from empty), and Value has
  // sl_value's layout: the kernel writes ints and bools into them, which own nothing.
  if (kernel_ && kernel_->map(in.data(), in.size(), reinterpret_cast<sl_value*>(out.data()))) {
    return {};
  }
  return fn_.call_batch(in, out);  // overwrites what the kernel wrote
}

Filter::Filter(Context ctx, const Config& cfg) {
  if (cfg.has("function")) {
    fn_ = bind_element_function(ctx, cfg, "function");
    kernel_ = IntKernel::of(cfg.get_value("function"));
  }
}

Filter::Filter(Function fn, std::optional<IntKernel> kernel, bool negate)
    : fn_(std::move(fn)), kernel_(kernel), negate_(negate) {}

Remove::Remove(Context ctx, const Config& cfg)
    : Filter(bind_callable(ctx, cfg, "function"), IntKernel::of(cfg.get_value("function")), true) {}

Status Filter::process(Context ctx, uint32_t /*input*/, Batch batch) {
  // The chained form over the batch's values, then the kept messages.
  batch.gather_values(in_);
  keep_.resize(batch.size());
  SLUICE_SDK_RETURN_IF_ERROR(select_values(ctx, in_, keep_));
  return ctx.emit_selected(batch, keep_);
}

Status Filter::select_values(Context /*ctx*/, std::span<const sl_value> in,
                             std::span<uint8_t> keep) {
  SLUICE_SDK_RETURN_IF_ERROR(test(in, keep));
  if (negate_) {
    for (uint8_t& k : keep) k ^= 1;  // test writes 0 or 1
  }
  return {};
}

Status Filter::test(std::span<const sl_value> in, std::span<uint8_t> truthy) {
  if (kernel_ && kernel_->select(in.data(), in.size(), truthy.data())) return {};
  if (!fn_) {
    for (size_t i = 0; i < in.size(); ++i) truthy[i] = ValueRef(in[i]).truthy() ? 1 : 0;
    return {};
  }
  out_.resize(in.size());
  SLUICE_SDK_RETURN_IF_ERROR(fn_.call_batch(in, out_));
  for (size_t i = 0; i < in.size(); ++i) truthy[i] = out_[i].truthy() ? 1 : 0;
  out_.clear();
  return {};
}

}  // namespace sluice::core_ops
