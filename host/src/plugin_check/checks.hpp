// The checks of plugin-check, one function per kind; each appends its results to a
// Subject (plugin_check/report.hpp). What a check needs from the author comes in a
// CheckSettings, read from the --config file and the command line.
#pragma once

#include "graph/graph_spec.hpp"
#include "plugin_check/report.hpp"
#include "registry/plugin_registry.hpp"
#include "value/value.hpp"

#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::host::plugin_check {

// [check.TYPE] of the config file, with the command line's defaults filled in.
struct CheckSettings {
  std::optional<std::vector<Value>> input;  // the sequence for the restore check
  std::string readback;                     // shell command printing committed records
  bool exactly_once = false;
  bool int_records = false;  // records are plain ints N instead of {"n": N}
  std::string skip;          // non-empty: the runtime checks are not exercised, for this reason
  int64_t timeout_ms = 120000;
  std::filesystem::path work_dir;  // this subject's own directory
};

// 1. Docs, defaults, flags against callbacks.
void check_declarations(const NodeTypeInfo& type, Subject& out);
void check_declarations(const FunctionInfo& fn, Subject& out);

// 2. Hostile elements through an operator or sink built from `spec`.
void check_hostile_elements(const GraphSpec& spec, const CheckSettings& settings, Subject& out);
// 2. Hostile arguments to a function bound with `args` (an object; null: defaults).
void check_hostile_arguments(std::shared_ptr<const PluginRegistry> registry, const FunctionInfo& fn,
                             const Value& args, const CheckSettings& settings, Subject& out);
// The hostile elements, by name.
struct Hostile {
  std::string name;
  Value value;
};
const std::vector<Hostile>& hostile_elements();

// 3. Snapshot midway, restore into a fresh instance, same output (stateful operators).
void check_restore(const GraphSpec& spec, const CheckSettings& settings, Subject& out);

// 4. Crashes around the checkpoint protocol, recovery, read-back (checkpointing sinks).
void check_crash_recovery(const GraphSpec& spec, const CheckSettings& settings, Subject& out);

// --bad-config: validate or create must refuse `bad` (a config good enough to build from
// is `good`, the node's config with the bad keys over it).
void check_bad_config(const GraphSpec& good, const Value& bad_config,
                      const std::string& validate_refusal, const CheckSettings& settings,
                      Subject& out);

}  // namespace sluice::host::plugin_check
