// core_ops' `window` (event-time windows) with the real plugin in a real task, fed by the
// test: messages with event time, key and key group go in through a source of its own
// ("script"), and watermarks through an operator of its own in front of window ("marks",
// SL_NODE_WATERMARKS), so that each case says exactly when the watermark rises. Sinks record
// what window emits on its main output and on "w.late", and the watermarks that reach them.
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

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

// What the sinks saw, by sink id: one line per message ("<value> <key> g<group> <time ms>"),
// and "W <ms>" per watermark.
std::map<std::string, std::vector<std::string>> g_sink;

std::string node_id(sl_context* ctx) {
  const sl_str id = host()->node_id(ctx);
  return {id.data, id.size};
}
sl_status record_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  auto& lines = g_sink[node_id(ctx)];
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    lines.push_back(
        json_dump(m->value) + " " + json_dump(m->key) + " g" + std::to_string(m->key_group) + " " +
        (m->timestamp_ns == SL_NO_TIMESTAMP ? std::string("none")
                                            : std::to_string(m->timestamp_ns / 1'000'000)));
  }
  return SL_OK;
}
sl_status record_on_watermark(void*, sl_context* ctx, int64_t watermark_ns) {
  if (watermark_ns != SL_WATERMARK_END) {
    g_sink[node_id(ctx)].push_back("W " + std::to_string(watermark_ns / 1'000'000));
  }
  return SL_OK;
}
// script: a source that emits nothing of itself: the test emits on its context.
sl_status script_poll(void*, sl_context*, uint32_t, int32_t* state) {
  *state = SL_SOURCE_IDLE;
  return SL_OK;
}
// marks: passes its input on; the test raises its watermark (emit_watermark on its context).
sl_status marks_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  std::vector<sl_message> out;
  for (size_t i = 0; i < batch->count; ++i) out.push_back(*sl_batch_at(batch, i));
  return host()->emit(ctx, out.data(), out.size());
}

const sl_param k_no_params[] = {
    {sizeof(sl_param), "unused", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr}};

/// A message for the script source: value and key as JSON ("" for no key), event time in
/// ms (nullopt: none), key group.
struct Msg {
  std::string value;
  std::string key;
  std::optional<int64_t> t_ms;
  uint64_t group = 0;
};
Msg at(int64_t t_ms, std::string key, std::string value = "1", uint64_t group = 0) {
  return {std::move(value), std::move(key), t_ms, group};
}

/// One step of a case: messages from a source, or a watermark (ms) from a marks node.
struct Step {
  std::vector<Msg> messages;
  std::optional<int64_t> watermark_ms;
  std::string node = "src";  // the source, or the marks node of the watermark
};
Step send(std::vector<Msg> messages, std::string source = "src") {
  return {std::move(messages), std::nullopt, std::move(source)};
}
Step mark(int64_t ms, std::string node = "marks") { return {{}, ms, std::move(node)}; }

class EventWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sink.clear();
    Status loaded = test_support::load_build_plugin(*registry_, "libsluice_core_ops.so");
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
    static sl_node_type script =
        test_support::source_node_type("script", k_no_params, test_support::stateless_create,
                                       test_support::stateless_destroy, script_poll);
    static sl_node_type marks = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_OPERATOR, "marks");
      t.flags = SL_NODE_WATERMARKS;
      t.process = marks_process;
      return t;
    }();
    static sl_node_type record = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "record");
      t.process = record_process;
      t.on_watermark = record_on_watermark;
      return t;
    }();
    static const sl_node_type* types[] = {&script, &marks, &record};
    static sl_plugin plugin = test_support::in_process_plugin("window_test_nodes", types);
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
    ASSERT_NE(host()->emit_watermark, nullptr)
        << "the host has no emit_watermark yet (ABI 1.5 host propagation)";
  }

  /// A live task: script source(s) -> marks -> window `w` (with `params`) -> sinks `out`
  /// (main output) and `late` ("w.late"). With `two_inputs`, a second chain src2 -> marks2
  /// into w as well.
  struct Harness {
    std::optional<GraphSpec> spec;
    std::unique_ptr<Task> task;
    Status status;

    size_t index(const std::string& id) const {
      for (size_t i = 0; i < task->nodes().size(); ++i) {
        if (task->nodes()[i].id == id) return i;
      }
      ADD_FAILURE() << "no node " << id;
      return 0;
    }
    sl_context* ctx(const std::string& id) { return task->node(index(id)).ctx.get(); }
    Status run(const Step& step) {
      if (step.watermark_ms) {
        const sl_status st = host()->emit_watermark(ctx(step.node), *step.watermark_ms * 1'000'000);
        if (st != SL_OK) return Status(st, "emit_watermark failed");
        return task->run_until_idle();
      }
      std::vector<Value> held;
      std::vector<sl_message> out;
      for (const Msg& m : step.messages) {
        Value value = json_parse(m.value).value();
        Value key = m.key.empty() ? Value() : json_parse(m.key).value();
        out.push_back({value.raw(), key.raw(), sl_null(),
                       m.t_ms ? *m.t_ms * 1'000'000 : SL_NO_TIMESTAMP, m.group});
        held.push_back(std::move(value));
        held.push_back(std::move(key));
      }
      const sl_status st = host()->emit(ctx(step.node), out.data(), out.size());
      Status idle = task->run_until_idle();
      if (st != SL_OK && idle.is_ok()) return Status(st, "emit failed");
      return idle;
    }
    Status end() { return task->end_sources(); }
    Value state() {
      auto states = task->snapshot_states();
      EXPECT_TRUE(states.is_ok()) << states.status().message();
      if (states.is_ok()) {
        for (auto& [id, v] : states.value()) {
          if (id == "w") return v;
        }
      }
      ADD_FAILURE() << "no state of w";
      return Value();
    }
    sl_status restore_group(uint32_t group, const Value& state) {
      const NodeRuntime& n = task->node(index("w"));
      return n.vt->restore_group(n.self, n.ctx.get(), group, state.raw());
    }
    sl_status drop_group(uint32_t group) {
      const NodeRuntime& n = task->node(index("w"));
      return n.vt->drop_group(n.self, n.ctx.get(), group);
    }
  };

  std::unique_ptr<Harness> start(const std::string& params, const Value* restore = nullptr,
                                 bool two_inputs = false) {
    std::string toml = "[runtime]\nbatch_size = 64\n[sources.src]\ntype = \"script\"\n";
    toml += "[operators.marks]\ntype = \"marks\"\ninputs = [\"src\"]\n";
    std::string inputs = "\"marks\"";
    if (two_inputs) {
      toml += "[sources.src2]\ntype = \"script\"\n";
      toml += "[operators.marks2]\ntype = \"marks\"\ninputs = [\"src2\"]\n";
      inputs += ", \"marks2\"";
    }
    toml += "[operators.w]\ntype = \"window\"\ninputs = [" + inputs + "]\n" + params + "\n";
    toml += "[sinks.out]\ntype = \"record\"\ninputs = [\"w\"]\n";
    toml += "[sinks.late]\ntype = \"record\"\ninputs = [\"w.late\"]\n";
    auto h = std::make_unique<Harness>();
    auto doc = parse_config_string(toml, "window.toml");
    EXPECT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, *registry_);
    for (const auto& d : spec.diagnostics) {
      if (d.severity == Severity::error) ADD_FAILURE() << d.to_string();
    }
    if (!spec.ok()) {
      h->status = Status(SL_INVALID_ARGUMENT, "config refused");
      return h;
    }
    h->spec = std::move(*spec.value);
    h->spec->registry = registry_;
    h->task = std::make_unique<Task>(*h->spec, TaskOptions{64, 0, 1, &clock_});
    h->status = h->task->create();
    if (h->status.is_ok() && restore != nullptr) {
      h->status = h->task->restore_states({{"w", *restore}});
    }
    if (h->status.is_ok()) h->status = h->task->start();
    return h;
  }

  /// Runs `steps` then the end of input; with `restart`, through a snapshot and a new task
  /// restored from it after every step (as `sluiced test`'s restart check does).
  std::map<std::string, std::vector<std::string>> run(const std::string& params,
                                                      const std::vector<Step>& steps,
                                                      bool restart = false,
                                                      bool two_inputs = false) {
    g_sink.clear();
    std::unique_ptr<Harness> h = start(params, nullptr, two_inputs);
    EXPECT_TRUE(h->status.is_ok()) << h->status.message();
    if (!h->status.is_ok()) return {};
    for (const Step& step : steps) {
      Status st = h->run(step);
      EXPECT_TRUE(st.is_ok()) << st.message();
      if (restart) {
        Value state = h->state();
        h = start(params, &state, two_inputs);
        EXPECT_TRUE(h->status.is_ok()) << h->status.message();
        if (!h->status.is_ok()) return {};
      }
    }
    Status end = h->end();
    EXPECT_TRUE(end.is_ok()) << end.message();
    return g_sink;
  }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  VirtualClock clock_{0};
};

using Lines = std::vector<std::string>;

std::string win(const std::string& key, int64_t start, int64_t end, const std::string& value,
                uint64_t group = 0) {
  return R"({"key":)" + (key.empty() ? std::string("null") : key) + R"(,"start":)" +
         std::to_string(start) + R"(,"end":)" + std::to_string(end) + R"(,"value":)" + value +
         "} " + (key.empty() ? std::string("null") : key) + " g" + std::to_string(group) + " " +
         std::to_string(end - 1);
}

const char* k_tumbling_count = R"(kind = "tumbling"
size_ms = 10
function = "count"
start = 0)";

TEST_F(EventWindowTest, TumblingFiresByEndThenStartThenCreationAndBeforeItsWatermark) {
  // Out of order, and ties at the bounds: t = 9 (end - 1) is in [0, 10), t = 10 in
  // [10, 20). W = 9 ms fires nothing; W = 10 ms fires [0, 10) of a (created first) then of
  // b; the end of input fires [10, 20) of b (created before a's).
  auto sinks = run(k_tumbling_count, {send({at(3, R"("a")"), at(12, R"("b")"), at(7, R"("a")"),
                                            at(1, R"("b")"), at(10, R"("a")"), at(9, R"("b")")}),
                                      mark(9), mark(10)});
  const Lines want{"W 9",  win(R"("a")", 0, 10, "2"),  win(R"("b")", 0, 10, "2"),
                   "W 10", win(R"("b")", 10, 20, "1"), win(R"("a")", 10, 20, "1")};
  EXPECT_EQ(sinks["out"], want);
  EXPECT_TRUE(sinks["late"].empty());  // side outputs carry no watermark
}

TEST_F(EventWindowTest, OffsetShiftsTheTumblingWindowsAndNegativeTimesRoundDown) {
  auto sinks = run(R"(kind = "tumbling"
size_ms = 10
offset_ms = 3
function = "count"
start = 0)",
                   {send({at(3, ""), at(2, ""), at(12, ""), at(13, ""), at(-7, "")})});
  // t = 2 and -7 are in [-7, 3); 3 and 12 in [3, 13); 13 in [13, 23). No key: null.
  const Lines want{win("", -7, 3, "2"), win("", 3, 13, "2"), win("", 13, 23, "1")};
  EXPECT_EQ(sinks["out"], want);
}

TEST_F(EventWindowTest, AnElementOfAClosedWindowGoesToLateUnchanged) {
  auto sinks = run(k_tumbling_count,
                   {send({at(5, R"("a")", R"("x")", 2)}), mark(10),
                    send({at(5, R"("a")", R"("late")", 2), at(10, R"("a")", R"("y")", 2)})});
  EXPECT_EQ(sinks["out"],
            Lines({win(R"("a")", 0, 10, "1", 2), "W 10", win(R"("a")", 10, 20, "1", 2)}));
  EXPECT_EQ(sinks["late"], Lines({R"("late" "a" g2 5)"}));
}

TEST_F(EventWindowTest, AllowedLatenessReFiresPerElementThenClosesForGood) {
  auto sinks = run(
      R"(kind = "tumbling"
size_ms = 10
function = "count"
start = 0
allowed_lateness_ms = 5)",
      {send({at(1, R"("a")")}), mark(10), send({at(4, R"("a")")}),  // fired: goes out again at once
       mark(14),
       send({at(2, R"("a")"),    // still within the lateness
             at(5, R"("c")")}),  // a window opened within it fires at once
       mark(15),                 // both closed for good
       send({at(3, R"("a")"), at(6, R"("c")")}), mark(16)});
  EXPECT_EQ(sinks["out"],
            Lines({win(R"("a")", 0, 10, "1"), "W 10", win(R"("a")", 0, 10, "2"), "W 14",
                   win(R"("a")", 0, 10, "3"), win(R"("c")", 0, 10, "1"), "W 15", "W 16"}));
  EXPECT_EQ(sinks["late"], Lines({R"(1 "a" g0 3)", R"(1 "c" g0 6)"}));
}

TEST_F(EventWindowTest, EmitUpdateSendsTheWindowAfterEachElementAndWhenItFires) {
  auto sinks =
      run(R"(kind = "tumbling"
size_ms = 10
function = "sum"
start = 0
emit = "update")",
          {send({at(1, R"("a")", "5"), at(2, R"("a")", "7"), at(3, R"("b")", "1")}), mark(10)});
  EXPECT_EQ(sinks["out"],
            Lines({win(R"("a")", 0, 10, "5"), win(R"("a")", 0, 10, "12"), win(R"("b")", 0, 10, "1"),
                   win(R"("a")", 0, 10, "12"), win(R"("b")", 0, 10, "1"), "W 10"}));
}

TEST_F(EventWindowTest, HoppingPutsAnElementInEveryWindowThatStillTakesIt) {
  auto sinks = run(R"(kind = "hopping"
size_ms = 10
slide_ms = 5
function = "count"
start = 0)",
                   {send({at(7, R"("a")"), at(-3, R"("a")")}), mark(10),
                    // [0, 10) closed, [5, 15) open: counted there, not late.
                    send({at(8, R"("a")")}),
                    // [-5, 5) and [0, 10) both closed: late.
                    send({at(3, R"("a")")})});
  EXPECT_EQ(sinks["out"], Lines({win(R"("a")", -10, 0, "1"), win(R"("a")", -5, 5, "1"),
                                 win(R"("a")", 0, 10, "1"), "W 10", win(R"("a")", 5, 15, "2")}));
  EXPECT_EQ(sinks["late"], Lines({R"(1 "a" g0 3)"}));
}

const char* k_sessions = R"(kind = "session"
gap_ms = 5
function = "collect_list"
start = [])";

TEST_F(EventWindowTest, SessionsMergeWhenAnElementBridgesThemFoldedInArrivalOrder) {
  auto sinks =
      run(k_sessions,
          {send({at(1, R"("a")", R"("p")"), at(10, R"("a")", R"("q")"), at(2, R"("b")", R"("r")"),
                 // [5, 10) touches [1, 6) and [10, 15): one session [1, 15).
                 at(5, R"("a")", R"("s")")}),
           mark(15),
           // A session that grows past the watermark fires at its new end.
           send({at(20, R"("a")", R"("t")")}), mark(22), send({at(23, R"("a")", R"("u")")}),
           mark(25), mark(28),
           // An element before a session's start within the gap moves its start.
           send({at(40, R"("a")", R"("v")"), at(37, R"("a")", R"("w")")}), mark(45),
           send({at(30, R"("a")", R"("late")")})});
  EXPECT_EQ(sinks["out"],
            Lines({win(R"("b")", 2, 7, R"(["r"])"), win(R"("a")", 1, 15, R"(["p","q","s"])"),
                   "W 15", "W 22", "W 25", win(R"("a")", 20, 28, R"(["t","u"])"), "W 28",
                   win(R"("a")", 37, 45, R"(["v","w"])"), "W 45"}));
  EXPECT_EQ(sinks["late"], Lines({R"("late" "a" g0 30)"}));
}

TEST_F(EventWindowTest, ASessionFiredWithinItsLatenessReopensWhenItGrowsPastTheWatermark) {
  auto sinks = run(R"(kind = "session"
gap_ms = 5
function = "collect_list"
start = []
allowed_lateness_ms = 10)",
                   {send({at(1, R"("a")", R"("p")")}), mark(6),
                    send({at(4, R"("a")", R"("q")")}),           // [1, 9): past W = 6, fires at 9
                    mark(9), send({at(2, R"("a")", R"("r")")}),  // within [1, 9), W = 9: at once
                    mark(19),                                    // closed for good
                    send({at(3, R"("a")", R"("x")")})});
  EXPECT_EQ(sinks["out"],
            Lines({win(R"("a")", 1, 6, R"(["p"])"), "W 6", win(R"("a")", 1, 9, R"(["p","q"])"),
                   "W 9", win(R"("a")", 1, 9, R"(["p","q","r"])"), "W 19"}));
  EXPECT_EQ(sinks["late"], Lines({R"("x" "a" g0 3)"}));
}

TEST_F(EventWindowTest, TwoInputsFeedTheSameWindowsUnderTheLowerWatermark) {
  auto sinks =
      run(k_tumbling_count,
          {send({at(1, R"("a")")}), send({at(2, R"("a")")}, "src2"), mark(10), mark(10, "marks2")},
          false, true);
  EXPECT_EQ(sinks["out"], Lines({win(R"("a")", 0, 10, "2"), "W 10"}));
}

TEST_F(EventWindowTest, AMessageWithoutEventTimeIsAnErrorOfThatMessage) {
  std::unique_ptr<Harness> h = start(k_tumbling_count);
  ASSERT_TRUE(h->status.is_ok()) << h->status.message();
  Status st = h->run(send({at(1, R"("a")"), Msg{"1", R"("a")", std::nullopt, 0}}));
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("window: the message has no event time; put event_time before "
                              "window"),
            std::string::npos)
      << st.message();

  g_sink.clear();
  h = start(std::string(k_tumbling_count) + "\non_error = \"skip\"");
  ASSERT_TRUE(h->status.is_ok()) << h->status.message();
  ASSERT_TRUE(h->run(send({at(1, R"("a")"), Msg{"1", R"("a")", std::nullopt, 0}, at(2, R"("a")")}))
                  .is_ok());
  ASSERT_TRUE(h->end().is_ok());
  EXPECT_EQ(g_sink["out"], Lines({win(R"("a")", 0, 10, "2")}));
}

// The same steps with a snapshot and a restore into a new task after every step give the
// same output: open windows, fired ones within the lateness, sessions with their elements,
// creation order and the watermark survive.
TEST_F(EventWindowTest, EveryKindRestoresExactly) {
  const std::vector<Step> steps{
      send({at(1, R"("a")", "1", 1), at(3, R"("b")", "2", 2), at(4, R"("a")", "3", 1),
            at(12, R"("b")", "4", 2), at(2, R"("c")", "5", 2)}),
      mark(6),
      send({at(8, R"("a")", "6", 1), at(9, R"("b")", "7", 2), at(16, R"("a")", "8", 1)}),
      mark(10),
      send({at(5, R"("a")", "9", 1), at(7, R"("c")", "10", 2)}),
      mark(13),
      send({at(2, R"("a")", "11", 1), at(13, R"("b")", "12", 2), at(25, R"("a")", "13", 1)}),
      mark(20),
      send({at(1, R"("a")", "14", 1), at(0, R"("d")", "15", 2), at(21, R"("d")", "16", 2)}),
      mark(30),
  };
  const std::string tail = "\nfunction = \"collect_list\"\nstart = []\nallowed_lateness_ms = 3";
  for (const char* kind : {R"(kind = "tumbling"
size_ms = 10)",
                           R"(kind = "hopping"
size_ms = 10
slide_ms = 4
offset_ms = 1)",
                           R"(kind = "session"
gap_ms = 3)"}) {
    SCOPED_TRACE(kind);
    auto straight = run(std::string(kind) + tail, steps);
    auto restarted = run(std::string(kind) + tail, steps, true);
    EXPECT_EQ(straight, restarted);
    EXPECT_FALSE(straight["out"].empty());
    EXPECT_FALSE(straight["late"].empty());
  }
}

TEST_F(EventWindowTest, TheSnapshotHoldsTheWatermarkAndPerGroupColumns) {
  std::unique_ptr<Harness> h = start(k_sessions);
  ASSERT_TRUE(h->status.is_ok()) << h->status.message();
  ASSERT_TRUE(h->run(send({at(1, R"("a")", R"("p")", 1), at(3, R"("a")", R"("q")", 1),
                           at(2, R"("b")", R"("r")", 3)}))
                  .is_ok());
  ASSERT_TRUE(h->run(mark(4)).is_ok());
  const Value state = h->state();
  const std::string json = json_dump(state.raw());
  EXPECT_EQ(json_dump(state.get("version").value().raw()), "1") << json;
  EXPECT_EQ(json_dump(state.get("watermark").value().raw()), "4000000") << json;
  const Value groups = state.get("groups").value();
  ASSERT_EQ(groups.size(), 2u) << json;
  EXPECT_EQ(json_dump(groups.get("1").value().raw()),
            R"({"keys":["a"],"starts":[1],"ends":[8],"values":[["p","q"]],"fired":[false],)"
            R"("seqs":[1],"elements":[["p","q"]],"orders":[[1,2]]})");
  EXPECT_EQ(json_dump(groups.get("3").value().raw()),
            R"({"keys":["b"],"starts":[2],"ends":[7],"values":[["r"]],"fired":[false],)"
            R"("seqs":[2],"elements":[["r"]],"orders":[[3]]})");
  // Restored, the watermark holds: an element that was late is late without a new one.
  g_sink.clear();
  std::unique_ptr<Harness> again = start(k_sessions, &state);
  ASSERT_TRUE(again->status.is_ok()) << again->status.message();
  ASSERT_TRUE(again->run(send({at(-2, R"("c")", R"("old")", 1)})).is_ok());
  EXPECT_EQ(g_sink["late"], Lines({R"("old" "c" g1 -2)"}));
}

TEST_F(EventWindowTest, DropGroupForgetsOneGroupAndRestoreGroupBringsOneBack) {
  std::unique_ptr<Harness> h = start(k_tumbling_count);
  ASSERT_TRUE(h->status.is_ok()) << h->status.message();
  ASSERT_TRUE(
      h->run(send({at(1, R"("a")", "1", 1), at(2, R"("b")", "1", 2), at(3, R"("b")", "1", 2)}))
          .is_ok());
  const Value state = h->state();
  EXPECT_EQ(h->drop_group(2), SL_OK);
  EXPECT_EQ(h->drop_group(9), SL_OK);  // never held: a no-op
  ASSERT_TRUE(h->end().is_ok());
  EXPECT_EQ(g_sink["out"], Lines({win(R"("a")", 0, 10, "1", 1)}));

  // Another task takes group 2 alone (as when its partition is assigned there); its own
  // window of the same bounds was created first, so it fires first.
  g_sink.clear();
  std::unique_ptr<Harness> other = start(k_tumbling_count);
  ASSERT_TRUE(other->status.is_ok()) << other->status.message();
  ASSERT_TRUE(other->run(send({at(4, R"("c")", "1", 3)})).is_ok());
  EXPECT_EQ(other->restore_group(2, state.get("groups").value().get("2").value()), SL_OK);
  const std::vector<Value> none;
  const std::vector<std::pair<std::string, Value>> columns{{"keys", Value::array(none)}};
  Value bad = Value::object(columns);
  EXPECT_EQ(other->restore_group(3, bad), SL_INVALID_ARGUMENT);  // refused: 3 as it was
  ASSERT_TRUE(other->run(send({at(5, R"("b")", "1", 2)})).is_ok());
  ASSERT_TRUE(other->end().is_ok());
  EXPECT_EQ(g_sink["out"], Lines({win(R"("c")", 0, 10, "1", 3), win(R"("b")", 0, 10, "3", 2)}));
}

// A naive model of the semantics (docs/EVENT_TIME.md), written for clarity: every window
// in one list, scanned whole for each element and watermark. Random elements and
// watermarks through window must give exactly what it gives, for every kind.
class Model {
 public:
  Model(int kind, int64_t size, int64_t slide, int64_t gap, int64_t lateness, bool update)
      : kind_(kind), size_(size), slide_(slide), gap_(gap), lateness_(lateness), update_(update) {}

  void element(const std::string& key, int64_t t, int64_t v) {
    if (kind_ == 2) {
      session(key, t, v);
      return;
    }
    std::vector<int64_t> starts;
    bool any = false;
    for (int64_t s = t - ((t % slide_) + slide_) % slide_; s > t - size_; s -= slide_) {
      any = true;
      if (!closed(s + size_)) starts.insert(starts.begin(), s);
    }
    if (starts.empty()) {
      if (any) late.push_back(std::to_string(v) + " " + key + group(key) + std::to_string(t));
      return;
    }
    std::vector<size_t> touched;
    for (const int64_t s : starts) {
      auto it = std::find_if(windows_.begin(), windows_.end(),
                             [&](const W& w) { return w.key == key && w.start == s; });
      if (it == windows_.end()) {
        windows_.push_back({key, s, s + size_, {}, false, next_seq_++});
        it = windows_.end() - 1;
      }
      it->elements.emplace_back(next_order_, v);
      touched.push_back(static_cast<size_t>(it - windows_.begin()));
    }
    ++next_order_;
    for (const size_t i : touched) changed(windows_[i]);
  }

  void watermark(int64_t ms) {
    wm_ = std::max(wm_, ms);
    std::vector<W*> due;
    for (W& w : windows_) {
      if (!w.fired && w.end <= wm_) due.push_back(&w);
    }
    std::sort(due.begin(), due.end(), [](const W* a, const W* b) {
      return std::tie(a->end, a->start, a->seq) < std::tie(b->end, b->start, b->seq);
    });
    for (W* w : due) {
      out.push_back(line(*w));
      w->fired = true;
    }
    std::erase_if(windows_, [&](const W& w) { return closed(w.end); });
    out.push_back("W " + std::to_string(ms));
  }

  void end() {
    watermark(std::numeric_limits<int64_t>::max() / 2);
    out.pop_back();  // the end of input is not forwarded by window
  }

  std::vector<std::string> out, late;

 private:
  struct W {
    std::string key;
    int64_t start, end;
    std::vector<std::pair<uint64_t, int64_t>> elements;  // (arrival, value)
    bool fired;
    uint64_t seq;
  };
  bool closed(int64_t end) const { return have_wm_() && end + lateness_ <= wm_; }
  bool have_wm_() const { return wm_ != std::numeric_limits<int64_t>::min(); }
  void session(const std::string& key, int64_t t, int64_t v) {
    int64_t start = t, end = t + gap_;
    std::vector<size_t> touch;
    for (size_t i = 0; i < windows_.size(); ++i) {
      const W& w = windows_[i];
      if (w.key == key && w.start <= t + gap_ && t <= w.end) touch.push_back(i);
    }
    for (const size_t i : touch) {
      start = std::min(start, windows_[i].start);
      end = std::max(end, windows_[i].end);
    }
    if (closed(end)) {
      late.push_back(std::to_string(v) + " " + key + group(key) + std::to_string(t));
      return;
    }
    W merged{key, start, end, {}, false, next_seq_++};
    for (const size_t i : touch) {
      merged.seq = std::min(merged.seq, windows_[i].seq);
      merged.elements.insert(merged.elements.end(), windows_[i].elements.begin(),
                             windows_[i].elements.end());
    }
    std::sort(merged.elements.begin(), merged.elements.end());
    merged.elements.emplace_back(next_order_++, v);
    for (auto i = touch.rbegin(); i != touch.rend(); ++i) {
      windows_.erase(windows_.begin() + static_cast<ptrdiff_t>(*i));
    }
    windows_.push_back(merged);
    changed(windows_.back());
  }
  void changed(W& w) {
    w.fired = w.end <= wm_;
    if (w.fired || update_) out.push_back(line(w));
  }
  static std::string line(const W& w) {
    std::string list = "[";
    for (const auto& [order, v] : w.elements) {
      list += (list.size() > 1 ? "," : "") + std::to_string(v);
    }
    return win(w.key, w.start, w.end, list + "]", group_of(w.key));
  }
  /// The key group of a key in these cases: "a" 0, "b" 1, "c" 2.
  static uint64_t group_of(const std::string& key) { return static_cast<uint64_t>(key[1] - 'a'); }
  static std::string group(const std::string& key) {
    return " g" + std::to_string(group_of(key)) + " ";
  }

  int kind_;
  int64_t size_, slide_, gap_, lateness_;
  bool update_;
  int64_t wm_ = std::numeric_limits<int64_t>::min();
  std::vector<W> windows_;
  uint64_t next_seq_ = 1, next_order_ = 1;
};

TEST_F(EventWindowTest, RandomInputGivesWhatANaiveModelGives) {
  struct Kind {
    int kind;
    int64_t size, slide, gap;
    const char* toml;
  };
  const Kind kinds[] = {{0, 10, 10, 0, "kind = \"tumbling\"\nsize_ms = 10"},
                        {1, 12, 4, 0, "kind = \"hopping\"\nsize_ms = 12\nslide_ms = 4"},
                        {1, 6, 6, 0, "kind = \"hopping\"\nsize_ms = 6\nslide_ms = 6"},
                        {2, 0, 0, 4, "kind = \"session\"\ngap_ms = 4"}};
  uint64_t rng = 0x5eed;
  auto next = [&](uint64_t n) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((rng >> 33) % n);
  };
  const std::string keys[] = {R"("a")", R"("b")", R"("c")"};
  for (const Kind& k : kinds) {
    for (const int64_t lateness : {0, 5}) {
      for (const bool update : {false, true}) {
        for (int round = 0; round < 3; ++round) {
          const std::string params = std::string(k.toml) +
                                     "\nfunction = \"collect_list\"\nstart = []\n"
                                     "allowed_lateness_ms = " +
                                     std::to_string(lateness) +
                                     (update ? "\nemit = \"update\"" : "");
          SCOPED_TRACE(params + "\nround " + std::to_string(round));
          Model model(k.kind, k.size, k.slide, k.gap, lateness, update);
          std::vector<Step> steps;
          int64_t wm = -5;
          int64_t v = 0;
          for (int i = 0; i < 60; ++i) {
            std::vector<Msg> batch;
            const int64_t n = 1 + next(4);
            for (int64_t j = 0; j < n; ++j) {
              const std::string& key = keys[next(3)];
              const int64_t t = wm - 8 + next(24);  // some late, some far ahead
              batch.push_back(at(t, key, std::to_string(++v), static_cast<uint64_t>(key[1] - 'a')));
              model.element(key, t, v);
            }
            steps.push_back(send(batch));
            if (next(3) == 0) {
              wm += 1 + next(6);
              steps.push_back(mark(wm));
              model.watermark(wm);
            }
          }
          model.end();
          auto sinks = run(params, steps);
          EXPECT_EQ(sinks["out"], model.out);
          EXPECT_EQ(sinks["late"], model.late);
          if (round == 0) {  // and through a snapshot and restore after every step
            auto restarted = run(params, steps, true);
            EXPECT_EQ(restarted["out"], model.out);
            EXPECT_EQ(restarted["late"], model.late);
          }
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_F(EventWindowTest, EndOfInputFiresEveryOpenWindowWithoutAWatermarkBefore) {
  auto sinks = run(
      k_sessions, {send({at(100, "", R"("x")"), at(1, "", R"("y")"), at(50, R"("k")", R"("z")")})});
  EXPECT_EQ(sinks["out"], Lines({win("", 1, 6, R"(["y"])"), win(R"("k")", 50, 55, R"(["z"])"),
                                 win("", 100, 105, R"(["x"])")}));
}

}  // namespace
}  // namespace sluice::host
