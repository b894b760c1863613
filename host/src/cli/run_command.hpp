#pragma once

#include "cli/pipeline_loader.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host {

// `sluiced run`: runs the pipeline until its sources are exhausted and
// everything is flushed (exit 0), a node fails (exit 1), or SIGINT/SIGTERM asks
// for a graceful stop (sources end, the graph drains, exit 0). SIGHUP reloads
// `config` (see daemon/daemon.hpp). Under systemd it speaks the notify
// protocol; with [admin] it serves the admin endpoint.
// With [checkpoint] the newest checkpoint is restored first (docs/CHECKPOINTING.md);
// `reset_state` names nodes to start fresh ("all": every node).
int run_pipeline(LoadedPipeline pipeline, const std::filesystem::path& config,
                 const std::vector<std::filesystem::path>& plugin_dirs,
                 const std::vector<std::string>& reset_state = {});

}  // namespace sluice::host
