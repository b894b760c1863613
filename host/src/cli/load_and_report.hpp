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

// load_pipeline, its findings printed; nullopt when any was an error.
std::optional<LoadedPipeline> load_and_report(const std::filesystem::path& config,
                                              const std::vector<std::filesystem::path>& dirs,
                                              ValidateOptions options = {});

}  // namespace sluice::host
