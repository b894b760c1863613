// The first step of every command that reads a pipeline: load it (config, plugins,
// validation) and print each finding to stderr, one line each.
#pragma once

#include "config/diagnostic.hpp"
#include "pipeline/pipeline_loader.hpp"

#include <filesystem>
#include <optional>
#include <vector>

namespace sluice::host {

// Prints each finding's one-line form to stderr.
void print_diagnostics(const std::vector<Diagnostic>& diagnostics);

enum class ReportTo {
  stderr_lines,  // the tools (validate, graph, ...): plain lines
  log,           // the service (run): log records
};

// load_pipeline, its findings reported; nullopt when any was an error. `config`: files and
// config directories, merged.
std::optional<LoadedPipeline> load_and_report(const std::vector<std::filesystem::path>& config,
                                              const std::vector<std::filesystem::path>& dirs,
                                              ReportTo to = ReportTo::stderr_lines,
                                              ValidateOptions options = {});

// How the config is named in messages: its path, or the paths joined with ", ".
std::string config_display_name(const std::vector<std::filesystem::path>& config);

// The file that holds the [[tests]] of a loaded config (several files merge into one
// document); empty when none does.
std::filesystem::path tests_file_of(const LoadedPipeline& pipeline);

}  // namespace sluice::host
