#pragma once

#include "cli/pipeline_loader.hpp"

namespace sluice::host {

// `sluiced run`: runs the pipeline's tasks until their sources are exhausted
// and everything is flushed (exit 0), a node fails (exit 1), or SIGINT/SIGTERM
// asks for a graceful stop (sources end, the graph drains, exit 0).
int run_pipeline(const LoadedPipeline& pipeline);

}  // namespace sluice::host
