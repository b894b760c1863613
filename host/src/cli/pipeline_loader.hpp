// What every sluiced command does first: read the config, load the plugins it
// names (plus SLUICE_PLUGIN_PATH and the install default), and validate the
// graph against them, printing every finding on the way.
#pragma once

#include "config/config_loader.hpp"
#include "config/graph_spec.hpp"
#include "registry/plugin_registry.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::host {

// Exit codes of sluiced (docs/OPERATIONS.md lists them).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_runtime_error = 1;  // the pipeline failed while running
inline constexpr int k_exit_invalid = 2;        // bad config, bad plugins, bad test file
inline constexpr int k_exit_tests_failed = 3;   // `sluiced test`: a case did not match

// One graph generation: its config and its spec, which owns the plugins it was loaded with
// (GraphSpec::registry).
struct LoadedPipeline {
  std::optional<ConfigDocument> document;
  GraphSpec spec;
};

// A `plugin_dirs` entry of the config and where it is written.
struct PluginDirOrigin {
  std::filesystem::path dir;
  SourcePos pos;
};

// Loads plugins from `extra_dirs` + env + default into a new registry. Problems
// are printed to stderr, at the config's file:line:col when they come from a directory
// listed in `origins`; returns nullptr when any plugin was refused.
std::unique_ptr<PluginRegistry> load_plugins(const std::vector<std::filesystem::path>& dirs,
                                             bool print_problems = true,
                                             const std::vector<PluginDirOrigin>& origins = {});

// Config + plugins + validation. Prints diagnostics (errors and warnings) to
// stderr. Returns nullopt when anything was an error. `strip_tests` removes a
// top-level [[tests]] array first (the pipeline-test format may live in the config).
std::optional<LoadedPipeline> load_pipeline(const std::filesystem::path& config,
                                            const std::vector<std::filesystem::path>& extra_dirs,
                                            bool strip_tests = false);

}  // namespace sluice::host
