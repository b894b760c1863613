// `sluiced plugin-check FILE.so`: the conformance kit for one plugin (docs/PLUGIN_GUIDE.md,
// "Checking a plugin"). It loads the file through the real registry (trust checks
// included) and checks, for every node type and function it declares: the declarations
// (docs, defaults, flags against callbacks), hostile elements and arguments (no crash, no
// escaped exception, every failure a status with a message), snapshot -> restore -> same
// output for stateful operators, and for sinks that take part in checkpoints, the epoch
// protocol with a real crash (a child process killed at injected points) followed by a
// recovery and the author's read-back (nothing lost; nothing doubled when exactly-once).
// Every exercise runs in a forked child, so a crash is a finding, not the kit's end.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host {

struct PluginCheckOptions {
  std::filesystem::path plugin;      // the one plugin file to check
  std::filesystem::path config;      // optional: [TYPE] params, [functions.NAME] args, [check.TYPE]
  std::filesystem::path bad_config;  // optional: [TYPE] params that validate or create must refuse
  std::string readback;              // shell command printing a sink's committed records
  bool exactly_once = false;         // every checkpointing sink claims exactly-once
  std::filesystem::path work_dir;    // where sinks write (default: a fresh directory in /tmp)
  int64_t timeout_ms = 120000;       // per child process
  std::vector<std::string> only;     // check only these node types / functions
};

// Runs the checks, prints the report to stdout, returns the exit code: 0 when nothing
// failed, 3 when a check failed, 2 when the plugin or a config could not be loaded.
int run_plugin_check(const PluginCheckOptions& options);

}  // namespace sluice::host
