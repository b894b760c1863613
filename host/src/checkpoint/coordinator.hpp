// The checkpoint coordinator (docs/CHECKPOINTING.md): restores the newest
// usable checkpoint at start, runs an epoch on every task each interval,
// gathers the tasks' snapshots, writes them to the store, has the tasks commit,
// and on SIGTERM takes a final checkpoint before the tasks stop.
//
// Threading: load() on the main thread before the tasks run; restore_task() on
// each task's thread (after create, before start); everything else on the
// control thread (the daemon's io_context), one call at a time.
#pragma once

#include "checkpoint/format.hpp"
#include "checkpoint/store.hpp"
#include "common/result.hpp"
#include "executor/epoch_participant.hpp"
#include "graph/graph_spec.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sluice::host::checkpoint {

using NodeStates = EpochParticipant::NodeStates;

// --reset-state: start these nodes (or all) from fresh state.
struct ResetState {
  bool all = false;
  std::vector<std::string> nodes;
};

// Opens the store named by spec.checkpoint.
Result<std::unique_ptr<StoreHandle>> open_store(const GraphSpec& spec);

// The newest checkpoint of a store that decodes (a corrupt or truncated newer
// one is skipped with a warning), and whether it was confirmed committed.
struct Loaded {
  Checkpoint checkpoint;
  bool committed = false;
  uint64_t bytes = 0;    // size of the stored checkpoint
  double read_ms = 0;    // store read
  double decode_ms = 0;  // check + decode_checkpoint
};
// Newest first: the newest usable checkpoint and, when it is not committed, the
// usable one before it (the fallback of checkpoint_recover).
Result<std::vector<Loaded>> load_newest(StoreHandle& store, size_t how_many);

class Coordinator {
 public:
  Coordinator(const GraphSpec& spec, std::unique_ptr<StoreHandle> store, ResetState reset);
  ~Coordinator();  // stops the timer; the store closes with the object
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // Main thread, before the tasks are created: finds the checkpoint to restore
  // and checks that the graph can use it (a node removed or of another type,
  // another task count: an error naming --reset-state).
  Status load();
  // Task thread, after create() and before start(): recovery decision (see
  // sl_node_type.checkpoint_recover), then restore_states. With `task` null
  // (its create failed) it only takes part in the decision.
  Status restore_task(EpochParticipant* task, uint32_t index);

  // -- control thread --------------------------------------------------------
  // The same graph at a new address (the daemon moved the loaded pipeline).
  void rebind(const GraphSpec& spec) { spec_ = &spec; }
  // Starts the periodic epochs on `tasks` (index = task index).
  void attach(boost::asio::io_context& control, std::vector<EpochParticipant*> tasks);
  // Starts an epoch now unless one is running (tests, and the timer).
  void trigger();
  // Task `index`'s run() returned.
  void task_finished(uint32_t index, const Status& status);
  // SIGTERM: a final epoch (after the running one), after which the tasks stop
  // without finishing their nodes. `done` receives the outcome. Returns false
  // (and does nothing) when no final checkpoint is possible: a task failed or
  // none runs; the caller then drains as without checkpointing.
  bool stop_with_final_checkpoint(std::function<void(Status)> done);

  [[nodiscard]] uint64_t last_completed_epoch() const { return last_completed_; }
  // For metrics (control thread).
  struct Stats {
    uint64_t completed = 0;  // epochs stored and committed
    uint64_t failed = 0;     // epochs aborted (store write failed, a task failed)
    double last_duration_ms = 0;
    uint64_t last_bytes = 0;
  };
  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] bool epoch_running() const { return running_.has_value(); }

 private:
  struct Running {
    uint64_t epoch = 0;
    bool final = false;
    bool failed = false;
    bool stored = false;
    int64_t started_ns = 0;
    int64_t snapshot_done_ns = 0;
    int64_t encoded_ns = 0;
    int64_t stored_ns = 0;
    size_t bytes = 0;
    std::set<uint32_t> waiting;  // tasks whose snapshot / commit is outstanding
    std::vector<std::optional<NodeStates>> parts;
  };

  void schedule_next();
  void start_epoch(bool final);
  void on_snapshot(uint32_t index, uint64_t epoch, Result<NodeStates> states);
  void on_committed(uint32_t index, uint64_t epoch);
  void maybe_store();
  void maybe_complete();
  void finish_epoch(Status outcome);
  void prune();
  NodeStates states_for(const Checkpoint& cp, uint32_t index) const;
  Status restore_task_states(EpochParticipant* task, uint32_t index);

  const GraphSpec* spec_;
  std::unique_ptr<StoreHandle> store_;
  ResetState reset_;
  uint64_t next_epoch_ = 1;
  uint64_t last_completed_ = 0;
  Stats stats_;

  // What load() found.
  std::optional<Checkpoint> restore_;  // newest usable
  bool restore_committed_ = true;
  std::optional<Checkpoint> fallback_;  // used when a node says restore_ was not committed
  bool graph_has_recover_ = false;

  // The recovery decision across task threads.
  std::mutex mutex_;
  std::condition_variable decided_cv_;
  uint32_t answers_ = 0;
  bool use_fallback_ = false;
  // Tasks done with restore_task. The last one drops restore_ and fallback_: the
  // restored nodes then hold the only references to their state (a count_by
  // object can be updated in place instead of copied), and the memory is freed.
  uint32_t restored_ = 0;

  boost::asio::io_context* control_ = nullptr;
  std::unique_ptr<boost::asio::steady_timer> timer_;
  std::vector<EpochParticipant*> tasks_;
  std::vector<bool> live_;
  bool failed_ = false;  // a task failed: no more epochs
  std::optional<Running> running_;
  std::optional<std::function<void(Status)>> final_done_;
  bool final_requested_ = false;
};

}  // namespace sluice::host::checkpoint
