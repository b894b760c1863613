// sluiced: the sluice host daemon and its command-line tools. This file only wires
// CLI11: each subcommand is a function of cli/commands.hpp.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "daemon/logging.hpp"
#include "plugin_check/plugin_check.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sluice/sluice.h>

#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace host = sluice::host;

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout is a write error to report, not a kill
  // A write past RLIMIT_FSIZE fails with EFBIG ("File too large"), reported by the sink
  // like any other write error, instead of a silent kill (SIGXFSZ's default action).
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"sluiced: the sluice streaming dataflow daemon"};
  app.footer(
      "Exit codes: 0 ok (sources ended, or a signal's drain finished); 1 the pipeline failed "
      "while running; 2 invalid config, plugins, usage or test file; 3 a pipeline test did "
      "not match, or plugin-check found a failure. See docs/OPERATIONS.md.");
  app.set_version_flag("--version", std::string("sluiced ") + SLUICE_VERSION + " (ABI " +
                                        std::to_string(SL_ABI_MAJOR) + "." +
                                        std::to_string(SL_ABI_MINOR) + ")");
  app.require_subcommand(1);
  app.fallthrough();  // global options (--log-level) may follow the subcommand too
  std::string log_level = "info", log_format = "text";
  auto* log_level_opt =
      app.add_option("--log-level", log_level,
                     "trace, debug, info, warn, error (default: $SLUICE_LOG, else info)")
          ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  auto* log_format_opt =
      app.add_option("--log-format", log_format,
                     "text or json: one JSON object per line (default: $SLUICE_LOG_FORMAT, "
                     "else text)")
          ->check(CLI::IsMember({"text", "json"}));
  std::vector<std::filesystem::path> plugin_dirs;
  auto add_dirs = [&](CLI::App* sub) {
    // One DIR per flag: `--plugin-dir DIR CONFIG` must leave CONFIG to the positional.
    sub->add_option("--plugin-dir", plugin_dirs, "Also load plugins from DIR (repeatable)")
        ->allow_extra_args(false);
  };

  std::string config, tests_file, format = "dot";
  bool json = false;
  // run, validate, graph, checkpoints, test: several config files and --config-dir DIR
  // (every *.toml in DIR, by name), merged into one pipeline (docs/OPERATIONS.md).
  std::vector<std::filesystem::path> configs, config_dirs;
  auto add_configs = [&](CLI::App* sub, bool positional) {
    if (positional) {
      sub->add_option("config", configs,
                      "Pipeline TOML file(s): several are merged into one pipeline");
    }
    sub->add_option("--config-dir", config_dirs,
                    "Also every *.toml file in DIR, sorted by name, not recursive (repeatable)")
        ->check(CLI::ExistingDirectory)
        ->allow_extra_args(false);
  };
  // The merged list: the files as given, then the directories.
  auto all_configs = [&] {
    std::vector<std::filesystem::path> out = configs;
    out.insert(out.end(), config_dirs.begin(), config_dirs.end());
    return out;
  };

  auto* run =
      app.add_subcommand("run", "Run a pipeline until its sources end or a signal stops it");
  add_configs(run, true);
  std::vector<std::string> reset_state;
  run->add_option("--reset-state", reset_state,
                  "With [checkpoint]: start node NODE from fresh state instead of its saved "
                  "state (repeatable; 'all' for every node)");
  std::string member;
  run->add_option("--member", member,
                  "With [checkpoint]: this daemon's name among the daemons that run the same "
                  "pipeline and share its store (overrides [checkpoint] member; "
                  "docs/SCALING.md)");
  add_dirs(run);
  auto* checkpoints = app.add_subcommand(
      "checkpoints", "List the saved checkpoints of a pipeline (time, positions, state sizes)");
  add_configs(checkpoints, true);
  checkpoints->add_flag("--json", json, "Machine-readable output");
  add_dirs(checkpoints);
  auto* validate = app.add_subcommand("validate", "Check a pipeline config without running it");
  add_configs(validate, true);
  bool validate_create = false;
  validate->add_flag("--create", validate_create,
                     "Also create (and destroy) every node as `run` would, without starting "
                     "it: exit 1 when a create fails (creates may connect to brokers)");
  bool validate_no_environment = false;
  validate->add_flag("--no-environment", validate_no_environment,
                     "Check the config only, not this machine (by default files that nodes "
                     "will read must exist and directories they write in must be writable, "
                     "as `run` checks before it starts)");
  validate->add_flag("--json", json,
                     "Print the result and every finding (file, line, column, node, key, "
                     "message) as one JSON object on stdout");
  add_dirs(validate);
  auto* graph = app.add_subcommand("graph", "Print the pipeline graph");
  add_configs(graph, true);
  graph->add_option("--format", format, "dot or json")->check(CLI::IsMember({"dot", "json"}));
  add_dirs(graph);
  auto* plugins = app.add_subcommand("plugins", "List plugins, node types and functions");
  plugins->add_option("--config", config, "Also search the plugin_dirs of this pipeline");
  plugins->add_flag("--json", json, "Machine-readable output");
  add_dirs(plugins);
  auto* test = app.add_subcommand(
      "test",
      "Run pipeline tests on injected input and a virtual clock: sluiced test PIPELINE.toml "
      "[CASES.tests.toml] (docs/TESTING.md)");
  test->add_option("PIPELINE.toml", config,
                   "The pipeline file to test (may be left out with --config-dir)");
  test->add_option("CASES.tests.toml", tests_file,
                   "A file of [[tests]] cases (default: the [[tests]] written "
                   "in the pipeline file)");
  std::vector<std::string> case_patterns;
  test->add_option("--case", case_patterns,
                   "Run only the case with this name, or the cases matching this glob (* ? "
                   "[...]); repeatable");
  add_dirs(test);
  add_configs(test, false);
  host::PluginCheckOptions check;
  auto* plugin_check = app.add_subcommand(
      "plugin-check",
      "Check one plugin file: declarations, hostile elements, snapshot/restore, and crashes "
      "around the checkpoint protocol (docs/PLUGIN_GUIDE.md, \"Checking a plugin\")");
  plugin_check->add_option("plugin", check.plugin, "The plugin's shared object")->required();
  plugin_check->add_option("--config", check.config,
                           "TOML: [TYPE] params, [functions.NAME] args, [check.TYPE] settings");
  plugin_check->add_option("--bad-config", check.bad_config,
                           "TOML: [TYPE] params that validate or create must refuse");
  plugin_check->add_option("--readback", check.readback,
                           "Shell command, run in a sink's working directory, printing its "
                           "committed records one per line ({\"n\": N} or N)");
  plugin_check->add_flag("--exactly-once", check.exactly_once,
                         "Checkpointing sinks claim exactly-once: a doubled record fails");
  plugin_check->add_option("--work-dir", check.work_dir,
                           "Where the sinks write (default: a new directory in $TMPDIR, "
                           "removed when every check passed)");
  plugin_check->add_option("--only", check.only, "Check only these node types / functions");
  int64_t check_timeout_s = 120;
  plugin_check->add_option("--timeout", check_timeout_s, "Seconds each child process may take")
      ->check(CLI::Range(1, 3600));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; usage errors exit 2 like other invalid input.
    return app.exit(e) == 0 ? host::k_exit_ok : host::k_exit_invalid;
  }
  // Logs go to stderr, or to journald under systemd (daemon/logging.hpp); stdout
  // belongs to the pipeline (the print sink) and to the tools' output.
  // A flag wins over its environment variable (SLUICE_LOG, SLUICE_LOG_FORMAT).
  const auto log =
      host::log_settings(log_level_opt->count() > 0 ? std::optional(log_level) : std::nullopt,
                         log_format_opt->count() > 0 ? std::optional(log_format) : std::nullopt);
  host::setup_logging(log.settings);
  if (!log.error.empty()) {
    spdlog::error("{}", log.error);
    return host::k_exit_invalid;
  }

  if (test->parsed() && !config.empty()) configs.insert(configs.begin(), config);
  if ((run->parsed() || validate->parsed() || graph->parsed() || test->parsed() ||
       checkpoints->parsed()) &&
      all_configs().empty()) {
    fmt::print(stderr, "error: no config given: name a pipeline file, or --config-dir DIR\n");
    return host::k_exit_invalid;
  }
  if (run->parsed()) return host::run_command(all_configs(), plugin_dirs, reset_state, member);
  if (validate->parsed())
    return host::validate_command(all_configs(), plugin_dirs, validate_create,
                                  !validate_no_environment, json);
  if (graph->parsed()) return host::graph_command(all_configs(), format, plugin_dirs);
  if (plugins->parsed()) return host::plugins_command(config, json, plugin_dirs);
  if (test->parsed()) {
    return host::test_command(all_configs(), tests_file, plugin_dirs, case_patterns);
  }
  if (checkpoints->parsed()) return host::checkpoints_command(all_configs(), json, plugin_dirs);
  if (plugin_check->parsed()) {
    check.timeout_ms = check_timeout_s * 1000;
    return host::plugin_check_command(check);
  }
  return host::k_exit_invalid;
}
