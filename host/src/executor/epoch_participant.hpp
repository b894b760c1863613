// The task's side of the checkpoint epoch protocol (docs/CHECKPOINTING.md), as the
// checkpoint coordinator sees it. Task implements it (executor/task_epoch.cc); the
// coordinator (checkpoint/coordinator.hpp) knows tasks only through this interface, so the
// checkpoint module depends on the executor and never the other way round.
#pragma once

#include "common/result.hpp"
#include "value/value.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host {

class EpochParticipant {
 public:
  // The state of every stateful node (SL_NODE_STATEFUL with a snapshot callback), by node id.
  using NodeStates = std::vector<std::pair<std::string, Value>>;
  // The key groups a task owns, per grouped source (a node that called
  // key_groups_assigned): source id -> key group -> claim number (docs/SCALING.md).
  using GroupClaims = std::map<std::string, std::map<uint32_t, uint64_t>>;
  struct TaskSnapshot {
    NodeStates states;
    GroupClaims claims;
    // Taken while the task held its exhausted input (hold_end_of_input): the task's end.
    bool at_end = false;
  };
  using EpochDone = std::function<void(uint64_t epoch, Result<TaskSnapshot> snapshot)>;

  // Thread-safe: starts `epoch` between two polls: sources pause, sinks are asked to
  // prepare; once all answered, `done` runs on the task thread with the snapshot. Not run
  // at all when the task has stopped.
  virtual void begin_checkpoint(uint64_t epoch, bool final, EpochDone done) = 0;
  // Thread-safe: the epoch was stored (commit: sinks, then the others) or not (abort);
  // `done` then runs on the task thread (not when the task failed). Sources resume; after a
  // final epoch the nodes are stopped (not finished) and the task's run() returns.
  virtual void end_checkpoint(uint64_t epoch, bool stored, std::function<void()> done) = 0;
  // Task thread, after the nodes were created and before restore_states(): asks nodes with
  // checkpoint_recover whether their commit of `epoch` happened. False when one says it
  // did not.
  virtual Result<bool> recover_checkpoint(uint64_t epoch, const NodeStates& states) = 0;
  // Task thread, after the nodes were created and before they start: hands each node its
  // saved state.
  virtual Status restore_states(const NodeStates& states) = 0;
  // Task thread, with restore_states: the key groups the restored task part owned. A grouped
  // source's first assignment drops those of them it does not name.
  virtual void restore_claims(const GroupClaims& claims) = 0;
  // Before the task runs: when its last source is exhausted, the task does not end it at
  // once but calls `reached` (task thread) and keeps running posts, timers and epochs. The
  // first epoch it snapshots from there (TaskSnapshot::at_end) ends the input when the
  // epoch ends, stored or aborted: the sources end and the graph drains (finish) as without
  // checkpoints. So a bounded run leaves a checkpoint of its end of input, taken before
  // finish as a stop's final checkpoint is, and a rerun resumes there instead of replaying
  // the input's tail (docs/CHECKPOINTING.md). A stop (request_stop, or a final epoch) ends
  // a held input as it ends a running one.
  virtual void hold_end_of_input(std::function<void()> reached) = 0;

 protected:
  EpochParticipant() = default;
  ~EpochParticipant() = default;  // not owned through this interface
  EpochParticipant(const EpochParticipant&) = default;
  EpochParticipant& operator=(const EpochParticipant&) = default;
};

}  // namespace sluice::host
