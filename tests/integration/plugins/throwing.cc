// A C++ plugin (sluice.hpp) whose operator throws a std::runtime_error from process_one
// on the element equal to `throw_on`; elements before it pass through. The SDK's plugin
// edge must catch the exception and the host must report it with the node id (exit 1).
#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace {
using namespace sluice::sdk;

class ThrowingOp final : public Operator {
 public:
  static constexpr const char* k_name = "throwing_op";
  static constexpr const char* k_doc =
      "Passes ints through; throws on the element equal to throw_on.";
  static constexpr std::array k_params{
      param("throw_on", SL_PARAM_INT, "3", "The element that makes process throw.")};

  ThrowingOp(Context, const Config& cfg) : throw_on_(cfg.get_int("throw_on")) {}

  Status process_one(Context ctx, uint32_t, const sl_message& m) override {
    ValueRef v(m.value);
    if (v.is_int() && v.as_int() == throw_on_) {
      throw std::runtime_error("it_throwing: deliberate exception on element " +
                               std::to_string(throw_on_));
    }
    return ctx.emit(m);
  }

 private:
  int64_t throw_on_;
};

}  // namespace

SLUICE_PLUGIN("it_throwing", "0.0.1", "Integration test: a node whose process throws.",
              SLUICE_NODE_TYPES(ThrowingOp));
