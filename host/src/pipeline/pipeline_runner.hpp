// One running generation of a pipeline: its tasks, each on its own executor
// thread, reporting back to the daemon's control loop (an io_context on the
// main thread). A reload replaces the runner; a running graph never changes.
//
// Threading: every member function is for the control thread unless noted.
// The tasks' counters may be read there while the tasks run (relaxed atomics,
// see NodeCounters).
#pragma once

#include "common/result.hpp"
#include "executor/clock.hpp"
#include "executor/task.hpp"
#include "graph/graph_spec.hpp"

#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace sluice::host {

class PipelineRunner;

// Extension points for the daemon's other subsystems (checkpointing).
struct RunnerHooks {
  // On task `index`'s thread, after create() and before start(): restore saved
  // state here. A failure fails that task as a failed create would.
  std::function<Status(Task& task, uint32_t index)> after_create;
  // On the control thread when a stop begins (signal, reload, a failed task),
  // before the sources are ended.
  std::function<void(PipelineRunner& runner)> before_stop;
  // Checkpointing (pipeline/checkpoint_service.hpp). On the control thread in start(),
  // before the task threads exist: a failure ends the graph before it runs.
  std::function<Status(PipelineRunner& runner)> before_start;
  // On the control thread when task `index`'s run() returned.
  std::function<void(uint32_t index, const Status& status)> task_finished;
  // On the control thread when a stop begins, after before_stop: returning true
  // means the hook stops the tasks itself (a final checkpoint, then the tasks
  // stop without draining) instead of ending the sources.
  std::function<bool(PipelineRunner& runner)> replace_stop;
};

class PipelineRunner {
 public:
  // `spec` must outlive the runner. Tasks are constructed here, started by start().
  PipelineRunner(const GraphSpec& spec, boost::asio::io_context& control, const Clock& clock,
                 RunnerHooks hooks = {});
  ~PipelineRunner();  // requests a stop if needed and joins the threads
  PipelineRunner(const PipelineRunner&) = delete;
  PipelineRunner& operator=(const PipelineRunner&) = delete;

  // Starts one thread per task. `on_running` is called (control thread) once
  // every task has started; `on_finished` once every task has ended, with the
  // first failure or OK. Either may be called after the other never was (a task
  // that fails to create means the graph never ran).
  void start(std::function<void()> on_running, std::function<void(Status)> on_finished);
  // Ends the sources and drains the graph. Idempotent.
  void request_stop();

  [[nodiscard]] bool stopping() const { return stopping_; }
  [[nodiscard]] bool running() const { return running_ && !finished_; }
  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] const GraphSpec& spec() const { return *spec_; }
  [[nodiscard]] const std::vector<std::unique_ptr<Task>>& tasks() const { return tasks_; }
  [[nodiscard]] const std::vector<Status>& results() const { return results_; }

  // Executor liveness, for the systemd watchdog: true when every task still
  // running answered the previous ping; then sends the next ping. A task stuck
  // in a callback never answers, so the watchdog pings stop.
  bool check_liveness();
  // The tasks that have not answered a ping, each with the node whose callback
  // it is in ("task 0 in node 'parse'"), joined by ", "; empty when all answered.
  [[nodiscard]] std::string unresponsive_tasks() const;

  // An operator's pause / resume of a source (every task's instance of it).
  Status set_source_paused(std::string_view id, bool paused);
  [[nodiscard]] bool source_paused(std::string_view id) const {
    return paused_.find(std::string(id)) != paused_.end();
  }

  // Live reload (Task::prepare_reconfigure): every task creates `next`'s new instances,
  // then (commit) retires the nodes not kept and starts the new ones. Each blocks the
  // control thread until every task answered, so that nothing reads the tasks' node tables
  // while they change. A failed prepare has undone itself on every task; after a commit the
  // runner runs `next`, which must outlive it, as must the spec it replaced. When a task
  // cannot start a new instance it puts the previous graph back in place, and the tasks
  // that had committed follow it: `rolled_back` is set, the status says why, and the
  // runner runs the previous graph again (its kept nodes never stopped). Any other commit
  // failure fails its task, which ends the graph as any failure does.
  // `refusal` says why when no task failed a create but the graph cannot change in place
  // now (Task::reconfigure_blocker).
  enum class LiveRefusal {
    none,
    busy,        // a checkpoint epoch runs: try again once it ended
    impossible,  // a node has ended, the graph stops, ...: drain and restart instead
  };
  Status prepare_reconfigure(const GraphSpec& next,
                             const std::vector<std::optional<size_t>>& kept_from,
                             LiveRefusal& refusal);
  Status commit_reconfigure(const GraphSpec& next, bool& rolled_back);

  // Joins the task threads (after on_finished).
  void join();

 private:
  struct Liveness {
    std::atomic<uint64_t> answered{0};
    uint64_t sent = 0;
    bool done = false;  // the task's run() returned
  };

  void on_task_started();
  // Runs `fn` on the threads of the tasks `which` (indexes) and waits for all (control
  // thread): their answers, in that order.
  std::vector<Status> on_tasks(const std::vector<size_t>& which,
                               const std::function<Status(Task&, size_t)>& fn);
  [[nodiscard]] std::vector<size_t> every_task() const;  // 0 ... task count - 1
  // The same on every task: the first failure.
  Status on_every_task(const std::function<Status(Task&)>& fn);
  // Drops the operator pauses of sources that are new instances in `now`.
  void forget_pauses_of_new_instances(const GraphSpec& now,
                                      const std::vector<std::optional<size_t>>& kept_from);
  void on_task_finished(uint32_t index, Status status);

  const GraphSpec* spec_;  // a live reload replaces it
  boost::asio::io_context& control_;
  RunnerHooks hooks_;
  std::vector<std::unique_ptr<Task>> tasks_;
  std::vector<std::unique_ptr<Liveness>> liveness_;
  std::vector<std::thread> threads_;
  std::vector<Status> results_;
  std::function<void()> on_running_;
  std::function<void(Status)> on_finished_;
  std::set<std::string, std::less<>> paused_;
  std::vector<std::optional<size_t>> kept_from_;  // the prepared live reload's plan
  uint32_t started_count_ = 0;
  uint32_t finished_count_ = 0;
  bool stopping_ = false;
  bool running_ = false;
  bool finished_ = false;
};

}  // namespace sluice::host
