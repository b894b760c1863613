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
#include "checkpoint/key_group_index.hpp"
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
using TaskSnapshot = EpochParticipant::TaskSnapshot;

// Several daemons (members) share one store (`[checkpoint] member`, docs/SCALING.md): each
// numbers its epochs (seq << k_member_bits) | tag, the tag made from its name, so that
// their epochs never collide and each finds its own.
inline constexpr int k_member_bits = 20;
inline constexpr uint64_t k_member_mask = (uint64_t{1} << k_member_bits) - 1;
// 0 for a pipeline run alone (no member name), else 1 .. k_member_mask.
uint64_t member_tag(std::string_view member);

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
// With `own`, only the epochs it accepts (a member's own).
Result<std::vector<Loaded>> load_newest(StoreHandle& store, size_t how_many,
                                        const std::function<bool(uint64_t)>& own = {});

class Coordinator {
 public:
  // `member`: this daemon's name among those sharing the store (`sluiced run --member`, else
  // [checkpoint] member); empty when it runs the pipeline alone.
  Coordinator(const GraphSpec& spec, std::unique_ptr<StoreHandle> store, ResetState reset,
              std::string member = {});
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

  // Where grouped sources' tasks find their key groups' state (Task::set_key_group_directory);
  // null when no node keeps keyed state. Set by load(); lives as long as the coordinator.
  [[nodiscard]] KeyGroupDirectory* key_groups() const { return index_.get(); }

  [[nodiscard]] uint64_t last_completed_epoch() const { return last_completed_; }
  // For metrics (control thread).
  struct Stats {
    uint64_t completed = 0;  // epochs stored and committed
    uint64_t failed = 0;     // epochs aborted (store write failed, a task failed)
    double last_duration_ms = 0;
    uint64_t last_bytes = 0;
    int64_t last_success_unix_ms = 0;  // wall clock when the last epoch completed; 0: none yet
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
    std::vector<std::optional<TaskSnapshot>> parts;
  };

  void schedule_next();
  void start_epoch(bool final);
  // Task `index` holds its exhausted input (EpochParticipant::hold_end_of_input) until an
  // epoch snapshots it there: one starts now, or right after the running one.
  void on_end_reached(uint32_t index);
  void on_snapshot(uint32_t index, uint64_t epoch, Result<TaskSnapshot> snapshot);
  void on_committed(uint32_t index, uint64_t epoch);
  void maybe_store();
  void maybe_complete();
  void finish_epoch(Status outcome);
  void prune();
  [[nodiscard]] bool own(uint64_t epoch) const {
    return tag_ == 0 || (epoch & k_member_mask) == tag_;
  }
  // Removes from `cp` the key groups another task or member claimed after this one (it lost
  // them, e.g. paused past the session timeout): what it wrote late must not be restored.
  void fence(Checkpoint& cp);
  NodeStates states_for(const Checkpoint& cp, uint32_t index) const;
  Status restore_task_states(EpochParticipant* task, uint32_t index);

  const GraphSpec* spec_;
  std::unique_ptr<StoreHandle> store_;
  std::unique_ptr<KeyGroupIndex> index_;
  ResetState reset_;
  std::string member_;
  uint64_t tag_ = 0;  // member_tag(member_)
  uint64_t next_epoch_ = 1;
  uint64_t epoch_step_ = 1;  // 1, or 1 << k_member_bits for a member
  uint64_t last_completed_ = 0;
  Stats stats_;

  // What load() found.
  std::optional<Checkpoint> restore_;  // newest usable
  bool restore_committed_ = true;
  std::optional<Checkpoint> fallback_;  // used when a node says restore_ was not committed
  bool graph_has_recover_ = false;
  // The checkpoint was taken with another task count: keyed nodes (whose groups come back
  // with their sources' assignments) restore nothing at start.
  bool keyed_by_assignment_only_ = false;

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
  // Tasks holding their ended input, waiting for an epoch to snapshot them there.
  std::set<uint32_t> end_waiting_;
  // By task: its snapshot at its end of input, once stored. Epochs after the task finished
  // carry it (instead of recording the task as finished, which a restart starts fresh): a
  // rerun resumes that task at its end, not at its beginning.
  std::vector<std::optional<TaskSnapshot>> at_end_;
};

}  // namespace sluice::host::checkpoint
