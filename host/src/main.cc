// sluiced: the sluice host daemon and its command-line tools.
#include "checkpoint/list_command.hpp"
#include "cli/pipeline_loader.hpp"
#include "cli/plugins_command.hpp"
#include "cli/run_command.hpp"
#include "daemon/logging.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "graph/graph_export.hpp"
#include "registry/plugin_loader.hpp"
#include "testing/pipeline_test.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>

namespace {

using sluice::host::k_exit_invalid;
using sluice::host::k_exit_ok;
using sluice::host::k_exit_tests_failed;

void setup_logging(const std::string& level) {
  // Logs go to stderr, or to journald under systemd (daemon/logging.hpp);
  // stdout belongs to the pipeline (the print sink) and to the tools' output.
  sluice::host::setup_logging(level);
}

int cmd_validate(const std::string& config, const std::vector<std::filesystem::path>& dirs,
                 bool create) {
  auto pipeline = sluice::host::load_pipeline(config, dirs);
  if (!pipeline) return k_exit_invalid;
  if (create) {
    // What `run` does first, and nothing more: every node of every task is created, then
    // destroyed, without start. A failure here is a config the plugin's validate missed.
    const sluice::host::RealClock clock;
    const uint32_t tasks = pipeline->spec.runtime.tasks;
    for (uint32_t i = 0; i < tasks; ++i) {
      sluice::host::Task task(
          pipeline->spec,
          sluice::host::TaskOptions{pipeline->spec.runtime.batch_size, i, tasks, &clock});
      if (auto st = task.create(); !st.is_ok()) {
        fmt::print(stderr, "{}: validated, but create failed (task {}): {}\n", config, i,
                   st.message());
        return sluice::host::k_exit_runtime_error;
      }
    }
  }
  fmt::print("{}: OK ({} nodes{})\n", config, pipeline->spec.nodes.size(),
             create ? ", created" : "");
  return k_exit_ok;
}

int cmd_graph(const std::string& config, const std::string& format,
              const std::vector<std::filesystem::path>& dirs) {
  auto pipeline = sluice::host::load_pipeline(config, dirs);
  if (!pipeline) return k_exit_invalid;
  fmt::print("{}", format == "json" ? sluice::host::to_json(pipeline->spec)
                                    : sluice::host::to_dot(pipeline->spec));
  return k_exit_ok;
}

int cmd_plugins(const std::string& config, bool json,
                const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::filesystem::path> all = dirs;
  if (!config.empty()) {
    auto parsed = sluice::host::parse_config_file(config);
    for (const auto& d : parsed.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (!parsed.ok() || parsed.has_errors()) return k_exit_invalid;
    auto from_config = sluice::host::config_plugin_dirs(*parsed.value);
    for (const auto& d : from_config.diagnostics) fmt::print(stderr, "{}\n", d.to_string());
    if (!from_config.ok() || from_config.has_errors()) return k_exit_invalid;
    all.insert(all.begin(), from_config.value->begin(), from_config.value->end());
  }
  // List what loaded even when some plugin was refused; the exit code says so.
  auto registry = std::make_unique<sluice::host::PluginRegistry>();
  sluice::host::PluginLoader loader(*registry, sluice::host::host_api_table());
  auto problems = loader.load_search_path(sluice::host::plugin_search_path(all));
  for (const auto& p : problems) fmt::print(stderr, "error: plugin: {}\n", p.message);
  fmt::print("{}",
             json ? sluice::host::plugins_json(*registry) : sluice::host::plugins_text(*registry));
  return problems.empty() ? k_exit_ok : k_exit_invalid;
}

int cmd_test(const std::string& config, const std::string& tests_file,
             const std::vector<std::filesystem::path>& dirs) {
  // Tests may live in the pipeline file itself ([[tests]]) or in their own file.
  auto pipeline = sluice::host::load_pipeline(config, dirs, /*strip_tests=*/true);
  if (!pipeline) return k_exit_invalid;
  auto cases = sluice::host::load_test_cases(tests_file.empty() ? config : tests_file);
  if (!cases.is_ok()) {
    fmt::print(stderr, "{}\n", cases.status().message());
    return k_exit_invalid;
  }
  for (const auto& tc : cases.value()) {
    if (auto s = sluice::host::check_test_case(pipeline->spec, tc); !s.is_ok()) {
      fmt::print(stderr, "{}\n", s.message());
      return k_exit_invalid;
    }
  }
  size_t passed = 0, failed = 0;
  for (const auto& tc : cases.value()) {
    auto outcome = sluice::host::run_test_case(pipeline->spec, tc);
    if (outcome.passed) {
      ++passed;
      fmt::print("ok     {}\n", tc.name);
    } else {
      ++failed;
      fmt::print("FAILED {} ({}:{})\n{}", tc.name, tc.pos.file, tc.pos.line, outcome.report);
    }
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? k_exit_ok : k_exit_tests_failed;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a write error to report, not a kill
  // A write past RLIMIT_FSIZE fails with EFBIG ("File too large"), reported by the sink
  // like any other write error, instead of a silent kill (SIGXFSZ's default action).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"sluiced: the sluice streaming dataflow daemon"};
  app.footer(
      "Exit codes: 0 ok (sources ended, or a signal's drain finished); 1 the pipeline failed "
      "while running; 2 invalid config, plugins, usage or test file; 3 a pipeline test did "
      "not match. See docs/OPERATIONS.md.");
  app.set_version_flag("--version", std::string("sluiced ") + SLUICE_VERSION + " (ABI " +
                                        std::to_string(SL_ABI_MAJOR) + "." +
                                        std::to_string(SL_ABI_MINOR) + ")");
  app.require_subcommand(1);
  app.fallthrough();  // global options (--log-level) may follow the subcommand too
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  std::vector<std::filesystem::path> plugin_dirs;
  auto add_dirs = [&](CLI::App* sub) {
    sub->add_option("--plugin-dir", plugin_dirs, "Also load plugins from DIR (repeatable)");
  };

  std::string config, tests_file, format = "dot";
  bool json = false;

  auto* run =
      app.add_subcommand("run", "Run a pipeline until its sources end or a signal stops it");
  run->add_option("config", config, "Pipeline TOML file")->required();
  std::vector<std::string> reset_state;
  run->add_option("--reset-state", reset_state,
                  "With [checkpoint]: start node NODE from fresh state instead of its saved "
                  "state (repeatable; 'all' for every node)");
  add_dirs(run);
  auto* checkpoints = app.add_subcommand(
      "checkpoints", "List the saved checkpoints of a pipeline (time, positions, state sizes)");
  checkpoints->add_option("config", config, "Pipeline TOML file")->required();
  checkpoints->add_flag("--json", json, "Machine-readable output");
  add_dirs(checkpoints);
  auto* validate = app.add_subcommand("validate", "Check a pipeline config without running it");
  validate->add_option("config", config, "Pipeline TOML file")->required();
  bool validate_create = false;
  validate->add_flag("--create", validate_create,
                     "Also create (and destroy) every node as `run` would, without starting "
                     "it: exit 1 when a create fails (creates may connect to brokers)");
  add_dirs(validate);
  auto* graph = app.add_subcommand("graph", "Print the pipeline graph");
  graph->add_option("config", config, "Pipeline TOML file")->required();
  graph->add_option("--format", format, "dot or json")->check(CLI::IsMember({"dot", "json"}));
  add_dirs(graph);
  auto* plugins = app.add_subcommand("plugins", "List plugins, node types and functions");
  plugins->add_option("--config", config, "Also search the plugin_dirs of this pipeline");
  plugins->add_flag("--json", json, "Machine-readable output");
  add_dirs(plugins);
  auto* test =
      app.add_subcommand("test", "Run pipeline tests on injected input and a virtual clock");
  test->add_option("config", config, "Pipeline TOML file")->required();
  test->add_option("tests", tests_file, "Test file with [[tests]] (default: the pipeline file)");
  add_dirs(test);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; usage errors exit 2 like other invalid input.
    return app.exit(e) == 0 ? k_exit_ok : k_exit_invalid;
  }
  setup_logging(log_level);

  if (run->parsed()) {
    auto pipeline = sluice::host::load_pipeline(config, plugin_dirs);
    if (!pipeline) return k_exit_invalid;
    return sluice::host::run_pipeline(std::move(*pipeline), config, plugin_dirs, reset_state);
  }
  if (validate->parsed()) return cmd_validate(config, plugin_dirs, validate_create);
  if (graph->parsed()) return cmd_graph(config, format, plugin_dirs);
  if (plugins->parsed()) return cmd_plugins(config, json, plugin_dirs);
  if (test->parsed()) return cmd_test(config, tests_file, plugin_dirs);
  if (checkpoints->parsed()) {
    auto pipeline = sluice::host::load_pipeline(config, plugin_dirs);
    if (!pipeline) return k_exit_invalid;
    return sluice::host::checkpoint::list_checkpoints(pipeline->spec, json);
  }
  return k_exit_invalid;
}
