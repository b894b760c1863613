// Two stateful counters for the restart check of `sluiced test`: `faithful_count`
// snapshots and restores its count; `forgetful_count` snapshots it but its restore
// ignores the state (the bug the restart check exists to catch). Each emits the running
// count of the elements it has seen. `grouped_numbers` is a keyed source (SL_NODE_KEYED_STATE,
// as from_kafka's partitions are key groups) with an optional `group_id`, for the validator's
// warning about non-keyed state after a grouped source; it is assigned key group 1 (the host
// claims it when the pipeline checkpoints), for `sluiced checkpoints`.
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

class GroupedNumbers final : public Source {
 public:
  static constexpr const char* k_name = "grouped_numbers";
  static constexpr const char* k_doc =
      "Tells the host it was assigned key group 1, emits 1, 2, 3 in it and ends (with `stay`: "
      "stays idle until stopped). Keyed: its positions are kept per key group.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
  static constexpr std::array k_params{
      param("group_id", SL_PARAM_STRING, nullptr, "A consumer group: its groups can move."),
      param("stay", SL_PARAM_BOOL, "false", "Stay idle after 3 instead of ending."),
  };

  GroupedNumbers(Context, const Config& cfg) : stay_(cfg.get_bool("stay")) {}

  Result<SourceState> poll(Context ctx, uint32_t) override {
    if (!assigned_) {
      const uint32_t group = 1;
      if (Status st = ctx.key_groups_assigned({&group, 1}); !st.is_ok()) return st;
      assigned_ = true;
    }
    for (; next_ <= 3; ++next_) {
      const sl_message m{sl_int(next_), sl_null(), sl_null(), SL_NO_TIMESTAMP, 1};
      if (Status st = ctx.emit(m); !st.is_ok()) return st;
    }
    return stay_ ? SourceState::idle : SourceState::done;
  }
  Result<Value> snapshot(Context) override {
    return Value::object({{"groups", Value::object({{"1", Value::integer(next_)}})}});
  }
  Status restore(Context, ValueRef) override { return {}; }
  Status restore_group(Context, uint32_t, ValueRef) override { return {}; }
  Status drop_group(Context, uint32_t) override { return {}; }

 private:
  bool stay_;
  bool assigned_ = false;
  int64_t next_ = 1;
};

}  // namespace

SLUICE_PLUGIN("it_counters", "0.0.1", "Integration test: stateful counters, one broken.",
              SLUICE_NODE_TYPES(Count<true>, Count<false>, GroupedNumbers));
