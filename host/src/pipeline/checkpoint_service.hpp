// Checkpointing wired into the daemon (`sluiced run` with [checkpoint]): one
// checkpoint::Coordinator per running graph, attached through the runner's hooks — restore
// after each task's create, periodic epochs while it runs, and a final
// checkpoint instead of the drain when a stop begins (SIGTERM, reload).
#pragma once

#include "checkpoint/coordinator.hpp"
#include "common/result.hpp"
#include "pipeline/pipeline_runner.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>

namespace sluice::host {

class CheckpointService {
 public:
  // Opens the store of `spec` and loads the checkpoint to restore: a saved
  // state the graph cannot use is an error here, before anything runs.
  // `member`: `sluiced run --member` (empty: [checkpoint] member, read at each load).
  static Result<std::unique_ptr<CheckpointService>> create(const GraphSpec& spec,
                                                           checkpoint::ResetState reset,
                                                           std::string member = {});
  // Sets the hooks (for every graph the daemon runs) on the control loop `control`.
  void install(RunnerHooks& hooks, boost::asio::io_context& control);
  // Prometheus text for /metrics (control thread), labelled with the pipeline: checkpoints
  // taken and failed, the last one's duration and size, its epoch, and when the last one
  // succeeded (kept across reloads, so that an age alert does not fire on a reload).
  [[nodiscard]] std::string metrics() const;

 private:
  CheckpointService(checkpoint::ResetState reset, std::string member)
      : reset_(std::move(reset)), member_(std::move(member)) {}
  Status before_start(PipelineRunner& runner);
  [[nodiscard]] std::string member_of(const GraphSpec& spec) const {
    return member_.empty() ? spec.checkpoint.member : member_;
  }

  checkpoint::ResetState reset_;
  std::string member_;
  boost::asio::io_context* control_ = nullptr;
  std::unique_ptr<checkpoint::Coordinator> first_;  // loaded by create(), used by the first graph
  // The running graph's. A reload replaces it once the old graph has stopped, which closes
  // the old store and releases the old graph's plugins (the store holds GraphSpec::registry).
  std::unique_ptr<checkpoint::Coordinator> current_;
  std::string pipeline_;                 // the running graph's name, for the metrics' label
  int64_t earlier_success_unix_ms_ = 0;  // the last success of an earlier graph (before a reload)
};

}  // namespace sluice::host
