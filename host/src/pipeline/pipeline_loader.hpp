// What every sluiced command does first: read the config, load the plugins it
// names (plus SLUICE_PLUGIN_PATH and the install default), and validate the
// graph against them. Every finding is returned, not printed: the CLI prints them
// to stderr, a reload logs them.
#pragma once

#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "config/diagnostic.hpp"
#include "graph/graph_spec.hpp"
#include "registry/plugin_registry.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::host {

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

// Loads plugins from `dirs` + env + default into a new registry. A plugin that was
// refused is an error, at the config's file:line:col when it comes from a directory
// listed in `origins` ("error: plugin: ..." otherwise); there is no registry then.
[[nodiscard]] Diagnosed<std::unique_ptr<PluginRegistry>> load_plugins(
    const std::vector<std::filesystem::path>& dirs,
    const std::vector<PluginDirOrigin>& origins = {});

// Config + plugins + `${VAR}` interpolation and secrets (config/config_values.hpp) +
// load-time expansions (key_by's repartition_topic, config/repartition_expansion.hpp) +
// validation, with every finding (errors and warnings) in the order found, none quoting a
// secret. No value when anything was an error. A top-level [[tests]] array (pipeline tests,
// docs/TESTING.md) is accepted and left to `sluiced test`. `configs`: files and config
// directories, merged (parse_config_files); read from disk on every call (a reload).
[[nodiscard]] Diagnosed<LoadedPipeline> load_pipeline(
    const std::vector<std::filesystem::path>& configs,
    const std::vector<std::filesystem::path>& extra_dirs, ValidateOptions options = {});
[[nodiscard]] inline Diagnosed<LoadedPipeline> load_pipeline(
    const std::filesystem::path& config, const std::vector<std::filesystem::path>& extra_dirs,
    ValidateOptions options = {}) {
  return load_pipeline(std::vector<std::filesystem::path>{config}, extra_dirs, options);
}

}  // namespace sluice::host
