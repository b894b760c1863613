// A rejected reload leaves the running graph's functions alone (issue 19). Loading the
// rejected config creates a plugin registry and destroys it again; function_bind called by
// the running graph must still resolve names in the registry that graph was built from. It
// once read a process-wide pointer, which the failed load left pointing at freed memory (a
// heap-use-after-free under ASan, which runs the unit tests in CI).
#include "daemon/reload.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "pipeline/pipeline_loader.hpp"
#include "pipeline/pipeline_runner.hpp"
#include "value/value.hpp"

#include <unistd.h>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace fs = std::filesystem;

namespace sluice::host {
namespace {

class ReloadRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sluice-reload-registry-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plugins");
    // Only core_ops (its function library), not every plugin the build made.
    fs::create_symlink(fs::path(SLUICE_TEST_PLUGIN_DIR) / "libsluice_core_ops.so",
                       dir_ / "plugins" / "libsluice_core_ops.so");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& body) {
    const fs::path file = dir_ / name;
    std::ofstream(file) << "name = \"reload_registry\"\nplugin_dirs = [\""
                        << (dir_ / "plugins").string() << "\"]\n"
                        << body;
    return file;
  }

  // Runs the control loop until `done` or 30 s passed.
  static void run_until(boost::asio::io_context& control, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      control.restart();
      control.run_for(std::chrono::milliseconds(50));
    }
  }

  fs::path dir_;
};

// A source that runs until stopped: one tick at start, the next an hour later.
constexpr const char* k_running_graph =
    "[sources.ticks]\ntype = \"from_periodic\"\ninterval_ms = 3600000\n";

TEST_F(ReloadRegistryTest, FunctionBindAfterARejectedReload) {
  const fs::path config = write("pipeline.toml", k_running_graph);
  auto loaded = load_pipeline(config, {});
  ASSERT_TRUE(loaded.ok() && !loaded.has_errors());
  auto pipeline = std::make_unique<LoadedPipeline>(std::move(*loaded.value));

  boost::asio::io_context control;
  RealClock clock;
  PipelineRunner runner(pipeline->spec, control, clock);
  bool running = false;
  std::optional<Status> finished;
  runner.start([&] { running = true; }, [&](Status s) { finished = std::move(s); });
  run_until(control, [&] { return running || finished.has_value(); });
  ASSERT_TRUE(running) << (finished ? finished->message() : "not running after 30 s");

  // SIGHUP with a config that loads its plugins (a second registry), then fails validation.
  const fs::path bad = write("bad.toml", std::string(k_running_graph) +
                                             "[operators.broken]\ntype = \"no_such_type\"\n"
                                             "inputs = [\"ticks\"]\n");
  ReloadCandidate candidate = prepare_reload(bad, {}, pipeline->spec);
  ASSERT_EQ(candidate.pipeline, nullptr);
  EXPECT_NE(candidate.rejected.find("invalid"), std::string::npos) << candidate.rejected;

  // The running graph binds and calls a function, on its task thread as a node would.
  Task& task = *runner.tasks()[0];
  std::promise<std::string> answer;
  ASSERT_TRUE(task.post_host([&] {
    const sl_host_api* api = host_api_table();
    sl_context* ctx = task.node(0).ctx.get();
    Value spec = Value::string("to_string");
    sl_bound_function* fn = nullptr;
    if (sl_status st = api->function_bind(ctx, spec.raw(), &fn); st != SL_OK) {
      answer.set_value(std::string("function_bind failed: ") + sl_status_name(st) + ": " +
                       task.node(0).error);
      return;
    }
    const sl_value arg = sl_int(42);
    sl_value out = sl_null();
    const sl_status st = api->function_call(fn, &arg, 1, &out);
    Value result = Value::adopt(out);
    api->function_release(fn);
    answer.set_value(st == SL_OK && result.is_string()
                         ? std::string(result.as_str())
                         : std::string("function_call failed: ") + sl_status_name(st));
  }));
  auto future = answer.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(future.get(), "42");

  runner.request_stop();
  run_until(control, [&] { return finished.has_value(); });
  ASSERT_TRUE(finished.has_value()) << "the graph did not drain within 30 s";
  EXPECT_TRUE(finished->is_ok()) << finished->message();
  runner.join();
}

// Without a node there is no graph to resolve a name in (it once meant the process-wide
// registry): a clear refusal, not a crash.
TEST(FunctionBindTest, ANamedFunctionNeedsANodesContext) {
  Value spec = Value::string("to_string");
  sl_bound_function* fn = nullptr;
  EXPECT_EQ(host_api_table()->function_bind(nullptr, spec.raw(), &fn), SL_FAILED_PRECONDITION);
  EXPECT_EQ(fn, nullptr);
}

}  // namespace
}  // namespace sluice::host
