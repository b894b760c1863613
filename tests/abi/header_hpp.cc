// sluice.hpp (the C++ layer) must compile alone as C++20, included first and twice; and its
// compile-time parts do what they say.
#include <sluice/sluice.hpp>

namespace {

using namespace sluice::sdk;  // NOLINT(google-build-using-namespace): a test of the API

// ABI 1.2: constraints chained on a declaration land in the sl_param fields and flags.
constexpr Param k_n = param("n", SL_PARAM_INT, "1", "count").range(1, 10);
static_assert((k_n.flags & (SL_PARAM_HAS_MIN | SL_PARAM_HAS_MAX)) ==
              (SL_PARAM_HAS_MIN | SL_PARAM_HAS_MAX));
static_assert(k_n.min_int == 1 && k_n.max_int == 10 && k_n.struct_size == sizeof(sl_param));
constexpr Param k_ratio = param("ratio", SL_PARAM_FLOAT, "0.5", "share").above(0.0).at_most(1.0);
static_assert((k_ratio.flags & SL_PARAM_MIN_EXCLUSIVE) != 0 && k_ratio.max_float == 1.0);
constexpr Param k_mode = required("mode", SL_PARAM_STRING, "how").one_of("a|b").non_empty();
static_assert((k_mode.flags & SL_PARAM_REQUIRED) != 0 && (k_mode.flags & SL_PARAM_NON_EMPTY) != 0);

// A node type with a static validate gets the callback; one without does not.
class Checked final : public Operator {
 public:
  static constexpr const char* k_name = "checked";
  static constexpr std::array k_params{k_n, k_mode};
  static void validate(const Config& cfg) {
    if (cfg.get_int("n") > cfg.input_count()) cfg.fail("n", "must not exceed the input count");
  }
  Checked(Context /*ctx*/, const Config& cfg) { validate(cfg); }
  Status process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& /*m*/) override {
    return {};
  }
};
class Unchecked final : public Operator {
 public:
  static constexpr const char* k_name = "unchecked";
  Status process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& /*m*/) override {
    return {};
  }
};
static_assert(node_type<Checked>()->validate != nullptr);
static_assert(node_type<Unchecked>()->validate == nullptr);
static_assert(node_type<Checked>()->param_count == 2);

// Overriding snapshot and restore makes a type stateful, whether or not k_flags says so
// (forgetting the flag used to lose the state at every restart).
class ForgotTheFlag final : public Sink {
 public:
  static constexpr const char* k_name = "forgot_the_flag";
  Status process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& /*m*/) override {
    return {};
  }
  Result<Value> snapshot(Context /*ctx*/) override { return Value::integer(0); }
  Status restore(Context /*ctx*/, ValueRef /*state*/) override { return {}; }
};
static_assert((node_type<ForgotTheFlag>()->flags & SL_NODE_STATEFUL) != 0);
static_assert(node_type<ForgotTheFlag>()->snapshot ==
              &detail::NodeTrampolines<ForgotTheFlag>::snapshot);
static_assert((node_type<Unchecked>()->flags & SL_NODE_STATEFUL) == 0 &&
              node_type<Unchecked>()->snapshot == nullptr);

// min_host_minor is the newest minor among what the types declare: nothing (0), a
// constraint or validate callback (1.2), keyed state (1.4), a side output (1.5).
class Plain final : public Operator {
 public:
  static constexpr const char* k_name = "plain";
  Status process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& /*m*/) override {
    return {};
  }
};
class WithSideOutput final : public Operator {
 public:
  static constexpr const char* k_name = "with_side_output";
  static constexpr std::array k_side_outputs{"late"};
  Status process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& /*m*/) override {
    return {};
  }
};
template <class... Ts>
constexpr uint32_t min_minor() {
  return detail::min_host_minor_of<detail::PluginLists<NodeTypeList<Ts...>>>();
}
static_assert(node_type<Plain>()->flags == 0 &&
              node_type<WithSideOutput>()->side_output_count == 1);
static_assert(min_minor<Plain>() == 0);
static_assert(min_minor<Plain, ForgotTheFlag>() == 0);
static_assert(min_minor<Plain, Checked>() == 2);
static_assert(min_minor<Checked, WithSideOutput, Plain>() == 5);

}  // namespace

int main() {
  // The params are handed over as plain sl_params, constraints included.
  const sl_param* p = node_type<Checked>()->params;
  return p[0].max_int == 10 && p[1].choices != nullptr ? 0 : 1;
}
