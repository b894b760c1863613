// The subcommands of sluiced, one function each, called by main.cc once CLI11 has
// parsed the command line. Each prints its output to stdout and its findings to
// stderr, and returns the process exit code (cli/exit_codes.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host {

struct PluginCheckOptions;  // plugin_check/plugin_check.hpp

using PluginDirs = std::vector<std::filesystem::path>;  // --plugin-dir, in order
// The config files and config directories (--config-dir: every *.toml in it, by name) of
// one pipeline, in order; merged into one document (config/config_loader.hpp,
// parse_config_files) each time they are read.
using ConfigPaths = std::vector<std::filesystem::path>;

// `sluiced run`: runs the pipeline until its sources are exhausted and
// everything is flushed (exit 0), a node fails (exit 1), or SIGINT/SIGTERM asks
// for a graceful stop (sources end, the graph drains, exit 0). SIGHUP reloads
// `config` (see daemon/daemon.hpp). Under systemd it speaks the notify
// protocol; with [admin] it serves the admin endpoint.
// With [checkpoint] the newest checkpoint is restored first (docs/CHECKPOINTING.md);
// `reset_state` names nodes to start fresh ("all": every node). `member` names this daemon
// among those sharing the checkpoint store (docs/SCALING.md; empty: [checkpoint] member).
int run_command(const ConfigPaths& config, const PluginDirs& dirs,
                const std::vector<std::string>& reset_state, const std::string& member = {});

// `sluiced validate`: the config against its plugins, and with `environment` against this
// machine as `run` checks it (files to read, directories to write in); with `create`, also
// every node of every task created and destroyed as `run` would, without starting it.
// `json`: the findings and the result as one JSON object on stdout.
int validate_command(const ConfigPaths& config, const PluginDirs& dirs, bool create,
                     bool environment, bool json);

// `sluiced graph`: the validated graph as Graphviz dot or JSON (`format`).
int graph_command(const ConfigPaths& config, const std::string& format, const PluginDirs& dirs);

// `sluiced plugins`: every loaded plugin with its version, ABI and file, and each node
// type and function with its parameters and docs (text, or JSON for tools:
// docs/CONFIG.md is generated from it). `config` (optional) adds its plugin_dirs. What
// loaded is listed even when some plugin was refused; the exit code says so.
int plugins_command(const std::filesystem::path& config, bool json, const PluginDirs& dirs);

// `sluiced test`: the [[tests]] of `tests_file` (default: the config file that has them) run on
// injected input and a virtual clock; with `case_patterns`, only the cases they name
// (names or globs; one that matches nothing is an error listing the cases).
int test_command(const ConfigPaths& config, const std::filesystem::path& tests_file,
                 const PluginDirs& dirs, const std::vector<std::string>& case_patterns = {});

// `sluiced checkpoints`: the epochs in the pipeline's checkpoint store, with their
// time, positions per source and state size per node (text or JSON).
int checkpoints_command(const ConfigPaths& config, bool json, const PluginDirs& dirs);

// `sluiced plugin-check`: the conformance kit over one plugin file (docs/PLUGIN_GUIDE.md,
// "Checking a plugin"): exit 0 when every check passed or was not exercised, 3 when one
// failed, 2 when the plugin or a config file could not be read.
int plugin_check_command(const PluginCheckOptions& options);

}  // namespace sluice::host
