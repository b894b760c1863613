// `sluiced run CONFIG [--reset-state NODE] [--member NAME]`: the daemon, with checkpointing
// attached when the pipeline has [checkpoint].
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "daemon/daemon.hpp"
#include "daemon/log_redaction.hpp"
#include "daemon/logging.hpp"
#include "pipeline/checkpoint_service.hpp"

#include <spdlog/spdlog.h>

#include <memory>

namespace sluice::host {

int run_command(const ConfigPaths& config, const PluginDirs& dirs,
                const std::vector<std::string>& reset_state, const std::string& member) {
  if (!member.empty()) {
    if (auto problem = member_name_problem(member)) {
      spdlog::error("--member '{}': {}", member, *problem);
      return k_exit_invalid;
    }
  }
  // The machine is checked too (files to read, directories to write in): a problem is a
  // config error with its file:line:col before anything starts. As a service, config
  // errors are log records (level error: a journald priority).
  auto pipeline =
      load_and_report(config, dirs, ReportTo::log, ValidateOptions{.environment = true});
  if (!pipeline) return k_exit_invalid;
  set_log_pipeline(pipeline->spec.name);
  // From here on, no log line shows a secret of the config (a plugin's error quoting it).
  set_log_secrets(pipeline->spec.secrets);
  std::unique_ptr<CheckpointService> checkpoints;
  if (pipeline->spec.checkpoint.enabled) {
    checkpoint::ResetState reset;
    for (const std::string& id : reset_state) {
      if (id == "all") {
        reset.all = true;
      } else {
        reset.nodes.push_back(id);
      }
    }
    auto service = CheckpointService::create(pipeline->spec, std::move(reset), member);
    if (!service.is_ok()) {
      spdlog::error("{}", service.status().message());
      return k_exit_invalid;
    }
    checkpoints = std::move(service).value();
  } else {
    if (!reset_state.empty()) {
      spdlog::warn("--reset-state has no effect: the pipeline has no [checkpoint] table");
    }
    if (!member.empty()) {
      spdlog::warn("--member has no effect: the pipeline has no [checkpoint] table");
    }
  }
  Daemon daemon(std::move(*pipeline), DaemonOptions{config, dirs, k_exit_runtime_error});
  if (checkpoints) {
    checkpoints->install(daemon.hooks(), daemon.control());
    daemon.set_extra_metrics([&checkpoints] { return checkpoints->metrics(); });
  }
  // Other subsystems attach here: daemon.hooks() (task creation, stop) and
  // daemon.set_extra_metrics().
  const Status outcome = daemon.run();
  // The coordinator's timer lives on the daemon's control loop: release it before the loop.
  // (Its store keeps the plugins it came from loaded by itself: GraphSpec::registry.)
  checkpoints.reset();
  return outcome.is_ok() ? k_exit_ok : k_exit_runtime_error;
}

}  // namespace sluice::host
