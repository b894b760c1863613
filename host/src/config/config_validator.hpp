// Checking a parsed config against the loaded plugins, producing the
// GraphSpec the executor builds from. Every problem is collected (not just
// the first), each naming file:line:col, the node id and the key, and saying
// what would be valid.
#pragma once

#include "config/config_loader.hpp"
#include "graph/graph_spec.hpp"
#include "registry/plugin_registry.hpp"

#include <filesystem>

namespace sluice::host {

// What validation checks besides the config itself.
struct ValidateOptions {
  // The checks that need this machine (sl_validate_init.environment): `sluiced validate`,
  // `run` and a reload ask for them; `graph` and `test` do not.
  bool environment = false;
};

// Validates `doc` against the node types and functions in `registry`.
// Diagnostics are sorted by position (stable: findings at one place keep the
// order they were made in). Warnings (e.g. an output nothing reads) do not
// make it fail. The load-time expansions (expand_repartitions) must have run on
// `doc` first: load_config and load_pipeline run them; a key_by whose
// repartition_topic was not expanded is an error.
[[nodiscard]] Diagnosed<GraphSpec> validate_config(const ConfigDocument& doc,
                                                   const PluginRegistry& registry,
                                                   ValidateOptions options = {});

// parse_config_file + expand_repartitions + validate_config, for callers whose
// plugins are already registered (tests, tools). sluiced itself loads plugin_dirs
// in between.
[[nodiscard]] Diagnosed<GraphSpec> load_config(const std::filesystem::path& file,
                                               const PluginRegistry& registry);

}  // namespace sluice::host
