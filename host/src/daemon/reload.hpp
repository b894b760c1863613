// SIGHUP: read and validate the config again before anything changes. The
// daemon swaps graphs only with a candidate from here; a rejected config
// leaves the running graph alone.
#pragma once

#include "pipeline/pipeline_loader.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace sluice::host {

struct ReloadCandidate {
  std::unique_ptr<LoadedPipeline> pipeline;  // null when rejected
  std::string rejected;                      // why, for the log and STATUS=
};

// Loads `config` (files and config directories, read again: a new file in a directory is
// part of it) with its plugins and validates it as `sluiced validate` does (each finding is
// logged). The new config's secrets are redacted in the log from then on. Settings that a reload
// cannot change ([admin]) are compared with `running` and a difference is a warning.
[[nodiscard]] ReloadCandidate prepare_reload(const std::vector<std::filesystem::path>& config,
                                             const std::vector<std::filesystem::path>& plugin_dirs,
                                             const GraphSpec& running);

}  // namespace sluice::host
