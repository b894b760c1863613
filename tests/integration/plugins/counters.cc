// Two stateful counters for the restart check of `sluiced test`: `faithful_count`
// snapshots and restores its count; `forgetful_count` snapshots it but its restore
// ignores the state (the bug the restart check exists to catch). Each emits the running
// count of the elements it has seen.
#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>

namespace {
using namespace sluice::sdk;

template <bool Faithful>
class Count final : public Operator {
 public:
  static constexpr const char* k_name = Faithful ? "faithful_count" : "forgetful_count";
  static constexpr const char* k_doc = "Emits the running count of the elements seen.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array<sl_param, 0> k_params{};

  Count(Context, const Config&) {}

  Status process_one(Context ctx, uint32_t, const sl_message&) override {
    return ctx.emit(Value::integer(++count_));
  }
  Result<Value> snapshot(Context) override { return Value::integer(count_); }
  Status restore(Context, ValueRef state) override {
    if (Faithful) count_ = state.as_int();
    return {};
  }

 private:
  int64_t count_ = 0;
};

}  // namespace

SLUICE_PLUGIN("it_counters", "0.0.1", "Integration test: stateful counters, one broken.",
              SLUICE_NODE_TYPES(Count<true>, Count<false>));
