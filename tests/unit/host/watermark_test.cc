// The host's side of event time (ABI 1.5, docs/EVENT_TIME.md), with node types of this file
// in a real task on a virtual clock: how watermarks flow (forwarded by nodes without
// on_watermark, the minimum over the inputs that carry them, SL_WATERMARK_END when inputs
// end, before finish) and how side outputs are read ("ID.NAME"), checked and counted.
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_registry.hpp"
#include "support/in_process_plugin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

std::string node_id(sl_context* ctx) {
  const sl_str id = host()->node_id(ctx);
  return {id.data, id.size};
}

// What each node of the types below saw, in order: "wm:N", "wm:end", "finish", "v:N".
std::map<std::string, std::vector<std::string>> g_events;
std::string watermark_text(int64_t w) {
  return w == SL_WATERMARK_END ? "wm:end" : "wm:" + std::to_string(w);
}

// stamp (SL_NODE_WATERMARKS): passes messages on, then its watermark: the largest event
// time seen so far.
sl_status stamp_create(const sl_node_init*, void** self) {
  *self = new int64_t(SL_NO_WATERMARK);
  return SL_OK;
}
void stamp_destroy(void* self) { delete static_cast<int64_t*>(self); }
sl_status stamp_process(void* self, sl_context* ctx, uint32_t, const sl_batch* batch) {
  auto& max = *static_cast<int64_t*>(self);
  for (size_t i = 0; i < batch->count; ++i)
    max = std::max(max, sl_batch_at(batch, i)->timestamp_ns);
  if (sl_status st = host()->emit(ctx, batch->messages, batch->count); st != SL_OK) return st;
  return host()->emit_watermark(ctx, max);
}

// pass: passes messages on; no on_watermark (the host forwards).
sl_status pass_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  return host()->emit(ctx, batch->messages, batch->count);
}

// observe: records the values, watermarks and finish it sees; forwards watermarks itself.
sl_status observe_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    g_events[node_id(ctx)].push_back("v:" + std::to_string(sl_batch_at(batch, i)->value.as.i));
  }
  return host()->emit(ctx, batch->messages, batch->count);
}
sl_status observe_watermark(void*, sl_context* ctx, int64_t w) {
  g_events[node_id(ctx)].push_back(watermark_text(w));
  return host()->emit_watermark(ctx, w);
}
sl_status observe_finish(void*, sl_context* ctx) {
  g_events[node_id(ctx)].push_back("finish");
  return SL_OK;
}

// split: negative values go to side output "late", the others on.
sl_status split_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    const sl_status st =
        m->value.as.i < 0 ? host()->emit_side(ctx, 0, m, 1) : host()->emit(ctx, m, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}
sl_status bad_side_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  return host()->emit_side(ctx, 1, batch->messages, batch->count);  // "late" is #0, the only one
}
const char* const k_late[] = {"late"};

class WatermarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_events.clear();
    static sl_node_type src = test_support::bare_node_type(SL_ROLE_SOURCE, "src");
    src.poll = [](void*, sl_context*, uint32_t, int32_t* state) -> sl_status {
      *state = SL_SOURCE_DONE;
      return SL_OK;
    };
    static sl_node_type stamp = test_support::bare_node_type(SL_ROLE_OPERATOR, "stamp");
    stamp.flags = SL_NODE_WATERMARKS;
    stamp.create = stamp_create;
    stamp.destroy = stamp_destroy;
    stamp.process = stamp_process;
    static sl_node_type pass = test_support::bare_node_type(SL_ROLE_OPERATOR, "pass");
    pass.process = pass_process;
    static sl_node_type observe =
        test_support::bare_node_type(SL_ROLE_OPERATOR, "observe", SL_INPUTS_UNLIMITED);
    observe.process = observe_process;
    observe.on_watermark = observe_watermark;
    observe.finish = observe_finish;
    static sl_node_type split = test_support::bare_node_type(SL_ROLE_OPERATOR, "split");
    split.process = split_process;
    split.side_outputs = k_late;
    split.side_output_count = 1;
    static sl_node_type bad_side = test_support::bare_node_type(SL_ROLE_OPERATOR, "bad_side");
    bad_side.process = bad_side_process;
    bad_side.side_outputs = k_late;
    bad_side.side_output_count = 1;
    static sl_node_type sink = test_support::bare_node_type(SL_ROLE_SINK, "discard", 4);
    sink.process = [](void*, sl_context*, uint32_t, const sl_batch*) -> sl_status { return SL_OK; };
    static const sl_node_type* types[] = {&src, &stamp, &pass, &observe, &split, &bad_side, &sink};
    static sl_plugin plugin = test_support::in_process_plugin("watermark_test_nodes", types);
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
  }

  // The validated graph of `toml`, or its diagnostics joined.
  std::pair<std::unique_ptr<GraphSpec>, std::string> load(const std::string& toml) {
    auto doc = parse_config_string(toml, "wm.toml");
    EXPECT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, *registry_);
    std::string problems;
    for (const auto& d : spec.diagnostics) {
      if (d.severity == Severity::error) problems += d.to_string() + "\n";
    }
    if (!spec.value || !problems.empty()) return {nullptr, problems};
    auto owned = std::make_unique<GraphSpec>(std::move(*spec.value));
    owned->registry = registry_;
    return {std::move(owned), ""};
  }

  // A started task of `toml` whose sources are injected and whose `captures` are recorded.
  std::unique_ptr<Task> task(const std::string& toml, std::vector<std::string> captures = {}) {
    auto [spec, problems] = load(toml);
    EXPECT_TRUE(spec) << problems;
    if (!spec) return nullptr;
    specs_.push_back(std::move(spec));
    auto t = std::make_unique<Task>(*specs_.back(), TaskOptions{64, 0, 1, &clock_});
    for (const NodeSpec& n : specs_.back()->nodes) {
      if (n.role == SL_ROLE_SOURCE) {
        EXPECT_TRUE(t->replace_with_injector(n.id).is_ok());
      }
    }
    for (const std::string& id : captures) {
      auto c = t->attach_capture(id);
      EXPECT_TRUE(c.is_ok()) << c.status().message();
      captures_[id] = c.is_ok() ? c.value() : 0;
    }
    EXPECT_TRUE(t->create().is_ok());
    EXPECT_TRUE(t->start().is_ok());
    return t;
  }
  static void send(Task& t, const char* source, int64_t value, int64_t time) {
    Status st = t.inject(source, Value::integer(value), time);
    EXPECT_TRUE(st.is_ok()) << st.message();
  }
  std::vector<int64_t> captured(Task& t, const std::string& id) {
    std::vector<int64_t> out;
    for (const Value& v : t.captured(captures_.at(id))) out.push_back(v.as_int());
    return out;
  }
  static int64_t counter_watermark(Task& t, const std::string& id) {
    for (const NodeRuntime& n : t.nodes()) {
      if (n.id == id) return n.counters->watermark_ns.load();
    }
    ADD_FAILURE() << "no node " << id;
    return 0;
  }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  std::vector<std::unique_ptr<GraphSpec>> specs_;
  std::map<std::string, size_t> captures_;
  VirtualClock clock_{0};
};

constexpr const char* k_chain = R"(
[sources.in]
type = "src"
[operators.stamp]
type = "stamp"
inputs = ["in"]
[operators.pass]
type = "pass"
inputs = ["stamp"]
[operators.obs]
type = "observe"
inputs = ["pass"]
[sinks.out]
type = "discard"
inputs = ["obs"]
)";

TEST_F(WatermarkTest, AWatermarkFollowsItsDataThroughANodeWithoutOnWatermarkAndOnlyRises) {
  auto t = task(k_chain);
  ASSERT_TRUE(t);
  send(*t, "in", 1, 5);
  send(*t, "in", 2, 3);  // behind: the stamp's watermark stays 5, and nothing is re-sent
  send(*t, "in", 3, 9);
  EXPECT_EQ(g_events["obs"], (std::vector<std::string>{"v:1", "wm:5", "v:2", "v:3", "wm:9"}));
  EXPECT_EQ(counter_watermark(*t, "pass"), 9);  // forwarded by the host
  EXPECT_EQ(counter_watermark(*t, "out"), 9);   // a sink shows its input's
  ASSERT_TRUE(t->end_sources().is_ok());
  // End of input: the watermark ends before finish, so windows close before it.
  EXPECT_EQ(g_events["obs"],
            (std::vector<std::string>{"v:1", "wm:5", "v:2", "v:3", "wm:9", "wm:end", "finish"}));
  EXPECT_EQ(counter_watermark(*t, "obs"), SL_WATERMARK_END);
}

TEST_F(WatermarkTest, ANodeTakesTheMinimumOverItsInputsThatCarryWatermarks) {
  auto t = task(R"(
[sources.a]
type = "src"
[sources.b]
type = "src"
[sources.plain]
type = "src"
[operators.sa]
type = "stamp"
inputs = ["a"]
[operators.sb]
type = "stamp"
inputs = ["b"]
[operators.obs]
type = "observe"
inputs = ["sa", "sb", "plain"]
[sinks.out]
type = "discard"
inputs = ["obs"]
)");
  ASSERT_TRUE(t);
  send(*t, "a", 1, 10);  // sb has none yet: it holds obs back
  EXPECT_EQ(g_events["obs"], (std::vector<std::string>{"v:1"}));
  send(*t, "plain", 2, 1);  // no event time upstream of `plain`: it holds nothing back
  send(*t, "b", 3, 5);
  send(*t, "a", 4, 20);
  send(*t, "b", 5, 30);
  EXPECT_EQ(g_events["obs"],
            (std::vector<std::string>{"v:1", "v:2", "v:3", "wm:5", "v:4", "v:5", "wm:20"}));
}

TEST_F(WatermarkTest, WithoutEventTimeUpstreamTheWatermarkOnlyEndsWithTheInput) {
  auto t = task(R"(
[sources.in]
type = "src"
[operators.obs]
type = "observe"
inputs = ["in"]
[sinks.out]
type = "discard"
inputs = ["obs"]
)");
  ASSERT_TRUE(t);
  send(*t, "in", 1, 100);
  EXPECT_EQ(g_events["obs"], (std::vector<std::string>{"v:1"}));
  ASSERT_TRUE(t->end_sources().is_ok());
  EXPECT_EQ(g_events["obs"], (std::vector<std::string>{"v:1", "wm:end", "finish"}));
}

TEST_F(WatermarkTest, SideOutputsAreReadAsIdDotNameCarryNoWatermarkAndEndWithTheNode) {
  auto t = task(R"(
[sources.in]
type = "src"
[operators.stamp]
type = "stamp"
inputs = ["in"]
[operators.split]
type = "split"
inputs = ["stamp"]
[operators.late_obs]
type = "observe"
inputs = ["split.late"]
[sinks.out]
type = "discard"
inputs = ["split", "late_obs"]
)",
                {"split", "split.late"});
  ASSERT_TRUE(t);
  send(*t, "in", 1, 10);
  send(*t, "in", -2, 11);
  send(*t, "in", 3, 12);
  EXPECT_EQ(captured(*t, "split"), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(captured(*t, "split.late"), (std::vector<int64_t>{-2}));
  EXPECT_EQ(g_events["late_obs"], (std::vector<std::string>{"v:-2"}));  // no watermark there
  for (const NodeRuntime& n : t->nodes()) {
    if (n.id == "split") {
      EXPECT_EQ(n.counters->side_out[0].load(), 1u);
    }
  }
  ASSERT_TRUE(t->end_sources().is_ok());
  EXPECT_EQ(g_events["late_obs"], (std::vector<std::string>{"v:-2", "wm:end", "finish"}));
}

TEST_F(WatermarkTest, AnUnreadSideOutputIsCountedAndDroppedAndABadIndexFailsTheNode) {
  auto t = task(R"(
[sources.in]
type = "src"
[operators.split]
type = "split"
inputs = ["in"]
[sinks.out]
type = "discard"
inputs = ["split"]
)");
  ASSERT_TRUE(t);
  send(*t, "in", -1, 1);
  send(*t, "in", -2, 2);
  for (const NodeRuntime& n : t->nodes()) {
    if (n.id == "split") {
      EXPECT_EQ(n.counters->side_out[0].load(), 2u);
    }
  }

  auto bad = task(R"(
[sources.in]
type = "src"
[operators.b]
type = "bad_side"
inputs = ["in"]
[sinks.out]
type = "discard"
inputs = ["b"]
)");
  ASSERT_TRUE(bad);
  Status st = bad->inject("in", Value::integer(1));
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("no side output #1"), std::string::npos) << st.message();
}

TEST_F(WatermarkTest, AnOutputTheTypeDoesNotHaveIsAConfigErrorNamingTheOnesItHas) {
  const std::string head =
      "[sources.in]\ntype = \"src\"\n[operators.split]\ntype = \"split\"\n"
      "inputs = [\"in\"]\n[operators.pass]\ntype = \"pass\"\n"
      "inputs = [\"in\"]\n[sinks.out]\ntype = \"discard\"\n";
  auto [none, problems] = load(head + "inputs = [\"split\", \"split.early\"]\n");
  EXPECT_FALSE(none);
  EXPECT_NE(problems.find("wm.toml:11:"), std::string::npos) << problems;
  EXPECT_NE(problems.find("'split' (split) has no output 'early'; its side outputs are: late"),
            std::string::npos)
      << problems;
  auto [plain, problems2] = load(head + "inputs = [\"split\", \"pass.late\"]\n");
  EXPECT_FALSE(plain);
  EXPECT_NE(problems2.find("'pass' (pass) has no output 'late': it has only its main output"),
            std::string::npos)
      << problems2;
}

TEST_F(WatermarkTest, ValidateWarnsOfAnEventTimeOperatorWithNoWatermarkUpstream) {
  auto warnings = [&](const std::string& toml) {
    auto doc = parse_config_string(toml, "wm.toml");
    auto spec = validate_config(*doc.value, *registry_);
    std::string text;
    for (const auto& d : spec.diagnostics) text += d.to_string() + "\n";
    return text;
  };
  const std::string bare =
      "[sources.in]\ntype = \"src\"\n[operators.obs]\ntype = \"observe\"\n"
      "inputs = [\"in\"]\n[sinks.out]\ntype = \"discard\"\ninputs = [\"obs\"]\n";
  EXPECT_NE(warnings(bare).find("wm.toml:3:1: warning: node 'obs': 'obs' (observe) acts on event "
                                "time, but no node upstream makes watermarks"),
            std::string::npos)
      << warnings(bare);
  EXPECT_EQ(warnings(k_chain).find("acts on event time"), std::string::npos) << warnings(k_chain);
}

TEST_F(WatermarkTest, ThePluginRegistryRefusesBadSideOutputNames) {
  static const char* const dead_letter[] = {"dead_letter"};
  static const char* const upper[] = {"Late"};
  static const char* const twice[] = {"late", "late"};
  for (const char* const* names : {dead_letter, upper, twice}) {
    static sl_node_type t;
    t = test_support::bare_node_type(SL_ROLE_OPERATOR, "sided");
    t.process = pass_process;
    t.side_outputs = names;
    t.side_output_count = names == twice ? 2 : 1;
    static const sl_node_type* types[] = {&t};
    sl_plugin plugin = test_support::in_process_plugin("sided_plugin", types);
    auto registry = std::make_shared<PluginRegistry>();
    Status st = registry->add_plugin(&plugin, "<test>", nullptr);
    EXPECT_FALSE(st.is_ok()) << names[0];
    EXPECT_NE(st.message().find("side output"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace sluice::host
