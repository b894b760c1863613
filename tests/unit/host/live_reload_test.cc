// Which nodes a reload keeps running (pipeline/live_reload.hpp): the plan is made from the
// two validated graphs, with core_ops loaded from the build as the daemon would load it.
#include "pipeline/live_reload.hpp"
#include "pipeline/pipeline_loader.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace fs = std::filesystem;

namespace sluice::host {
namespace {

class LiveReloadPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sluice-live-reload-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plugins");
    for (const char* so : {"libsluice_core_ops.so", "libsluice_sinks.so"}) {
      fs::create_symlink(fs::path(SLUICE_TEST_PLUGIN_DIR) / so, dir_ / "plugins" / so);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A graph: ticks -> shape (map) -> out, plus `extra` TOML.
  LoadedPipeline load(const std::string& name, const std::string& function,
                      const std::string& extra = "", const std::string& top = "") {
    const fs::path file = dir_ / (name + ".toml");
    std::ofstream(file) << "name = \"plan\"\nplugin_dirs = [\"" << (dir_ / "plugins").string()
                        << "\"]\n"
                        << top << R"(
[sources.ticks]
type = "from_periodic"
interval_ms = 10
value = 1
[operators.shape]
type = "map"
inputs = ["ticks"]
function = ")" << function
                        << R"("
[sinks.out]
type = "sink_to_textfile"
inputs = ["shape"]
path = "out-{task}.txt"
)" << extra;
    auto loaded = load_pipeline(file, {});
    for (const Diagnostic& d : loaded.diagnostics) ADD_FAILURE() << d.to_string();
    EXPECT_TRUE(loaded.ok());
    return std::move(*loaded.value);
  }

  static std::optional<size_t> kept_from(const LiveReloadPlan& plan, const GraphSpec& next,
                                         const std::string& id) {
    return plan.kept_from.at(*next.index_of(id));
  }

  fs::path dir_;
};

TEST_F(LiveReloadPlanTest, KeepsWhatIsDeclaredAsBeforeAndReplacesTheRest) {
  LoadedPipeline running = load("a", "identity");
  LoadedPipeline same = load("b", "identity");
  std::string why;
  auto plan = plan_live_reload(running.spec, same.spec, &why);
  ASSERT_TRUE(plan) << why;
  EXPECT_EQ(plan->kept, 3u);
  EXPECT_TRUE(plan->started.empty());

  // The operator's function changes: it is replaced; its producer and its reader are kept,
  // each from its own index in the running graph.
  LoadedPipeline changed = load("c", "not_null");
  plan = plan_live_reload(running.spec, changed.spec, &why);
  ASSERT_TRUE(plan) << why;
  EXPECT_EQ(plan->kept, 2u);
  EXPECT_EQ(plan->started, std::vector<std::string>{"shape"});
  EXPECT_EQ(plan->retired, std::vector<std::string>{"shape"});
  EXPECT_EQ(kept_from(*plan, changed.spec, "ticks"), running.spec.index_of("ticks"));
  EXPECT_EQ(kept_from(*plan, changed.spec, "out"), running.spec.index_of("out"));
  EXPECT_FALSE(kept_from(*plan, changed.spec, "shape"));
}

TEST_F(LiveReloadPlanTest, ANodeWhoseInputsChangeIsReplaced) {
  LoadedPipeline running = load("a", "identity");
  // A new node is started; the others are kept.
  LoadedPipeline next = load("b", "identity", R"(
[operators.both]
type = "union"
inputs = ["ticks", "shape"]
[sinks.both_out]
type = "sink_to_textfile"
inputs = ["both"]
path = "both-{task}.txt"
)");
  std::string why;
  auto plan = plan_live_reload(running.spec, next.spec, &why);
  ASSERT_TRUE(plan) << why;
  EXPECT_EQ(plan->kept, 3u);
  EXPECT_EQ(plan->started, (std::vector<std::string>{"both", "both_out"}));
  EXPECT_TRUE(plan->retired.empty());

  LoadedPipeline swapped = load("c", "identity", R"(
[operators.both]
type = "union"
inputs = ["shape", "ticks"]
[sinks.both_out]
type = "sink_to_textfile"
inputs = ["both"]
path = "both-{task}.txt"
)");
  plan = plan_live_reload(next.spec, swapped.spec, &why);
  ASSERT_TRUE(plan) << why;
  // Input order matters; the reader of the replaced node is kept (its own inputs did not
  // change).
  EXPECT_EQ(plan->started, std::vector<std::string>{"both"});
  EXPECT_EQ(plan->retired, std::vector<std::string>{"both"});
}

TEST_F(LiveReloadPlanTest, DrainsWhenTheGraphCannotChangeInPlace) {
  LoadedPipeline running = load("a", "identity");
  std::string why;
  LoadedPipeline tasks = load("b", "identity", "", "[runtime]\ntasks = 2\n");
  EXPECT_FALSE(plan_live_reload(running.spec, tasks.spec, &why));
  EXPECT_EQ(why, "[runtime] tasks changed");

  LoadedPipeline batch = load("c", "identity", "", "[runtime]\nbatch_size = 7\n");
  EXPECT_FALSE(plan_live_reload(running.spec, batch.spec, &why));
  EXPECT_EQ(why, "[runtime] batch_size changed");

  LoadedPipeline checkpointed =
      load("d", "identity", "", "[checkpoint]\ndir = \"" + (dir_ / "ckpt").string() + "\"\n");
  EXPECT_FALSE(plan_live_reload(running.spec, checkpointed.spec, &why));
  EXPECT_EQ(why, "[checkpoint] changed");
  EXPECT_FALSE(plan_live_reload(checkpointed.spec, running.spec, &why));
  LoadedPipeline other_interval =
      load("e", "identity", "",
           "[checkpoint]\ninterval_ms = 50\ndir = \"" + (dir_ / "ckpt").string() + "\"\n");
  EXPECT_FALSE(plan_live_reload(checkpointed.spec, other_interval.spec, &why));
  EXPECT_EQ(why, "[checkpoint] changed");
}

TEST_F(LiveReloadPlanTest, WithCheckpointsOnlyNodesThatKeepNothingInThemChangeInPlace) {
  const std::string top = "[checkpoint]\ndir = \"" + (dir_ / "ckpt").string() + "\"\n";
  LoadedPipeline running = load("a", "identity", "", top);
  std::string why;
  // The map keeps nothing in checkpoints: the source and the file sink stay.
  LoadedPipeline map_changed = load("b", "not_null", "", top);
  auto plan = plan_live_reload(running.spec, map_changed.spec, &why);
  ASSERT_TRUE(plan) << why;
  EXPECT_EQ(plan->kept, 2u);
  EXPECT_FALSE(kept_from(*plan, map_changed.spec, "shape"));

  // The file sink's state and transaction are in every epoch: changing it drains.
  LoadedPipeline sink_changed = load("c", "identity", "append = true\n", top);
  EXPECT_FALSE(plan_live_reload(running.spec, sink_changed.spec, &why));
  EXPECT_NE(why.find("node 'out' keeps checkpointed state and changes"), std::string::npos) << why;

  // A new stateful node would start from the checkpoint store.
  LoadedPipeline added = load("d", "identity",
                              "[operators.win]\ntype = \"sliding_window\"\ninputs = "
                              "[\"ticks\"]\nn = 2\n[sinks.shown]\ntype = \"print\"\ninputs = "
                              "[\"win\"]\n",
                              top);
  EXPECT_FALSE(plan_live_reload(running.spec, added.spec, &why));
  EXPECT_NE(why.find("the new node 'win' keeps checkpointed state"), std::string::npos) << why;
  // ... and removing it again drops state the checkpoints hold.
  EXPECT_FALSE(plan_live_reload(added.spec, running.spec, &why));
  EXPECT_NE(why.find("node 'win' keeps checkpointed state and changes"), std::string::npos) << why;
}

}  // namespace
}  // namespace sluice::host
