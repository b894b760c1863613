// The coordinator and the task's epoch protocol on a virtual clock, with test node types
// registered in-process like a plugin's: sources pause and non-sink timers, posts and io are held
// while a sink prepares asynchronously; the snapshot follows the last answer; commits go to sinks
// before sources; a restart restores operator state and source positions; SIGTERM's final
// checkpoint stops the task without finish(); the end of input is checkpointed before
// finish(), so a rerun reads nothing again; a failed store write aborts the epoch and
// the pipeline goes on; an unconfirmed commit is resolved by checkpoint_recover; a saved
// state the graph cannot use is refused unless reset.
#include "checkpoint/coordinator.hpp"
#include "checkpoint/store.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "support/in_process_plugin.hpp"

#include <sys/resource.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host::checkpoint {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> g_log;
sl_context* g_sink_ctx = nullptr;
int32_t g_recover_answer = 1;

const sl_host_api* api() { return host_api_table(); }
int64_t config_int(sl_value config, const char* key) {
  sl_value v;
  return api()->object_get(config, key, std::strlen(key), &v) ? v.as.i : 0;
}

// stepper: emits `step` ints per poll up to `n`, then waits 1 ms (a timer) between polls.
struct Stepper {
  int64_t next = 0, n = 0, step = 0;
};
sl_status stepper_create(const sl_node_init* init, void** self) {
  *self = new Stepper{0, config_int(init->config, "n"), config_int(init->config, "step")};
  return SL_OK;
}
void stepper_destroy(void* self) { delete static_cast<Stepper*>(self); }
sl_status stepper_poll(void* self, sl_context* ctx, uint32_t, int32_t* state) {
  auto* s = static_cast<Stepper*>(self);
  std::vector<sl_value> out;
  for (int64_t k = 0; k < s->step && s->next < s->n; ++k) out.push_back(sl_int(s->next++));
  sl_status st = api()->emit_values(ctx, out.data(), out.size());
  if (s->next >= s->n) {
    *state = SL_SOURCE_DONE;
  } else {
    *state = SL_SOURCE_IDLE;
    api()->timer_start(ctx, 1, 1'000'000);
  }
  return st;
}
sl_status stepper_snapshot(void* self, sl_context*, sl_value* out) {
  *out = sl_int(static_cast<Stepper*>(self)->next);
  return SL_OK;
}
sl_status stepper_restore(void* self, sl_context*, sl_value state) {
  static_cast<Stepper*>(self)->next = state.as.i;
  g_log.push_back("restore:src:" + std::to_string(state.as.i));
  return SL_OK;
}
sl_status src_commit(void*, sl_context*, uint64_t epoch) {
  g_log.push_back("commit:src:" + std::to_string(epoch));
  return SL_OK;
}
sl_status src_recover(void*, sl_context*, uint64_t epoch, sl_value state, int32_t* committed) {
  g_log.push_back("recover:" + std::to_string(epoch) + ":" + std::to_string(state.as.i));
  *committed = g_recover_answer;
  return SL_OK;
}

// summer: running sum (stateful), emitted after each element. Posted work and on_io add
// to the sum too (an operator that emits from a post, as core_ops' buffer does, and a
// network source that emits from on_io).
sl_context* g_sum_ctx = nullptr;
int64_t* g_sum_self = nullptr;
sl_status summer_create(const sl_node_init*, void** self) {
  *self = g_sum_self = new int64_t{0};
  return SL_OK;
}
void summer_destroy(void* self) { delete static_cast<int64_t*>(self); }
sl_status summer_add(int64_t* sum, sl_context* ctx, int64_t x) {
  *sum += x;
  sl_value v = sl_int(*sum);
  return api()->emit_values(ctx, &v, 1);
}
sl_status summer_process(void* self, sl_context* ctx, uint32_t, const sl_batch* batch) {
  g_sum_ctx = ctx;
  for (size_t i = 0; i < batch->count; ++i) {
    if (sl_status st =
            summer_add(static_cast<int64_t*>(self), ctx, sl_batch_at(batch, i)->value.as.i);
        st != SL_OK) {
      return st;
    }
  }
  return SL_OK;
}
sl_status summer_on_io(void* self, sl_context* ctx, uint64_t watch_id, uint32_t) {
  g_log.push_back("io:" + std::to_string(watch_id));
  return summer_add(static_cast<int64_t*>(self), ctx, 1000);
}
void summer_posted(sl_context* ctx, void* arg) {  // arg: the node's sum
  g_log.emplace_back("posted");
  summer_add(static_cast<int64_t*>(arg), ctx, 100);
}
sl_status summer_finish(void*, sl_context*) {
  g_log.emplace_back("finish:sum");
  return SL_OK;
}
sl_status summer_snapshot(void* self, sl_context*, sl_value* out) {
  *out = sl_int(*static_cast<int64_t*>(self));
  return SL_OK;
}
sl_status summer_restore(void* self, sl_context*, sl_value state) {
  *static_cast<int64_t*>(self) = state.as.i;
  return SL_OK;
}

// async_sink: logs what it gets; answers prepare only when the test calls checkpoint_ready.
sl_status sink_process(void*, sl_context*, uint32_t, const sl_batch* batch) {
  for (size_t i = 0; i < batch->count; ++i) {
    g_log.push_back("got:" + std::to_string(sl_batch_at(batch, i)->value.as.i));
  }
  return SL_OK;
}
sl_status sink_prepare(void*, sl_context* ctx, uint64_t epoch) {
  g_sink_ctx = ctx;
  g_log.push_back("prepare:" + std::to_string(epoch));
  return SL_OK;
}
sl_status sink_commit(void*, sl_context*, uint64_t epoch) {
  g_log.push_back("commit:sink:" + std::to_string(epoch));
  return SL_OK;
}
sl_status sink_abort(void*, sl_context*, uint64_t epoch) {
  g_log.push_back("abort:sink:" + std::to_string(epoch));
  return SL_OK;
}

const sl_param k_stepper_params[] = {
    {sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "step", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "", 0, 0, 0.0, 0.0,
     nullptr}};

using test_support::bare_node_type;

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_log.clear();
    g_sink_ctx = nullptr;
    g_sum_ctx = nullptr;
    g_sum_self = nullptr;
    g_recover_answer = 1;
    dir_ = fs::temp_directory_path() /
           ("sluice-coord-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    static sl_node_type stepper = [] {
      sl_node_type t = test_support::source_node_type("stepper", k_stepper_params, stepper_create,
                                                      stepper_destroy, stepper_poll);
      t.flags = SL_NODE_STATEFUL;
      t.snapshot = stepper_snapshot;
      t.restore = stepper_restore;
      t.checkpoint_commit = src_commit;
      return t;
    }();
    static sl_node_type recover_src = [] {
      sl_node_type t = stepper;
      t.name = "recover_src";
      t.checkpoint_recover = src_recover;
      return t;
    }();
    static sl_node_type summer = [] {
      sl_node_type t = bare_node_type(SL_ROLE_OPERATOR, "summer");
      t.flags = SL_NODE_STATEFUL;
      t.create = summer_create;
      t.destroy = summer_destroy;
      t.process = summer_process;
      t.on_io = summer_on_io;
      t.finish = summer_finish;
      t.snapshot = summer_snapshot;
      t.restore = summer_restore;
      return t;
    }();
    static sl_node_type async_sink = [] {
      sl_node_type t = bare_node_type(SL_ROLE_SINK, "async_sink");
      t.process = sink_process;
      t.checkpoint_prepare = sink_prepare;
      t.checkpoint_commit = sink_commit;
      t.checkpoint_abort = sink_abort;
      return t;
    }();
    static const sl_node_type* types[] = {&stepper, &recover_src, &summer, &async_sink};
    static sl_plugin plugin = test_support::in_process_plugin("ck_test_nodes", types);
    ASSERT_TRUE(register_builtin_stores(registry_).is_ok());
    ASSERT_TRUE(registry_.add_plugin(&plugin, "<test>", nullptr).is_ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  GraphSpec load(const std::string& source_type = "stepper", const std::string& extra = "") {
    std::string toml = "name = \"ck\"\n[checkpoint]\ninterval_ms = 3600000\nkeep = 2\ndir = \"" +
                       dir_.string() + "\"\n[sources.src]\ntype = \"" + source_type +
                       "\"\nn = 20\nstep = 5\n[operators.sum]\ntype = \"summer\"\ninputs = "
                       "[\"src\"]\n[sinks.out]\ntype = \"async_sink\"\ninputs = [\"sum\"]\n" +
                       extra;
    auto doc = parse_config_string(toml, "ck.toml");
    EXPECT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, registry_);
    for (const auto& d : spec.diagnostics) ADD_FAILURE() << d.to_string();
    return std::move(*spec.value);
  }

  // A pipeline instance: coordinator, task, control loop.
  struct Run {
    // Declared first so it is destroyed last: the coordinator's timer lives on it.
    boost::asio::io_context control;
    std::unique_ptr<Coordinator> coordinator;
    std::unique_ptr<Task> task;
  };
  std::unique_ptr<Run> start(const GraphSpec& spec, ResetState reset = {}) {
    auto r = std::make_unique<Run>();
    auto store = open_store(spec);
    EXPECT_TRUE(store.is_ok()) << store.status().message();
    r->coordinator = std::make_unique<Coordinator>(spec, std::move(store).value(), reset);
    Status loaded = r->coordinator->load();
    EXPECT_TRUE(loaded.is_ok()) << loaded.message();
    r->task = std::make_unique<Task>(spec, TaskOptions{8, 0, 1, &clock_});
    EXPECT_TRUE(r->task->create().is_ok());
    Status restored = r->coordinator->restore_task(r->task.get(), 0);
    EXPECT_TRUE(restored.is_ok()) << restored.message();
    EXPECT_TRUE(r->task->start().is_ok());
    r->coordinator->attach(r->control, {r->task.get()});
    return r;
  }
  // Runs the task's posted work and the control loop until neither has anything to do.
  void settle(Run& r) {
    for (int i = 0; i < 100; ++i) {
      Status st = r.task->run_until_idle();
      ASSERT_TRUE(st.is_ok()) << st.message();
      r.control.restart();
      if (r.control.poll() == 0) return;
    }
    FAIL() << "did not settle";
  }
  void advance(Run& r, int64_t ms) {
    ASSERT_TRUE(r.task->advance_to(clock_, clock_.monotonic_ns() + ms * 1'000'000).is_ok());
    settle(r);
  }
  size_t count(const std::string& entry) const {
    return static_cast<size_t>(std::count(g_log.begin(), g_log.end(), entry));
  }
  size_t index_of(const std::string& entry) const {
    return static_cast<size_t>(std::find(g_log.begin(), g_log.end(), entry) - g_log.begin());
  }

  PluginRegistry registry_;
  VirtualClock clock_{1'000'000'000};
  fs::path dir_;
};

TEST_F(CoordinatorTest, EpochWaitsForTheSinkThenStoresCommitsAndResumes) {
  GraphSpec spec = load();
  auto r = start(spec);
  settle(*r);
  EXPECT_EQ(g_log, (std::vector<std::string>{"got:0", "got:1", "got:3", "got:6", "got:10"}));
  r->coordinator->trigger();
  settle(*r);
  EXPECT_EQ(g_log.back(), "prepare:1");
  // While the sink has not answered: no poll, and the source's timer is held.
  advance(*r, 50);
  EXPECT_EQ(g_log.back(), "prepare:1");
  EXPECT_TRUE(r->coordinator->epoch_running());
  api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
  settle(*r);
  EXPECT_FALSE(r->coordinator->epoch_running());
  EXPECT_EQ(r->coordinator->last_completed_epoch(), 1u);
  // Sinks commit before sources; then the held timer fires and the source goes on.
  ASSERT_LT(index_of("commit:sink:1"), index_of("commit:src:1"));
  ASSERT_LT(index_of("commit:src:1"), index_of("got:15"));
  auto store = open_store(spec);
  auto loaded = load_newest(*store.value(), 2);
  ASSERT_TRUE(loaded.is_ok());
  ASSERT_EQ(loaded->size(), 1u);
  const Loaded& cp = (*loaded)[0];
  EXPECT_TRUE(cp.committed);
  EXPECT_EQ(cp.checkpoint.find(0, "src")->state.as_int(), 5);
  EXPECT_EQ(cp.checkpoint.find(0, "sum")->state.as_int(), 10);
  EXPECT_EQ(cp.checkpoint.find(0, "src")->role, SL_ROLE_SOURCE);
}

TEST_F(CoordinatorTest, PostsAndIoOfNonSinksWaitForTheSnapshot) {
  GraphSpec spec = load();
  auto r = start(spec);
  settle(*r);  // 0..4: sum 10
  ASSERT_NE(g_sum_ctx, nullptr);
  r->coordinator->trigger();
  settle(*r);
  ASSERT_EQ(g_log.back(), "prepare:1");
  // While the sink prepares, the operator gets posted work and its descriptor is ready.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  ASSERT_EQ(api()->io_watch(g_sum_ctx, fds[0], SL_IO_READ, 7), SL_OK);
  ASSERT_EQ(api()->post(g_sum_ctx, summer_posted, g_sum_self), SL_OK);
  advance(*r, 50);
  // Held: nothing reached the sink after its prepare, and the snapshot waits for it.
  EXPECT_EQ(g_log.back(), "prepare:1");
  EXPECT_EQ(count("posted") + count("io:7"), 0u);
  api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
  settle(*r);
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_EQ(r->coordinator->last_completed_epoch(), 1u);
  // The snapshot has the sum before them (10); they ran after the commit, in arrival order.
  auto store = open_store(spec);
  auto loaded = load_newest(*store.value(), 2);
  ASSERT_TRUE(loaded.is_ok());
  EXPECT_EQ((*loaded)[0].checkpoint.find(0, "sum")->state.as_int(), 10);
  ASSERT_LT(index_of("commit:src:1"), index_of("io:7"));
  ASSERT_LT(index_of("io:7"), index_of("posted"));
  EXPECT_EQ(count("got:1010"), 1u);
  EXPECT_EQ(count("got:1110"), 1u);
}

TEST_F(CoordinatorTest, RestartRestoresStateAndPositions) {
  GraphSpec spec = load();
  {
    auto r = start(spec);
    settle(*r);  // 0..4, sum 10
    r->coordinator->trigger();
    settle(*r);
    api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
    settle(*r);
    advance(*r, 2);  // 5..9 after the checkpoint: replayed after the "crash"
    EXPECT_EQ(count("got:45"), 1u);
  }  // crash: no final checkpoint
  g_log.clear();
  auto r = start(spec);
  settle(*r);
  // The sum continues from 10 with element 5: state restored, not recomputed.
  EXPECT_EQ(g_log.front(), "restore:src:5");
  EXPECT_EQ(g_log.at(1), "got:15");
}

TEST_F(CoordinatorTest, FinalCheckpointStopsWithoutFinish) {
  GraphSpec spec = load();
  auto r = start(spec);
  settle(*r);
  std::optional<Status> outcome;
  ASSERT_TRUE(r->coordinator->stop_with_final_checkpoint([&](Status s) { outcome = s; }));
  settle(*r);
  api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
  settle(*r);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_TRUE(outcome->is_ok()) << outcome->message();
  EXPECT_TRUE(r->task->complete());
  EXPECT_EQ(count("finish:sum"), 0u);  // finish would emit as if the input had ended
  EXPECT_EQ(count("commit:sink:1"), 1u);
  EXPECT_EQ(g_log.back(), "commit:src:1");
}

TEST_F(CoordinatorTest, EndOfInputIsCheckpointedBeforeFinishSoARerunReadsNothing) {
  GraphSpec spec = load();
  {
    auto r = start(spec);
    settle(*r);      // 0..4
    advance(*r, 3);  // 5..19: the stepper is exhausted; the task holds its end
    EXPECT_EQ(count("got:190"), 1u);
    // An epoch started at once (interval_ms is an hour), before finish.
    EXPECT_TRUE(r->coordinator->epoch_running());
    EXPECT_EQ(g_log.back(), "prepare:1");
    EXPECT_EQ(count("finish:sum"), 0u);
    EXPECT_FALSE(r->task->complete());
    api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
    settle(*r);
    EXPECT_EQ(r->coordinator->last_completed_epoch(), 1u);
    // Then the input ends: finish runs after the commits, and the task completes.
    ASSERT_LT(index_of("commit:src:1"), index_of("finish:sum"));
    EXPECT_EQ(count("finish:sum"), 1u);
    EXPECT_TRUE(r->task->complete());
    auto store = open_store(spec);
    auto loaded = load_newest(*store.value(), 1);
    ASSERT_TRUE(loaded.is_ok());
    ASSERT_EQ(loaded->size(), 1u);
    EXPECT_TRUE((*loaded)[0].committed);
    EXPECT_FALSE((*loaded)[0].checkpoint.tasks.at(0).finished);
    EXPECT_EQ((*loaded)[0].checkpoint.find(0, "src")->state.as_int(), 20);  // the end
    EXPECT_EQ((*loaded)[0].checkpoint.find(0, "sum")->state.as_int(), 190);
  }
  // The rerun resumes at the end: nothing is delivered again.
  g_log.clear();
  auto r = start(spec);
  settle(*r);
  EXPECT_EQ(g_log.front(), "restore:src:20");
  EXPECT_EQ(std::count_if(g_log.begin(), g_log.end(),
                          [](const std::string& e) { return e.rfind("got:", 0) == 0; }),
            0);
  api()->checkpoint_ready(g_sink_ctx, 2, SL_OK);
  settle(*r);
  EXPECT_TRUE(r->task->complete());
}

TEST_F(CoordinatorTest, AFailedStoreWriteAbortsTheEpochAndThePipelineGoesOn) {
  GraphSpec spec = load();
  auto r = start(spec);
  settle(*r);
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit tiny = old;
  tiny.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tiny), 0);
  r->coordinator->trigger();
  settle(*r);
  api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
  settle(*r);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  EXPECT_EQ(count("abort:sink:1"), 1u);
  EXPECT_EQ(count("commit:sink:1"), 0u);
  EXPECT_EQ(r->coordinator->last_completed_epoch(), 0u);
  advance(*r, 2);  // resumed
  EXPECT_EQ(count("got:45"), 1u);
  r->coordinator->trigger();
  settle(*r);
  api()->checkpoint_ready(g_sink_ctx, 2, SL_OK);
  settle(*r);
  EXPECT_EQ(count("commit:sink:2"), 1u);
  EXPECT_EQ(r->coordinator->last_completed_epoch(), 2u);
}

TEST_F(CoordinatorTest, AFailedPrepareFailsTheTaskWithTheSinksMessage) {
  GraphSpec spec = load();
  auto r = start(spec);
  settle(*r);
  r->coordinator->trigger();
  settle(*r);
  const char msg[] = "disk on fire";
  api()->set_error(g_sink_ctx, msg, sizeof msg - 1);
  api()->checkpoint_ready(g_sink_ctx, 1, SL_UNAVAILABLE);
  Status st = r->task->run_until_idle();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("node 'out' (async_sink): checkpoint_prepare failed: UNAVAILABLE: "
                              "disk on fire"),
            std::string::npos)
      << st.message();
}

class RecoverTest : public CoordinatorTest {
 protected:
  // Epoch 1 committed at position 5, epoch 2 stored but its commit unconfirmed (position 10).
  void write_epochs(const GraphSpec& spec) {
    auto store = open_store(spec);
    ASSERT_TRUE(store.is_ok());
    for (int64_t e : {1, 2}) {
      Checkpoint cp;
      cp.epoch = static_cast<uint64_t>(e);
      cp.pipeline = "ck";
      TaskState t;
      t.nodes.push_back({"src", "recover_src", SL_ROLE_SOURCE, Value::integer(5 * e)});
      t.nodes.push_back({"sum", "summer", SL_ROLE_OPERATOR, Value::integer(100 * e)});
      cp.tasks.push_back(std::move(t));
      ASSERT_TRUE(store.value()->write(cp.epoch, encode_checkpoint(cp)).is_ok());
      if (e == 1) {
        ASSERT_TRUE(store.value()->mark_committed(1).is_ok());
      }
    }
  }
};

TEST_F(RecoverTest, UncommittedEpochIsUsedWhenTheNodeSaysItsCommitHappened) {
  GraphSpec spec = load("recover_src");
  write_epochs(spec);
  g_recover_answer = 1;
  auto r = start(spec);
  settle(*r);
  EXPECT_EQ(g_log.at(0), "recover:2:10");
  EXPECT_EQ(g_log.at(1), "restore:src:10");
  EXPECT_EQ(g_log.at(2), "got:210");  // 200 + 10
}

TEST_F(RecoverTest, UncommittedEpochFallsBackToThePreviousOne) {
  GraphSpec spec = load("recover_src");
  write_epochs(spec);
  g_recover_answer = 0;
  auto r = start(spec);
  settle(*r);
  EXPECT_EQ(g_log.at(0), "recover:2:10");
  EXPECT_EQ(g_log.at(1), "restore:src:5");
  EXPECT_EQ(g_log.at(2), "got:105");  // 100 + 5
}

TEST_F(CoordinatorTest, StateTheGraphCannotUseIsRefusedUnlessReset) {
  GraphSpec spec = load();
  {
    auto r = start(spec);
    settle(*r);
    r->coordinator->trigger();
    settle(*r);
    api()->checkpoint_ready(g_sink_ctx, 1, SL_OK);
    settle(*r);
  }
  // "sum" renamed to "total": the saved state of "sum" has no node any more.
  auto doc = parse_config_string(
      "name = \"ck\"\n[checkpoint]\ndir = \"" + dir_.string() +
          "\"\n[sources.src]\ntype = \"stepper\"\nn = 20\nstep = 5\n[operators.total]\ntype = "
          "\"summer\"\ninputs = [\"src\"]\n[sinks.out]\ntype = \"async_sink\"\ninputs = "
          "[\"total\"]\n",
      "ck2.toml");
  ASSERT_TRUE(doc.ok());
  auto renamed = validate_config(*doc.value, registry_);
  ASSERT_TRUE(renamed.value.has_value());
  {
    Coordinator c(*renamed.value, std::move(open_store(*renamed.value)).value(), {});
    Status st = c.load();
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("node 'sum' (summer) has saved state in checkpoint epoch 1 but "
                                "is no longer in the pipeline"),
              std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("--reset-state"), std::string::npos);
  }
  {
    Coordinator c(*renamed.value, std::move(open_store(*renamed.value)).value(),
                  ResetState{false, {"sum"}});
    EXPECT_TRUE(c.load().is_ok());
  }
  {
    Coordinator c(*renamed.value, std::move(open_store(*renamed.value)).value(),
                  ResetState{true, {}});
    EXPECT_TRUE(c.load().is_ok());
  }
}

}  // namespace
}  // namespace sluice::host::checkpoint
