// The task's side of the checkpoint epoch protocol (docs/CHECKPOINTING.md), Task's
// implementation of EpochParticipant (executor/epoch_participant.hpp): pause sources, ask
// sinks to prepare, wait for their answers while the loop keeps running the sinks' posts, io
// and timers (those of other nodes are held), snapshot, then commit or abort and resume. The
// coordinator (checkpoint/coordinator.cc) drives it through that interface.
#include "common/plugin_call.hpp"
#include "executor/task.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sluice::host {

void Task::begin_checkpoint(uint64_t epoch, bool final, EpochDone done) {
  boost::asio::post(io_, [this, epoch, final, done = std::move(done)]() mutable {
    if (failure_) return;
    if (epoch_) {
      done(epoch, Status(SL_FAILED_PRECONDITION, fmt::format("epoch {} is still running on task {}",
                                                             epoch_->epoch, options_.task_index)));
      return;
    }
    // Not emplace(): clang before 16 judges the nested Epoch not default-constructible
    // inside Task (its member initialisers), which the fuzz build's clang 14 is.
    epoch_ = Epoch{};
    epoch_->epoch = epoch;
    epoch_->final = final;
    epoch_->at_end = end_held_;
    epoch_->done = std::move(done);
    epoch_->asked.assign(nodes_.size(), false);
    std::vector<size_t> sinks;
    for (size_t i : order_) {
      NodeRuntime& n = nodes_[i];
      if (n.role != SL_ROLE_SINK || !n.created || n.ended || !n.vt->checkpoint_prepare) continue;
      epoch_->asked[i] = true;
      ++epoch_->waiting;
      sinks.push_back(i);
    }
    // Sinks without checkpoint_prepare write synchronously: durable when process returned.
    epoch_->in_prepare_loop = true;
    for (size_t i : sinks) {
      NodeRuntime& n = nodes_[i];
      n.error.clear();
      sl_status st = call_plugin(
          n.error, [&] { return n.vt->checkpoint_prepare(n.self, n.ctx.get(), epoch); });
      if (st != SL_OK && epoch_ && epoch_->asked[i]) {
        fail(i, "checkpoint_prepare", st);
        return;
      }
      if (failure_) return;
    }
    epoch_->in_prepare_loop = false;
    maybe_snapshot();
  });
}

void Task::checkpoint_ready(size_t node, uint64_t epoch, sl_status status) {
  if (!epoch_ || epoch_->epoch != epoch || node >= epoch_->asked.size() || !epoch_->asked[node]) {
    spdlog::warn(
        "node '{}': checkpoint_ready for epoch {}, which it was not asked to prepare "
        "(ignored)",
        nodes_[node].id, epoch);
    return;
  }
  epoch_->asked[node] = false;
  if (status != SL_OK) {
    fail(node, "checkpoint_prepare", status);
    return;
  }
  --epoch_->waiting;
  if (!epoch_->in_prepare_loop) maybe_snapshot();
}

void Task::maybe_snapshot() {
  if (!epoch_ || failure_ || epoch_->waiting > 0 || epoch_->snapshotted) return;
  epoch_->snapshotted = true;
  auto states = snapshot_states();
  if (!states.is_ok()) {
    epoch_->done(epoch_->epoch, states.status());
    return;
  }
  epoch_->done(epoch_->epoch, TaskSnapshot{std::move(states).value(), claims_, epoch_->at_end});
}

void Task::end_checkpoint(uint64_t epoch, bool stored, std::function<void()> done) {
  boost::asio::post(io_, [this, epoch, stored, done = std::move(done)] {
    if (failure_ || !epoch_ || epoch_->epoch != epoch) return;
    auto call_all = [&](bool sinks) {
      for (size_t i : order_) {
        NodeRuntime& n = nodes_[i];
        if (!n.created || (n.role == SL_ROLE_SINK) != sinks) continue;
        auto* fn = stored ? n.vt->checkpoint_commit : n.vt->checkpoint_abort;
        if (!fn) continue;
        n.error.clear();
        sl_status st = call_plugin(n.error, [&] { return fn(n.self, n.ctx.get(), epoch); });
        if (st != SL_OK) {
          fail(i, stored ? "checkpoint_commit" : "checkpoint_abort", st);
          return false;
        }
      }
      return true;
    };
    // Sinks first (their transactions hold the output), then sources (offsets).
    if (!call_all(true) || !call_all(false)) return;
    const bool final = epoch_->final;
    const bool at_end = epoch_->at_end;
    auto held = std::move(epoch_->held_timers);
    auto held_callbacks = std::move(epoch_->held_callbacks);
    epoch_.reset();
    if (done) done();
    if (final && !stored) {
      // The checkpoint a restart needs was not written: exit with an error
      // (the restart resumes from the previous checkpoint; nothing is lost).
      failure_ = Status(SL_UNAVAILABLE,
                        fmt::format("task {}: the final checkpoint (epoch {}) was not stored; a "
                                    "restart resumes from the previous one",
                                    options_.task_index, epoch));
      accepting_posts_ = false;
      guard_.reset();
      io_.stop();
      return;
    }
    if (final) {
      stop_after_final_checkpoint();
      // Posted callbacks still run (they may free what their argument owns); every node
      // has ended, so what they emit goes nowhere, and held on_io calls are dropped.
      for (auto& callback : held_callbacks) callback();
      return;
    }
    for (auto& callback : held_callbacks) callback();
    const int64_t now = options_.clock->monotonic_ns();
    for (const auto& [key, timer_id] : held) timers_.arm(key, timer_id, now);
    if (!held.empty()) fire_due_timers(now);
    rearm_wakeup();
    if (at_end) end_held_input(epoch, stored);
    schedule_poll();
    on_state_change();
  });
}

bool Task::hold_end(size_t node) {
  if (!end_reached_ || end_held_ || draining_) return false;
  const bool last = std::all_of(sources_.begin(), sources_.end(),
                                [&](size_t s) { return s == node || nodes_[s].ended; });
  if (!last) return false;
  end_held_ = true;
  spdlog::info("task {}: input ended (source '{}'): a checkpoint of the end comes before the drain",
               options_.task_index, nodes_[node].id);
  end_reached_();
  return true;
}

void Task::end_held_input(uint64_t epoch, bool stored) {
  end_held_ = false;
  end_reached_ = nullptr;  // one hold per run
  if (!stored) {
    spdlog::warn(
        "task {}: checkpoint epoch {} of the end of input was not stored: the input ends "
        "anyway, and a rerun resumes from the previous checkpoint",
        options_.task_index, epoch);
  }
  for (size_t i : sources_) {
    end_node(i);
    if (failure_) return;
  }
}

void Task::stop_after_final_checkpoint() {
  // Like a failure's abort, but the graph is consistent and checkpointed: every
  // node is told to stop; finish() is NOT called (it would emit partial
  // results that the restored state will produce again; see CHECKPOINTING.md).
  for (size_t i : order_) {
    stop_node(nodes_[i]);
    nodes_[i].ended = true;
    timers_.cancel_node(nodes_[i].key);
  }
  spdlog::info("task {}: stopped after the final checkpoint", options_.task_index);
  on_state_change();
}

Result<bool> Task::recover_checkpoint(uint64_t epoch, const NodeStates& states) {
  for (const auto& [id, state] : states) {
    auto index = spec_->index_of(id);
    if (!index) continue;
    NodeRuntime& n = nodes_[*index];
    if (!n.created || !n.vt->checkpoint_recover) continue;
    int32_t committed = 1;
    n.error.clear();
    const sl_value raw = state.raw();  // a structured binding: clang 14 cannot capture it
    sl_status st = call_plugin(n.error, [&] {
      return n.vt->checkpoint_recover(n.self, n.ctx.get(), epoch, raw, &committed);
    });
    if (st != SL_OK) {
      fail(*index, "checkpoint_recover", st);
      return *failure_;
    }
    if (committed == 0) {
      spdlog::warn("node '{}' ({}): the commit of checkpoint epoch {} did not happen", n.id, n.type,
                   epoch);
      return false;
    }
  }
  return true;
}

}  // namespace sluice::host
