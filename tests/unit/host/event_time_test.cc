// core_ops' event_time operator with the real plugin in a real task on a virtual clock: the
// event times it sets and the watermarks it makes, which `sluiced test` cannot show (its
// expectations compare values). An injected source feeds `stamp`, which gives each message
// the key group in its value's "g" and the event time in its "ms" (as a partitioned source
// would), and spreads an array over one batch; `obs`, after event_time, records the
// messages and the watermarks it is handed (on_watermark) in one log, in order.
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_registry.hpp"
#include "support/build_plugins.hpp"
#include "support/in_process_plugin.hpp"
#include "value/json.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

// The processing clock at the start of every case: 1'000'000 ms since the epoch.
constexpr int64_t k_t0_ms = 1'000'000;
constexpr int64_t k_ms = 1'000'000;

std::vector<std::string> g_log;   // obs: "VALUE @TIME gGROUP" per message, "W TIME" per watermark
std::vector<std::string> g_late;  // late: what reached "et.late"

// An event time as ms ("1000"), with the ns left over ("1000+5ns"), or none / end.
std::string time_text(int64_t ns) {
  if (ns == SL_NO_TIMESTAMP) return "none";
  if (ns == SL_WATERMARK_END) return "end";
  std::string s = std::to_string(ns / k_ms);
  if (ns % k_ms != 0) s += "+" + std::to_string(ns % k_ms) + "ns";
  return s;
}

std::string message_line(const sl_message& m) {
  return json_dump(m.value) + " @" + time_text(m.timestamp_ns) + " g" + std::to_string(m.key_group);
}

std::optional<int64_t> int_member(sl_value object, const char* key) {
  sl_value v;
  if (object.kind != SL_KIND_OBJECT || !host()->object_get(object, key, std::strlen(key), &v) ||
      v.kind != SL_KIND_INT) {
    return std::nullopt;
  }
  return v.as.i;
}

// stamp: key group = value.g, event time = value.ms (in ms) when given; an array value is
// spread, one message per item, in one batch.
sl_status stamp_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  std::vector<sl_message> out;
  auto add = [&](sl_message m) {
    if (auto g = int_member(m.value, "g")) m.key_group = static_cast<uint64_t>(*g);
    if (auto ms = int_member(m.value, "ms")) m.timestamp_ns = *ms * k_ms;
    out.push_back(m);
  };
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    if (m->value.kind != SL_KIND_ARRAY) {
      add(*m);
      continue;
    }
    for (size_t k = 0; k < host()->value_size(m->value); ++k) {
      sl_message item = *m;
      item.value = host()->value_at(m->value, k);  // borrowed from the array
      add(item);
    }
  }
  return host()->emit(ctx, out.data(), out.size());
}

// obs: records messages and watermarks, and forwards the watermark (it has on_watermark).
sl_status observe_process(void*, sl_context*, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) g_log.push_back(message_line(*sl_batch_at(batch, i)));
  return SL_OK;
}
sl_status observe_on_watermark(void*, sl_context* ctx, int64_t watermark_ns) {
  g_log.push_back("W " + time_text(watermark_ns));
  return host()->emit_watermark != nullptr ? host()->emit_watermark(ctx, watermark_ns) : SL_OK;
}

sl_status late_process(void*, sl_context*, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) g_late.push_back(message_line(*sl_batch_at(batch, i)));
  return SL_OK;
}

using States = std::vector<std::pair<std::string, Value>>;

class EventTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log.clear();
    g_late.clear();
    Status loaded = test_support::load_build_plugin(*registry_, "libsluice_core_ops.so");
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
    static sl_node_type stamp = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_OPERATOR, "stamp");
      t.process = stamp_process;
      return t;
    }();
    static sl_node_type observe = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_OPERATOR, "observe");
      t.process = observe_process;
      t.on_watermark = observe_on_watermark;
      return t;
    }();
    static sl_node_type late = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "record_late");
      t.process = late_process;
      return t;
    }();
    static const sl_node_type* types[] = {&stamp, &observe, &late};
    static sl_plugin plugin = test_support::in_process_plugin("event_time_test_nodes", types);
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
  }
  void TearDown() override { task_.reset(); }

  // src (injected) -> stamp -> et (event_time with `params`) -> obs; with `read_late`, a
  // sink reads "et.late". A task made before is replaced; `states` are restored into the
  // new one before it starts.
  Status open(const std::string& params, const States* states = nullptr, bool read_late = false) {
    task_.reset();
    spec_.reset();
    std::string toml =
        "[runtime]\nbatch_size = 64\n"
        "[sources.src]\ntype = \"from_iterable\"\nvalues = []\n"
        "[operators.stamp]\ntype = \"stamp\"\ninputs = [\"src\"]\n"
        "[operators.et]\ntype = \"event_time\"\ninputs = [\"stamp\"]\n" +
        params + "\n[operators.obs]\ntype = \"observe\"\ninputs = [\"et\"]\n";
    if (read_late) toml += "[sinks.late]\ntype = \"record_late\"\ninputs = [\"et.late\"]\n";
    auto doc = parse_config_string(toml, "event_time.toml");
    if (!doc.ok()) return Status(SL_INVALID_ARGUMENT, "config does not parse");
    auto spec = validate_config(*doc.value, *registry_);
    std::string problems;
    for (const auto& d : spec.diagnostics) problems += d.to_string() + "\n";
    if (!spec.ok() || spec.has_errors()) return Status(SL_INVALID_ARGUMENT, problems);
    spec_ = std::make_unique<GraphSpec>(std::move(*spec.value));
    spec_->registry = registry_;  // the functions event_time binds
    task_ = std::make_unique<Task>(*spec_, TaskOptions{64, 0, 1, &clock_});
    SLUICE_RETURN_IF_ERROR(task_->replace_with_injector("src"));
    SLUICE_RETURN_IF_ERROR(task_->create());
    if (states != nullptr) SLUICE_RETURN_IF_ERROR(task_->restore_states(*states));
    SLUICE_RETURN_IF_ERROR(task_->start());
    return task_->run_until_idle();
  }
  // Injects the value of JSON text `json` (one delivery).
  Status send(std::string_view json) {
    auto v = json_parse(json);
    if (!v.is_ok()) return v.status();
    return task_->inject("src", v.value());
  }
  // Moves the processing clock on by `ms`, firing the timers due.
  Status advance(int64_t ms) {
    return task_->advance_to(clock_, clock_.monotonic_ns() + ms * k_ms);
  }
  States states() {
    auto s = task_->snapshot_states();
    EXPECT_TRUE(s.is_ok()) << s.status().message();
    return s.is_ok() ? s.value() : States{};
  }
  const NodeRuntime& et() const {
    for (const NodeRuntime& n : task_->nodes()) {
      if (n.id == "et") return n;
    }
    ADD_FAILURE() << "no node et";
    return task_->nodes().front();
  }
  // The node's keyed callbacks, as the host calls them when partitions move.
  sl_status restore_group(uint32_t group, const Value& state) const {
    const NodeRuntime& n = et();
    return n.vt->restore_group(n.self, n.ctx.get(), group, state.raw());
  }
  sl_status drop_group(uint32_t group) const {
    const NodeRuntime& n = et();
    return n.vt->drop_group(n.self, n.ctx.get(), group);
  }
  // The log since the last call.
  std::vector<std::string> take() { return std::exchange(g_log, {}); }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  VirtualClock clock_{k_t0_ms * k_ms};
  std::unique_ptr<GraphSpec> spec_;
  std::unique_ptr<Task> task_;
};

using Lines = std::vector<std::string>;

#define ASSERT_OK(expr)                                         \
  do {                                                          \
    const Status st_ = (expr);                                  \
    ASSERT_TRUE(st_.is_ok()) << #expr << ": " << st_.message(); \
  } while (0)

TEST_F(EventTimeTest, IsAKeyedWatermarkingNodeTypeWithALateOutput) {
  ASSERT_OK(open("path = \"t\""));
  const sl_node_type& t = *et().vt;
  EXPECT_EQ(t.flags, SL_NODE_STATEFUL | SL_NODE_KEYED_STATE | SL_NODE_WATERMARKS);
  const NodeTypeInfo* info = registry_->find_node_type("event_time");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->side_outputs, std::vector<std::string>{"late"});
  EXPECT_NE(t.on_watermark, nullptr);  // so that upstream watermarks are not forwarded
}

TEST_F(EventTimeTest, OutOfOrdernessHoldsTheWatermarkBackAndItNeverGoesDown) {
  ASSERT_OK(open("path = \"t\"\nmax_out_of_orderness_ms = 100"));
  ASSERT_OK(send(R"({"t": 1000})"));
  ASSERT_OK(send(R"({"t": 1200})"));
  ASSERT_OK(send(R"({"t": 1100})"));  // out of order, within 100 ms: W stays
  ASSERT_OK(send(R"({"t": 1050})"));  // below W: late for windows, W stays
  // One batch: its messages first, then one watermark.
  ASSERT_OK(send(R"([{"t": 2000}, {"t": 1500}, {"t": 2500}])"));
  EXPECT_EQ(take(),
            (Lines{R"({"t":1000} @1000 g0)", "W 900", R"({"t":1200} @1200 g0)", "W 1100",
                   R"({"t":1100} @1100 g0)", R"({"t":1050} @1050 g0)", R"({"t":2000} @2000 g0)",
                   R"({"t":1500} @1500 g0)", R"({"t":2500} @2500 g0)", "W 2400"}));
}

TEST_F(EventTimeTest, TheWatermarkIsTheMinimumOverThePartitionsSeen) {
  ASSERT_OK(open("path = \"t\""));
  ASSERT_OK(send(R"({"t": 1000, "g": 1})"));  // groups 2 and 3 not seen: no hold
  ASSERT_OK(send(R"({"t": 1500, "g": 2})"));  // min(1000, 1500)
  ASSERT_OK(send(R"({"t": 2000, "g": 1})"));  // min(2000, 1500)
  ASSERT_OK(send(R"({"t": 3000, "g": 2})"));  // min(2000, 3000)
  ASSERT_OK(send(R"({"t": 100, "g": 3})"));   // min 100: W does not go down
  ASSERT_OK(send(R"({"t": 4000, "g": 1})"));  // min(4000, 3000, 100)
  ASSERT_OK(send(R"({"t": 5000, "g": 3})"));  // min(4000, 3000, 5000)
  ASSERT_OK(send(R"([{"t": 6000, "g": 2}, {"t": 7000, "g": 3}])"));  // min(4000, 6000, 7000)
  EXPECT_EQ(take(), (Lines{R"({"t":1000,"g":1} @1000 g1)", "W 1000", R"({"t":1500,"g":2} @1500 g2)",
                           R"({"t":2000,"g":1} @2000 g1)", "W 1500", R"({"t":3000,"g":2} @3000 g2)",
                           "W 2000", R"({"t":100,"g":3} @100 g3)", R"({"t":4000,"g":1} @4000 g1)",
                           R"({"t":5000,"g":3} @5000 g3)", "W 3000", R"({"t":6000,"g":2} @6000 g2)",
                           R"({"t":7000,"g":3} @7000 g3)", "W 4000"}));
  const Value state = states().at(0).second;
  EXPECT_EQ(json_dump(state.raw()),
            R"({"version":1,"watermark":4000000000,"groups":{"1":{"max_ns":4000000000},)"
            R"("2":{"max_ns":6000000000},"3":{"max_ns":7000000000}}})");
}

TEST_F(EventTimeTest, AnIdlePartitionStopsHoldingTheWatermarkBack) {
  ASSERT_OK(open("path = \"t\"\nidle_timeout_ms = 1000"));
  ASSERT_OK(send(R"({"t": 1000, "g": 1})"));  // at t0
  ASSERT_OK(advance(500));
  ASSERT_OK(send(R"({"t": 5000, "g": 2})"));  // at t0 + 500: g1 holds W at 1000
  EXPECT_EQ(take(),
            (Lines{R"({"t":1000,"g":1} @1000 g1)", "W 1000", R"({"t":5000,"g":2} @5000 g2)"}));
  ASSERT_OK(advance(499));
  EXPECT_EQ(take(), Lines{});
  ASSERT_OK(advance(1));  // t0 + 1000: g1 idle for 1000 ms, the timer lets W go to g2's
  EXPECT_EQ(take(), Lines{"W 5000"});
  ASSERT_OK(advance(500));  // t0 + 1500: g2 idle too; with none active W stays
  EXPECT_EQ(take(), Lines{});
  ASSERT_OK(send(R"({"t": 2000, "g": 1})"));  // g1 active again, below W
  ASSERT_OK(send(R"({"t": 6000, "g": 1})"));  // g2 still idle: W follows g1
  ASSERT_OK(send(R"({"t": 5500, "g": 2})"));  // g2 back: min(6000, 5500), W stays
  EXPECT_EQ(take(), (Lines{R"({"t":2000,"g":1} @2000 g1)", R"({"t":6000,"g":1} @6000 g1)", "W 6000",
                           R"({"t":5500,"g":2} @5500 g2)"}));
}

TEST_F(EventTimeTest, WithoutIdleTimeoutAQuietPartitionHoldsTheWatermarkForEver) {
  ASSERT_OK(open("path = \"t\""));
  ASSERT_OK(send(R"({"t": 1000, "g": 1})"));
  ASSERT_OK(send(R"({"t": 5000, "g": 2})"));
  ASSERT_OK(advance(3'600'000));
  ASSERT_OK(send(R"({"t": 9000, "g": 2})"));
  EXPECT_EQ(take(), (Lines{R"({"t":1000,"g":1} @1000 g1)", "W 1000", R"({"t":5000,"g":2} @5000 g2)",
                           R"({"t":9000,"g":2} @9000 g2)"}));
}

TEST_F(EventTimeTest, AFarFutureTimeGoesToTheLateOutputAndDoesNotMoveTheWatermark) {
  // Processing time is t0 = 1'000'000 ms; max_future_ms = 1000.
  ASSERT_OK(open("path = \"t\"\nmax_future_ms = 1000", nullptr, /*read_late=*/true));
  ASSERT_OK(send(R"({"t": 1000500})"));
  ASSERT_OK(send(R"({"t": 1001000})"));  // exactly max_future ahead: counts
  ASSERT_OK(send(R"([{"t": 1001001}, {"t": 1000800}, {"t": 99999999}])"));
  ASSERT_OK(advance(5000));
  ASSERT_OK(send(R"({"t": 1001001})"));  // 4 s in the past by now
  EXPECT_EQ(take(),
            (Lines{R"({"t":1000500} @1000500 g0)", "W 1000500", R"({"t":1001000} @1001000 g0)",
                   "W 1001000", R"({"t":1000800} @1000800 g0)", R"({"t":1001001} @1001001 g0)",
                   "W 1001001"}));
  // Unchanged: the time they came with (none, from the injected source).
  EXPECT_EQ(g_late, (Lines{R"({"t":1001001} @none g0)", R"({"t":99999999} @none g0)"}));
}

TEST_F(EventTimeTest, TimesFromRfc3339StringsFunctionsLuaAndTheMessageItself) {
  ASSERT_OK(open("path = \"t\""));
  ASSERT_OK(send(R"({"t": "2026-12-01T11:00:00.250+01:00"})"));
  ASSERT_OK(send(R"({"t": "2026-12-01t10:00:01.123456789z"})"));
  // The key group is kept (g4: a partition of its own, so W still follows g0's).
  ASSERT_OK(send(R"({"t": "2026-12-01T04:30:02-05:30", "g": 4, "ms": 7})"));
  EXPECT_EQ(take(),
            (Lines{R"({"t":"2026-12-01T11:00:00.250+01:00"} @1796119200250 g0)", "W 1796119200250",
                   R"({"t":"2026-12-01t10:00:01.123456789z"} @1796119201123+456789ns g0)",
                   "W 1796119201123+456789ns",
                   R"({"t":"2026-12-01T04:30:02-05:30","g":4,"ms":7} @1796119202000 g4)"}));

  ASSERT_OK(open("lua = \"x.s * 1000\""));
  ASSERT_OK(send(R"({"s": 3})"));
  ASSERT_OK(open("function = \"get\"\nargs = { path = \"t\" }"));
  ASSERT_OK(send(R"({"t": 4000})"));
  // Neither: the message's own time, or the processing time when it has none.
  ASSERT_OK(open(""));
  ASSERT_OK(send(R"({"ms": 5000})"));
  ASSERT_OK(send(R"({})"));
  EXPECT_EQ(take(), (Lines{R"({"s":3} @3000 g0)", "W 3000", R"({"t":4000} @4000 g0)", "W 4000",
                           R"({"ms":5000} @5000 g0)", "W 5000", "{} @1000000 g0", "W 1000000"}));
}

TEST_F(EventTimeTest, WhatCameBeforeABadTimeGoesOutThenTheNodeFails) {
  ASSERT_OK(open("path = \"t\""));
  const Status st = send(R"([{"t": 1000}, {"t": "soon"}, {"t": 3000}])");
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(
      st.message().find(R"(event_time: the event time at path "t", "soon", is not an RFC 3339)"),
      std::string::npos)
      << st.message();
  EXPECT_EQ(take(), (Lines{R"({"t":1000} @1000 g0)", "W 1000"}));
}

TEST_F(EventTimeTest, WithOnErrorSkipOnlyTheBadMessageIsLeftOut) {
  ASSERT_OK(open("path = \"t\"\non_error = \"skip\""));
  ASSERT_OK(send(R"([{"t": 1000}, {"t": null}, {"t": 3000}])"));
  EXPECT_EQ(take(),
            (Lines{R"({"t":1000} @1000 g0)", "W 1000", R"({"t":3000} @3000 g0)", "W 3000"}));
}

TEST_F(EventTimeTest, TheStateRestoresTheProgressOfEachPartitionAndTheWatermark) {
  ASSERT_OK(open("path = \"t\""));
  ASSERT_OK(send(R"({"t": 1000, "g": 1})"));
  ASSERT_OK(send(R"({"t": 3000, "g": 2})"));
  const States saved = states();
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].first, "et");
  EXPECT_EQ(json_dump(saved[0].second.raw()),
            R"({"version":1,"watermark":1000000000,"groups":{"1":{"max_ns":1000000000},)"
            R"("2":{"max_ns":3000000000}}})");
  take();

  // A fresh task: the first batch says W again (the host keeps no watermark), g1 still
  // holds it back.
  ASSERT_OK(open("path = \"t\"", &saved));
  ASSERT_OK(send(R"({"t": 3500, "g": 2})"));
  ASSERT_OK(send(R"({"t": 2000, "g": 1})"));
  EXPECT_EQ(take(), (Lines{R"({"t":3500,"g":2} @3500 g2)", "W 1000", R"({"t":2000,"g":1} @2000 g1)",
                           "W 2000"}));

  // Partitions moving: g1 revoked (no longer holds W back), g3 assigned with its progress,
  // then g3 revoked again. The callbacks emit nothing; the next batch does.
  ASSERT_OK(open("path = \"t\"", &saved));
  EXPECT_EQ(drop_group(1), SL_OK);
  EXPECT_EQ(take(), Lines{});
  ASSERT_OK(send(R"({"t": 3500, "g": 2})"));
  EXPECT_EQ(restore_group(3, Value::object(std::vector<std::pair<std::string, Value>>{
                                 {"max_ns", Value::integer(500 * k_ms)}})),
            SL_OK);
  ASSERT_OK(send(R"({"t": 4000, "g": 2})"));  // min(4000, 500): W stays
  EXPECT_EQ(restore_group(3, Value()), SL_OK);
  ASSERT_OK(send(R"({"t": 4500, "g": 2})"));
  EXPECT_EQ(take(), (Lines{R"({"t":3500,"g":2} @3500 g2)", "W 3500", R"({"t":4000,"g":2} @4000 g2)",
                           R"({"t":4500,"g":2} @4500 g2)", "W 4500"}));
  EXPECT_EQ(json_dump(states().at(0).second.raw()),
            R"({"version":1,"watermark":4500000000,"groups":{"2":{"max_ns":4500000000}}})");
}

TEST_F(EventTimeTest, IdleProgressSurvivesAnImmediateRestoreAndALongBreakResetsIt) {
  const std::string params = "path = \"t\"\nidle_timeout_ms = 1000";
  ASSERT_OK(open(params));
  ASSERT_OK(send(R"({"t": 1000, "g": 1})"));  // t0
  ASSERT_OK(advance(500));
  ASSERT_OK(send(R"({"t": 5000, "g": 2})"));  // t0 + 500
  const States saved = states();
  take();

  // Restored at once (as `sluiced test`'s restart check does): g1 still goes idle at
  // t0 + 1000, from the timer start() arms.
  ASSERT_OK(open(params, &saved));
  ASSERT_OK(advance(500));
  EXPECT_EQ(take(), Lines{"W 5000"});
  const States idle = states();  // g1 idle, g2 seen at t0 + 500

  // An idle partition stays idle through a restore until its next message.
  ASSERT_OK(open(params, &idle));
  ASSERT_OK(send(R"({"t": 7000, "g": 2})"));
  EXPECT_EQ(take(), (Lines{R"({"t":7000,"g":2} @7000 g2)", "W 7000"}));

  // Restored after a break longer than the timeout (at T = t0 + 11 s): every partition
  // gets the whole timeout again, so g1 holds W back until T + 1 s.
  clock_.set(clock_.monotonic_ns() + 10'000 * k_ms);
  ASSERT_OK(open(params, &saved));
  ASSERT_OK(advance(500));
  ASSERT_OK(send(R"({"t": 5100, "g": 2})"));  // T + 500 ms
  ASSERT_OK(advance(499));
  EXPECT_EQ(take(), (Lines{R"({"t":5100,"g":2} @5100 g2)", "W 1000"}));
  ASSERT_OK(advance(1));
  EXPECT_EQ(take(), Lines{"W 5100"});
}

TEST_F(EventTimeTest, ABadStateIsRefusedWithWhatIsWrong) {
  auto restored = [&](const std::string& json) {
    const States bad{{"et", json_parse(json).value()}};
    return open("path = \"t\"", &bad);
  };
  Status st = restored(R"({"version": 2, "groups": {}})");
  EXPECT_EQ(st.code(), SL_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find(R"(event_time: checkpoint state has no "version": 1)"),
            std::string::npos)
      << st.message();
  st = restored(R"({"version": 1, "groups": {"1": {"max_ns": "x"}}})");
  EXPECT_NE(st.message().find(R"(group 1 is not {"max_ns": int, ...})"), std::string::npos)
      << st.message();
  st = restored(R"({"version": 1, "groups": {"one": {"max_ns": 1}}})");
  EXPECT_NE(st.message().find(R"(has a key group that is not a number ("one"))"), std::string::npos)
      << st.message();
  st = restored(R"({"version": 1, "watermark": "x", "groups": {}})");
  EXPECT_NE(st.message().find("has a 'watermark' that is not an int or null"), std::string::npos)
      << st.message();

  // A bad group state leaves the group as it was.
  ASSERT_OK(open("path = \"t\""));
  ASSERT_OK(send(R"({"t": 1000, "g": 1})"));
  EXPECT_EQ(restore_group(1, Value::integer(3)), SL_INVALID_ARGUMENT);
  EXPECT_EQ(json_dump(states().at(0).second.raw()),
            R"({"version":1,"watermark":1000000000,"groups":{"1":{"max_ns":1000000000}}})");
}

}  // namespace
}  // namespace sluice::host
