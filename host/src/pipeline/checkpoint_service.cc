#include "pipeline/checkpoint_service.hpp"

#include "executor/node_gauges.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace sluice::host {

Result<std::unique_ptr<CheckpointService>> CheckpointService::create(const GraphSpec& spec,
                                                                     checkpoint::ResetState reset,
                                                                     std::string member) {
  std::unique_ptr<CheckpointService> s(new CheckpointService(reset, std::move(member)));
  SLUICE_ASSIGN_OR_RETURN(auto store, checkpoint::open_store(spec));
  s->first_ = std::make_unique<checkpoint::Coordinator>(spec, std::move(store), std::move(reset),
                                                        s->member_of(spec));
  SLUICE_RETURN_IF_ERROR(s->first_->load());
  return s;
}

void CheckpointService::install(RunnerHooks& hooks, boost::asio::io_context& control) {
  control_ = &control;
  hooks.before_start = [this](PipelineRunner& runner) { return before_start(runner); };
  hooks.after_create = [this](Task& task, uint32_t index) {
    task.set_key_group_directory(current_->key_groups());
    return current_->restore_task(&task, index);
  };
  hooks.task_finished = [this](uint32_t index, const Status& status) {
    current_->task_finished(index, status);
  };
  hooks.replace_stop = [this](PipelineRunner& /*runner*/) {
    checkpoint::Coordinator& c = *current_;
    return c.stop_with_final_checkpoint([](Status outcome) {
      if (outcome.is_ok()) {
        spdlog::info("final checkpoint written; the tasks stop without finishing their nodes");
      } else {
        spdlog::error("final checkpoint failed: {}", outcome.message());
      }
    });
  };
}

std::string CheckpointService::metrics() const {
  if (!current_) return {};
  const checkpoint::Coordinator& c = *current_;
  const checkpoint::Coordinator::Stats& s = c.stats();
  const std::string l = fmt::format("{{pipeline=\"{}\"}}", prometheus_label_value(pipeline_));
  const int64_t success_ms = std::max(s.last_success_unix_ms, earlier_success_unix_ms_);
  std::string out = fmt::format(
      "# HELP sluice_checkpoints_total Checkpoints stored and committed by the running graph.\n"
      "# TYPE sluice_checkpoints_total counter\nsluice_checkpoints_total{0} {1}\n"
      "# HELP sluice_checkpoint_failures_total Checkpoint epochs that were aborted.\n"
      "# TYPE sluice_checkpoint_failures_total counter\nsluice_checkpoint_failures_total{0} {2}\n"
      "# HELP sluice_checkpoint_last_duration_seconds Duration of the last checkpoint.\n"
      "# TYPE sluice_checkpoint_last_duration_seconds gauge\n"
      "sluice_checkpoint_last_duration_seconds{0} {3}\n"
      "# HELP sluice_checkpoint_last_bytes Size of the last checkpoint file.\n"
      "# TYPE sluice_checkpoint_last_bytes gauge\nsluice_checkpoint_last_bytes{0} {4}\n"
      "# HELP sluice_checkpoint_last_epoch Epoch of the last completed checkpoint.\n"
      "# TYPE sluice_checkpoint_last_epoch gauge\nsluice_checkpoint_last_epoch{0} {5}\n",
      l, s.completed, s.failed, s.last_duration_ms / 1000.0, s.last_bytes,
      c.last_completed_epoch());
  // Absent until a checkpoint succeeded (in this process): no 0 that reads as 1970.
  if (success_ms > 0) {
    out += fmt::format(
        "# HELP sluice_checkpoint_last_success_timestamp_seconds When the last checkpoint was "
        "stored and committed (Unix time).\n"
        "# TYPE sluice_checkpoint_last_success_timestamp_seconds gauge\n"
        "sluice_checkpoint_last_success_timestamp_seconds{} {:.3f}\n",
        l, static_cast<double>(success_ms) / 1e3);
  }
  return out;
}

Status CheckpointService::before_start(PipelineRunner& runner) {
  std::unique_ptr<checkpoint::Coordinator> c;
  if (first_) {
    c = std::move(first_);
    c->rebind(runner.spec());
  } else {
    // A reload: the old graph has stopped. Its coordinator goes first, closing the old store
    // before the new graph opens its own; the new graph resumes from the checkpoint the old
    // one wrote when it stopped.
    if (current_) {
      earlier_success_unix_ms_ =
          std::max(earlier_success_unix_ms_, current_->stats().last_success_unix_ms);
    }
    current_.reset();
    checkpoint::ResetState none;
    SLUICE_ASSIGN_OR_RETURN(auto store, checkpoint::open_store(runner.spec()));
    c = std::make_unique<checkpoint::Coordinator>(runner.spec(), std::move(store), none,
                                                  member_of(runner.spec()));
    SLUICE_RETURN_IF_ERROR(c->load());
  }
  std::vector<EpochParticipant*> tasks;
  for (const auto& t : runner.tasks()) tasks.push_back(t.get());
  c->attach(*control_, std::move(tasks));
  current_ = std::move(c);
  pipeline_ = runner.spec().name;
  return Status::ok();
}

}  // namespace sluice::host
