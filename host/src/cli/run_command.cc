#include "cli/run_command.hpp"

#include "checkpoint/service.hpp"
#include "daemon/daemon.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace sluice::host {

int run_pipeline(LoadedPipeline pipeline, const std::filesystem::path& config,
                 const std::vector<std::filesystem::path>& plugin_dirs,
                 const std::vector<std::string>& reset_state) {
  std::unique_ptr<checkpoint::CheckpointService> checkpoints;
  if (pipeline.spec.checkpoint.enabled) {
    checkpoint::ResetState reset;
    for (const std::string& id : reset_state) {
      if (id == "all") {
        reset.all = true;
      } else {
        reset.nodes.push_back(id);
      }
    }
    auto service = checkpoint::CheckpointService::create(pipeline.spec, std::move(reset));
    if (!service.is_ok()) {
      spdlog::error("{}", service.status().message());
      return k_exit_invalid;
    }
    checkpoints = std::move(service).value();
  } else if (!reset_state.empty()) {
    spdlog::warn("--reset-state has no effect: the pipeline has no [checkpoint] table");
  }
  Daemon daemon(std::move(pipeline), DaemonOptions{config, plugin_dirs});
  if (checkpoints) {
    checkpoints->install(daemon.hooks(), daemon.control());
    daemon.set_extra_metrics([&checkpoints] { return checkpoints->metrics(); });
  }
  // Other subsystems attach here: daemon.hooks() (task creation, stop) and
  // daemon.set_extra_metrics().
  const int exit_code = daemon.run();
  // The coordinator's timer lives on the daemon's control loop: release it before the loop.
  // (Its store keeps the plugins it came from loaded by itself: GraphSpec::registry.)
  checkpoints.reset();
  return exit_code;
}

}  // namespace sluice::host
