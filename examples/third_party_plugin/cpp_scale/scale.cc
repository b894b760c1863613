// cpp_scale: a sluice plugin in C++20 on <sluice/sluice.hpp>. One operator class ("scale"),
// one named function ("scale_by") for `map` and friends, and one line that registers both.
#include <sluice/sluice.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

namespace {

using namespace sluice::sdk;

// x * factor. An int stays an int when the factor is a whole number and the product fits
// in int64; otherwise the result is a float.
Value scale(ValueRef x, double factor) {
  int64_t product = 0;
  if (x.is_int() && std::trunc(factor) == factor && std::fabs(factor) < 9.2e18 &&
      !__builtin_mul_overflow(x.as_int(), static_cast<int64_t>(factor), &product)) {
    return Value::integer(product);
  }
  return Value::floating(x.as_float() * factor);
}

// The operator: numbers are scaled; other elements pass through as they came, or are
// dropped. Keys, headers and event times are kept.
class Scale final : public Operator {
 public:
  static constexpr const char* k_name = "scale";
  static constexpr const char* k_doc = "Multiplies numbers by `factor`; other elements pass on.";
  static constexpr std::array k_params{
      required("factor", SL_PARAM_FLOAT, "What each number is multiplied by."),
      param("drop_others", SL_PARAM_BOOL, "false", "Drop elements that are not numbers.")};

  // The host has checked the config against k_params; a bad value throws from Config
  // with a message naming the node and the key, and create() fails with it.
  Scale(Context /*ctx*/, const Config& config)
      : factor_(config.get_float("factor")), drop_others_(config.get_bool("drop_others")) {}

  Status process_one(Context ctx, uint32_t /*input*/, const sl_message& message) override {
    const ValueRef x(message.value);  // borrowed from the batch
    if (!x.is_number()) return drop_others_ ? Status() : ctx.emit(message);
    const Value scaled = scale(x, factor_);  // owned; released at the end of the scope
    sl_message out = message;
    out.value = scaled.raw();  // emit borrows it
    return ctx.emit(out);
  }

 private:
  double factor_;
  bool drop_others_;
};

// The same computation as a named function, bound once per use with its own args:
//   [operators.tenfold]
//   type = "map"
//   inputs = ["numbers"]
//   function = { name = "scale_by", args = { factor = 10 } }
class ScaleBy {
 public:
  static constexpr const char* k_name = "scale_by";
  static constexpr const char* k_doc = "x * factor, for a number x.";
  static constexpr std::array k_params{required("factor", SL_PARAM_FLOAT, "The multiplier.")};

  explicit ScaleBy(const Config& args) : factor_(args.get_float("factor")) {}

  [[nodiscard]] Result<Value> call(ValueRef x) const {
    if (!x.is_number()) {
      return invalid_argument("scale_by: expected a number, got " + std::string(x.kind_name()));
    }
    return scale(x, factor_);
  }

 private:
  double factor_;
};

}  // namespace

SLUICE_PLUGIN("cpp_scale", "1.0.0", "Example third-party plugin in C++: scales numbers.",
              SLUICE_NODE_TYPES(Scale), SLUICE_FUNCTIONS(ScaleBy));
