// The executor, driven through real config validation and real node
// descriptors registered like a plugin's: delivery order, end of input,
// failures, escaped exceptions, timers on the virtual clock, back-pressure.
#include "executor/task.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "support/in_process_plugin.hpp"
#include "support/task_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

std::vector<std::string> g_log;  // what the test nodes did, in order

const sl_host_api* host() { return host_api_table(); }

int64_t config_int(sl_value config, const char* key) {
  sl_value v;
  return host()->object_get(config, key, std::strlen(key), &v) ? v.as.i : 0;
}

// numbers: emits 0..n-1, at most `budget` per poll.
struct Numbers {
  int64_t next = 0, n = 0;
};
sl_status numbers_create(const sl_node_init* init, void** self) {
  *self = new Numbers{0, config_int(init->config, "n")};
  return SL_OK;
}
void numbers_destroy(void* self) { delete static_cast<Numbers*>(self); }
sl_status numbers_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto* s = static_cast<Numbers*>(self);
  std::vector<sl_value> out;
  while (s->next < s->n && out.size() < budget) out.push_back(sl_int(s->next++));
  g_log.push_back("poll:" + std::to_string(out.size()));
  sl_status st = host()->emit_values(ctx, out.data(), out.size());
  *state = s->next < s->n ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return st;
}

// record: logs "<id>:<value>" for each element, "<id>:finish" at the end.
std::string id_of(sl_context* ctx) {
  sl_str id = host()->node_id(ctx);
  return {id.data, id.size};
}
sl_status record_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    g_log.push_back(id_of(ctx) + ":" + std::to_string(sl_batch_at(batch, i)->value.as.i));
  }
  return host()->emit(ctx, batch->messages, batch->count);
}
sl_status record_finish(void*, sl_context* ctx) {
  g_log.push_back(id_of(ctx) + ":finish");
  return SL_OK;
}

sl_status fail_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    if (sl_batch_at(batch, i)->value.as.i == 2) {
      const char msg[] = "cannot handle 2";
      host()->set_error(ctx, msg, sizeof msg - 1);
      return SL_INVALID_ARGUMENT;
    }
  }
  return SL_OK;
}

sl_status throw_process(void*, sl_context*, uint32_t, const sl_batch*) {
  throw std::runtime_error("boom");
}

// ticker: on each element arms timer 1 for 100 ms; on fire logs the clock.
sl_status ticker_process(void*, sl_context* ctx, uint32_t, const sl_batch*) {
  return host()->timer_start(ctx, 1, 100'000'000);
}
sl_status ticker_on_timer(void*, sl_context* ctx, uint64_t id) {
  g_log.push_back("timer" + std::to_string(id) + "@" +
                  std::to_string(host()->now_ns(ctx) / 1'000'000));
  sl_value v = sl_int(host()->now_ns(ctx) / 1'000'000);
  return host()->emit_values(ctx, &v, 1);
}

// choke: a sink that signals back-pressure after each batch until a timer clears it.
sl_status choke_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  g_log.push_back("choke:" + std::to_string(batch->count));
  host()->set_backpressure(ctx, 1);
  return host()->timer_start(ctx, 7, 50'000'000);
}
sl_status choke_on_timer(void*, sl_context* ctx, uint64_t) {
  g_log.push_back("release");
  host()->set_backpressure(ctx, 0);
  return SL_OK;
}

// picky: passes elements through one by one, failing on 2 (after emitting those before).
sl_status picky_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    if (m->value.as.i == 2) {
      const char msg[] = "cannot handle 2";
      host()->set_error(ctx, msg, sizeof msg - 1);
      return SL_INVALID_ARGUMENT;
    }
    sl_status st = host()->emit(ctx, m, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}

std::string str_of(sl_value v) {
  sl_str s = host()->value_str(v);
  return {s.data, s.size};
}

// headers_sink: logs "<id>:<value>|<header sluice.error>|<header sluice.error.node>|<x>".
sl_status headers_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    std::string line = id_of(ctx) + ":" + std::to_string(m->value.as.i);
    for (const char* name : {"sluice.error", "sluice.error.node", "x"}) {
      sl_value h;
      line += "|";
      if (host()->object_get(m->headers, name, std::strlen(name), &h)) line += str_of(h);
    }
    g_log.push_back(line);
  }
  return SL_OK;
}

// gate: two inputs; the first element on input 0 closes input 0 (per-input back-pressure)
// until a 30 ms timer reopens it.
sl_status gate_process(void*, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    g_log.push_back("in" + std::to_string(input) + ":" +
                    std::to_string(sl_batch_at(batch, i)->value.as.i));
  }
  if (input == 0 && batch->count > 0 && sl_batch_at(batch, 0)->value.as.i == 0) {
    g_log.emplace_back("close0");
    host()->set_input_backpressure(ctx, 0, 1);
    return host()->timer_start(ctx, 1, 30'000'000);
  }
  return SL_OK;
}
sl_status gate_on_timer(void*, sl_context* ctx, uint64_t) {
  g_log.emplace_back("open0");
  host()->set_input_backpressure(ctx, 0, 0);
  return SL_OK;
}

// held: a source that emits 1, then is exhausted; its finish emits the 99 it held back.
sl_status held_poll(void*, sl_context* ctx, uint32_t, int32_t* state) {
  sl_value v = sl_int(1);
  *state = SL_SOURCE_DONE;
  return host()->emit_values(ctx, &v, 1);
}
sl_status held_finish(void*, sl_context* ctx) {
  g_log.emplace_back("held:finish");
  sl_value v = sl_int(99);
  return host()->emit_values(ctx, &v, 1);
}

// lifecycle: allocates its state in create and logs "create:<id>" / "destroy:<id>"; with
// `refuse = true` its create fails after allocating, and frees what it made (the rule in
// sluice.h: the host never calls destroy for a failed create). Under ASan a destroy after
// the failed create would be a double free, a missing one elsewhere a leak.
sl_status lifecycle_create(const sl_node_init* init, void** self) {
  auto* id = new std::string(id_of(init->ctx));
  g_log.push_back("create:" + *id);
  sl_value refuse;
  if (host()->object_get(init->config, "refuse", 6, &refuse) && refuse.as.i != 0) {
    delete id;
    const char msg[] = "refused by config";
    host()->set_error(init->ctx, msg, sizeof msg - 1);
    return SL_INVALID_ARGUMENT;
  }
  *self = id;
  return SL_OK;
}
void lifecycle_destroy(void* self) {
  auto* id = static_cast<std::string*>(self);
  g_log.push_back("destroy:" + *id);
  delete id;
}
const sl_param k_lifecycle_params[] = {
    {sizeof(sl_param), "refuse", SL_PARAM_BOOL, 0, "false", "", 0, 0, 0.0, 0.0, nullptr}};

const sl_param k_numbers_params[] = {
    {sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "", 0, 0, 0.0, 0.0, nullptr}};

sl_node_type node(int32_t role, const char* name) {
  return test_support::bare_node_type(role, name, SL_INPUTS_UNLIMITED);
}

class TaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log.clear();
    static sl_node_type numbers = test_support::source_node_type(
        "numbers", k_numbers_params, numbers_create, numbers_destroy, numbers_poll);
    static sl_node_type record = [] {
      sl_node_type t = node(SL_ROLE_OPERATOR, "record");
      t.process = record_process;
      t.finish = record_finish;
      return t;
    }();
    static sl_node_type record_sink = [] {
      sl_node_type t = node(SL_ROLE_SINK, "record_sink");
      t.process = record_process;
      t.finish = record_finish;
      return t;
    }();
    static sl_node_type failing = [] {
      sl_node_type t = node(SL_ROLE_OPERATOR, "failing");
      t.process = fail_process;
      return t;
    }();
    static sl_node_type throwing = [] {
      sl_node_type t = node(SL_ROLE_OPERATOR, "throwing");
      t.process = throw_process;
      return t;
    }();
    static sl_node_type ticker = [] {
      sl_node_type t = node(SL_ROLE_OPERATOR, "ticker");
      t.process = ticker_process;
      t.on_timer = ticker_on_timer;
      return t;
    }();
    static sl_node_type choke = [] {
      sl_node_type t = node(SL_ROLE_SINK, "choke");
      t.process = choke_process;
      t.on_timer = choke_on_timer;
      return t;
    }();
    static sl_node_type held = [] {
      sl_node_type t = node(SL_ROLE_SOURCE, "held");
      t.poll = held_poll;
      t.finish = held_finish;
      return t;
    }();
    static sl_node_type picky = [] {
      sl_node_type t = node(SL_ROLE_OPERATOR, "picky");
      t.process = picky_process;
      return t;
    }();
    static sl_node_type headers_sink = [] {
      sl_node_type t = node(SL_ROLE_SINK, "headers_sink");
      t.process = headers_process;
      return t;
    }();
    static sl_node_type gate = [] {
      sl_node_type t = node(SL_ROLE_SINK, "gate");
      t.min_inputs = 2;
      t.max_inputs = 2;
      t.process = gate_process;
      t.on_timer = gate_on_timer;
      return t;
    }();
    static sl_node_type lifecycle = [] {
      sl_node_type t = node(SL_ROLE_OPERATOR, "lifecycle");
      t.params = k_lifecycle_params;
      t.param_count = 1;
      t.create = lifecycle_create;
      t.destroy = lifecycle_destroy;
      t.process = record_process;
      return t;
    }();
    static const sl_node_type* types[] = {&numbers,  &record, &record_sink, &failing,
                                          &throwing, &ticker, &choke,       &headers_sink,
                                          &picky,    &gate,   &held,        &lifecycle};
    static sl_plugin plugin = test_support::in_process_plugin("test_nodes", types);
    ASSERT_TRUE(registry_.add_plugin(&plugin, "<test>", nullptr).is_ok());
  }

  GraphSpec load(const std::string& toml) {
    return test_support::load_spec(toml, registry_, "task_test.toml");
  }

  PluginRegistry registry_;
  RealClock real_clock_;
};

TEST_F(TaskTest, FanOutDeliversEachBatchDepthFirstInConfigOrder) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 2
[sources.src]
type = "numbers"
n = 3
[sinks.a]
type = "record_sink"
inputs = ["src"]
[sinks.b]
type = "record_sink"
inputs = ["src"]
)");
  Task task(spec, TaskOptions{spec.runtime.batch_size, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  EXPECT_TRUE(task.complete());
  std::vector<std::string> want{"poll:2", "a:0", "a:1", "b:0",      "b:1",
                                "poll:1", "a:2", "b:2", "a:finish", "b:finish"};
  EXPECT_EQ(g_log, want);
}

TEST_F(TaskTest, AFailingNodeStopsTheTaskWithItsIdAndMessage) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 1
[sources.src]
type = "numbers"
n = 5
[operators.bad]
type = "failing"
inputs = ["src"]
[sinks.out]
type = "record_sink"
inputs = ["bad"]
)");
  Task task(spec, TaskOptions{1, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  Status s = task.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "node 'bad' (failing): process failed: INVALID_ARGUMENT: cannot handle 2");
  EXPECT_EQ(task.nodes()[1].counters->messages_in.load(), 3u);  // 0, 1, then 2 failed
}

TEST_F(TaskTest, AnExceptionEscapingAPluginIsReportedNotFatal) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
n = 1
[operators.t]
type = "throwing"
inputs = ["src"]
[sinks.out]
type = "record_sink"
inputs = ["t"]
)");
  Task task(spec, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  Status s = task.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(),
            "node 't' (throwing): process failed: INTERNAL: plugin let an exception "
            "escape (an ABI violation): boom");
}

TEST_F(TaskTest, TimersFireInOrderOnTheVirtualClock) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
n = 1
[operators.tick]
type = "ticker"
inputs = ["src"]
[sinks.out]
type = "record_sink"
inputs = ["tick"]
)");
  VirtualClock clock(1'000'000'000);  // t = 1000 ms
  Task task(spec, TaskOptions{16, 0, 1, &clock});
  ASSERT_TRUE(task.replace_with_injector("src").is_ok());
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  ASSERT_TRUE(task.inject("src", Value::integer(1)).is_ok());
  ASSERT_TRUE(task.advance_to(clock, 1'050'000'000).is_ok());
  EXPECT_TRUE(g_log.empty());  // not due yet: nothing happens until the clock moves
  ASSERT_TRUE(task.advance_to(clock, 1'250'000'000).is_ok());
  ASSERT_TRUE(task.end_sources().is_ok());
  std::vector<std::string> want{"timer1@1100", "out:1100", "out:finish"};
  EXPECT_EQ(g_log, want);
}

TEST_F(TaskTest, BackPressureStopsPollingUntilTheSinkHasRoom) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 2
[sources.src]
type = "numbers"
n = 5
[sinks.slow]
type = "choke"
inputs = ["src"]
)");
  Task task(spec, TaskOptions{2, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  // Every poll comes only after the previous batch's back-pressure was released.
  std::vector<std::string> want{"poll:2",  "choke:2", "release", "poll:2",
                                "choke:2", "release", "poll:1",  "choke:1"};
  EXPECT_EQ(g_log, want);
}

// Back-pressure is per branch (docs/ARCHITECTURE.md): while `slow` is full, its source
// `shared` (which also feeds `tap`) is not polled, and `free`, on an unrelated branch, is.
TEST_F(TaskTest, BackPressureHoldsOnlyTheSourcesUpstreamOfTheFullNode) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 1
[sources.shared]
type = "numbers"
n = 3
[sources.free]
type = "numbers"
n = 3
[sinks.slow]
type = "choke"
inputs = ["shared"]
[sinks.tap]
type = "record_sink"
inputs = ["shared"]
[sinks.out]
type = "record_sink"
inputs = ["free"]
)");
  Task task(spec, TaskOptions{1, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  std::vector<std::string> events;
  for (const auto& e : g_log) {
    if (e.rfind("poll", 0) != 0) events.push_back(e);
  }
  auto at = [&](const std::string& e) {
    return std::find(events.begin(), events.end(), e) - events.begin();
  };
  // free ran to its end while slow held shared the first time.
  EXPECT_LT(at("out:2"), at("release")) << testing::PrintToString(events);
  // shared was held: each of its elements after the first comes after a release.
  std::vector<std::string> shared;
  for (const auto& e : events) {
    if (e.rfind("choke", 0) == 0 || e.rfind("tap:", 0) == 0 || e == "release") shared.push_back(e);
  }
  std::vector<std::string> want{"choke:1", "tap:0",   "release", "choke:1",   "tap:1",
                                "release", "choke:1", "tap:2",   "tap:finish"};
  if (!shared.empty() && shared.back() == "release") shared.pop_back();  // the last timer
  EXPECT_EQ(shared, want);
  // Bytes: 8 per int (value/value.hpp, payload_bytes).
  EXPECT_EQ(task.nodes()[1].counters->bytes_out.load(), 24u);
  EXPECT_EQ(task.nodes()[4].counters->bytes_in.load(), 24u);
}

TEST_F(TaskTest, OnErrorSkipDropsOnlyTheFailingMessageAndCountsIt) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 5
[sources.src]
type = "numbers"
n = 5
[operators.p]
type = "picky"
inputs = ["src"]
on_error = "skip"
[sinks.out]
type = "record_sink"
inputs = ["p"]
)");
  Task task(spec, TaskOptions{5, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  std::vector<std::string> want{"poll:5", "out:0", "out:1", "out:3", "out:4", "out:finish"};
  EXPECT_EQ(g_log, want);
  const NodeCounters& c = *task.nodes()[1].counters;
  EXPECT_EQ(c.errors.load(), 1u);
  EXPECT_EQ(c.skipped.load(), 1u);
  EXPECT_EQ(c.messages_in.load(), 5u);
}

TEST_F(TaskTest, DeadLettersCarryTheMessageAndTheErrorInHeaders) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 5
[sources.src]
type = "numbers"
n = 4
[operators.p]
type = "picky"
inputs = ["src"]
on_error = "dead_letter"
[sinks.out]
type = "record_sink"
inputs = ["p"]
[sinks.dlq]
type = "headers_sink"
inputs = ["p.dead_letter"]
)");
  Task task(spec, TaskOptions{5, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  std::vector<std::string> want{"poll:4", "out:0",
                                "out:1",  "dlq:2|INVALID_ARGUMENT: cannot handle 2|p|",
                                "out:3",  "out:finish"};
  EXPECT_EQ(g_log, want);
  EXPECT_EQ(task.nodes()[1].counters->dead_letters.load(), 1u);
}

TEST_F(TaskTest, AFailureDownstreamIsNotSkippedByAnUpstreamPolicy) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
n = 4
[operators.pass]
type = "record"
inputs = ["src"]
on_error = "skip"
[operators.bad]
type = "failing"
inputs = ["pass"]
[sinks.out]
type = "record_sink"
inputs = ["bad"]
)");
  Task task(spec, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(task.create().is_ok());
  ASSERT_TRUE(task.start().is_ok());
  Status s = task.run();
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "node 'bad' (failing): process failed: INVALID_ARGUMENT: cannot handle 2");
  EXPECT_EQ(task.nodes()[1].counters->skipped.load(), 0u);
}

TEST_F(TaskTest, InputBackPressurePausesOnlyTheSourcesFeedingThatInput) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 1
[sources.a]
type = "numbers"
n = 3
[sources.b]
type = "numbers"
n = 3
[sinks.g]
type = "gate"
inputs = ["a", "b"]
)");
  Task task(spec, TaskOptions{1, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  std::vector<std::string> events;
  for (const auto& e : g_log) {
    if (e.rfind("poll", 0) != 0) events.push_back(e);
  }
  // While input 0 is closed, b keeps flowing and a sends nothing.
  std::vector<std::string> want{"in0:0", "close0", "in1:0", "in1:1",
                                "in1:2", "open0",  "in0:1", "in0:2"};
  EXPECT_EQ(events, want);
}

TEST_F(TaskTest, AnEndingSourceGetsFinishAndWhatItEmitsArrives) {
  GraphSpec spec = load(R"(
[sources.src]
type = "held"
[sinks.out]
type = "record_sink"
inputs = ["src"]
)");
  Task task(spec, TaskOptions{16, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  std::vector<std::string> want{"out:1", "held:finish", "out:99", "out:finish"};
  EXPECT_EQ(g_log, want);
}

TEST_F(TaskTest, InputIdsReachTheNode) {
  GraphSpec spec = load(R"(
[sources.a]
type = "numbers"
n = 0
[sources.b]
type = "numbers"
n = 0
[sinks.g]
type = "gate"
inputs = ["b", "a"]
)");
  Task task(spec, TaskOptions{1, 0, 1, &real_clock_});
  const NodeRuntime& g = task.nodes()[2];
  ASSERT_EQ(g.input_ids.size(), 2u);
  EXPECT_EQ(std::string_view(g.input_ids[0].data, g.input_ids[0].size), "b");
  EXPECT_EQ(std::string_view(g.input_ids[1].data, g.input_ids[1].size), "a");
}

// The batch-latency histogram is a sample (docs/OPERATIONS.md): each node's first call,
// then one call in about 16 at intervals of 1 to 31 calls.
TEST(NodeCountersTest, BatchLatencyIsSampledAboutOneCallIn16) {
  NodeCounters c;
  EXPECT_TRUE(c.sample_latency());  // the first call is timed
  size_t timed = 1;
  size_t gap = 0;
  size_t longest_gap = 0;
  for (int i = 1; i < 16'000; ++i) {
    if (c.sample_latency()) {
      ++timed;
      longest_gap = std::max(longest_gap, gap);
      gap = 0;
    } else {
      ++gap;
    }
  }
  EXPECT_GE(timed, 900u);
  EXPECT_LE(timed, 1100u);
  EXPECT_LE(longest_gap, 2 * NodeCounters::k_latency_sample_every - 2);  // untimed in a row
}

TEST_F(TaskTest, TheLatencyHistogramCountsTheTimedCallsOnly) {
  GraphSpec spec = load(R"(
[runtime]
batch_size = 1
[sources.src]
type = "numbers"
n = 1000
[sinks.out]
type = "record_sink"
inputs = ["src"]
)");
  Task task(spec, TaskOptions{spec.runtime.batch_size, 0, 1, &real_clock_});
  ASSERT_TRUE(test_support::run_to_end(task).is_ok());
  const NodeCounters& c = *task.nodes()[1].counters;
  EXPECT_EQ(c.messages_in.load(), 1000u);  // every delivery is counted
  uint64_t observations = 0;
  for (const auto& b : c.latency_buckets) observations += b.load();
  EXPECT_GE(observations, 30u);  // about 1000 / 16, never every call
  EXPECT_LE(observations, 120u);
}

TEST_F(TaskTest, AFailedCreateIsNeverDestroyedAndTheNodesCreatedBeforeItAre) {
  GraphSpec spec = load(R"(
[sources.src]
type = "numbers"
n = 1
[operators.a]
type = "lifecycle"
inputs = ["src"]
[operators.b]
type = "lifecycle"
inputs = ["a"]
refuse = true
[operators.c]
type = "lifecycle"
inputs = ["b"]
[sinks.out]
type = "record_sink"
inputs = ["c"]
)");
  {
    Task task(spec, TaskOptions{spec.runtime.batch_size, 0, 1, &real_clock_});
    Status s = task.create();
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("node 'b' (lifecycle): create failed"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("refused by config"), std::string::npos) << s.message();
  }
  // c was never created; a is destroyed with the task; b, whose create failed, is not.
  std::vector<std::string> want{"create:a", "create:b", "destroy:a"};
  EXPECT_EQ(g_log, want);
}

}  // namespace
}  // namespace sluice::host
