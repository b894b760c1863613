#include "pipeline/pipeline_runner.hpp"

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>
#include <numeric>

namespace sluice::host {
namespace {

Status first_failure(std::vector<Status> results) {
  for (Status& st : results) {
    if (!st.is_ok()) return std::move(st);
  }
  return Status::ok();
}

}  // namespace

PipelineRunner::PipelineRunner(const GraphSpec& spec, boost::asio::io_context& control,
                               const Clock& clock, RunnerHooks hooks)
    : spec_(&spec), control_(control), hooks_(std::move(hooks)) {
  const uint32_t count = spec.runtime.tasks;
  for (uint32_t i = 0; i < count; ++i) {
    tasks_.push_back(
        std::make_unique<Task>(spec, TaskOptions{spec.runtime.batch_size, i, count, &clock}));
    liveness_.push_back(std::make_unique<Liveness>());
  }
  results_.resize(count);
}

PipelineRunner::~PipelineRunner() {
  if (!finished_) {
    for (auto& t : tasks_) t->request_stop();
  }
  join();
  tasks_.clear();  // destroy nodes (close files, release plugins' resources) in order
}

void PipelineRunner::start(std::function<void()> on_running,
                           std::function<void(Status)> on_finished) {
  on_running_ = std::move(on_running);
  on_finished_ = std::move(on_finished);
  if (hooks_.before_start) {
    if (Status st = hooks_.before_start(*this); !st.is_ok()) {
      // Nothing ran: report the failure as the graph's outcome.
      finished_ = true;
      if (!results_.empty()) results_[0] = st;
      boost::asio::post(control_, [this, st] {
        if (on_finished_) on_finished_(st);
      });
      return;
    }
  }
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    threads_.emplace_back([this, i] {
      Task& task = *tasks_[i];
      Status status = task.create();
      if (status.is_ok() && hooks_.after_create) status = hooks_.after_create(task, i);
      if (status.is_ok()) status = task.start();
      if (status.is_ok()) {
        boost::asio::post(control_, [this] { on_task_started(); });
        status = task.run();
      }
      boost::asio::post(control_, [this, i, status] { on_task_finished(i, status); });
    });
  }
}

void PipelineRunner::on_task_started() {
  if (++started_count_ == tasks_.size() && !finished_) {
    running_ = true;
    if (on_running_) on_running_();
  }
}

void PipelineRunner::on_task_finished(uint32_t index, Status status) {
  if (hooks_.task_finished) hooks_.task_finished(index, status);
  results_[index] = status;
  liveness_[index]->done = true;
  if (!status.is_ok() && !stopping_) {
    // One failed task stops the others: the pipeline is one unit.
    request_stop();
  }
  if (++finished_count_ < tasks_.size()) return;
  finished_ = true;
  Status first = Status::ok();
  for (const Status& s : results_) {
    if (!s.is_ok()) {
      first = s;
      break;
    }
  }
  if (on_finished_) on_finished_(first);
}

void PipelineRunner::request_stop() {
  if (stopping_) return;
  stopping_ = true;
  if (hooks_.before_stop) hooks_.before_stop(*this);
  if (hooks_.replace_stop && hooks_.replace_stop(*this)) return;
  for (auto& t : tasks_) t->request_stop();
}

bool PipelineRunner::check_liveness() {
  bool live = true;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    Liveness& l = *liveness_[i];
    if (l.done) continue;
    if (l.answered.load(std::memory_order_acquire) != l.sent) {
      live = false;
      continue;  // still waiting for the previous ping: do not pile up more
    }
    uint64_t seq = ++l.sent;
    Liveness* target = &l;
    if (!tasks_[i]->post_host(
            [target, seq] { target->answered.store(seq, std::memory_order_release); })) {
      // The task takes no more posted work: it is finishing and its result is
      // on its way to the control loop.
      target->answered.store(seq, std::memory_order_release);
    }
  }
  return live;
}

std::string PipelineRunner::unresponsive_tasks() const {
  std::string out;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Liveness& l = *liveness_[i];
    if (l.done || l.answered.load(std::memory_order_acquire) == l.sent) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("task {}", i);
    if (const std::string_view node = tasks_[i]->node_in_callback(); !node.empty()) {
      out += fmt::format(" in node '{}'", node);
    }
  }
  return out;
}

Status PipelineRunner::set_source_paused(std::string_view id, bool paused) {
  auto index = spec_->index_of(id);
  if (!index) return Status(SL_NOT_FOUND, fmt::format("no node '{}' in the pipeline", id));
  if (spec_->nodes[*index].role != SL_ROLE_SOURCE) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("node '{}' is not a source", id));
  }
  for (auto& t : tasks_) t->set_source_paused(*index, paused);
  if (paused) {
    paused_.emplace(id);
  } else if (auto it = paused_.find(id); it != paused_.end()) {
    paused_.erase(it);
  }
  return Status::ok();
}

std::vector<Status> PipelineRunner::on_tasks(const std::vector<size_t>& which,
                                             const std::function<Status(Task&, size_t)>& fn) {
  std::vector<std::future<Status>> answers;
  for (size_t index : which) {
    auto promise = std::make_shared<std::promise<Status>>();
    answers.push_back(promise->get_future());
    Task* t = tasks_[index].get();
    if (!t->post_host([t, index, &fn, promise] { promise->set_value(fn(*t, index)); })) {
      promise->set_value(Status(SL_FAILED_PRECONDITION, "a task has finished"));
    }
  }
  // Every answer is awaited, also after a failure: fn is borrowed by the posted handlers.
  std::vector<Status> results;
  results.reserve(answers.size());
  for (auto& answer : answers) results.push_back(answer.get());
  return results;
}

std::vector<size_t> PipelineRunner::every_task() const {
  std::vector<size_t> all(tasks_.size());
  std::iota(all.begin(), all.end(), size_t{0});
  return all;
}

Status PipelineRunner::on_every_task(const std::function<Status(Task&)>& fn) {
  return first_failure(on_tasks(every_task(), [&fn](Task& t, size_t) { return fn(t); }));
}

Status PipelineRunner::prepare_reconfigure(const GraphSpec& next,
                                           const std::vector<std::optional<size_t>>& kept_from,
                                           LiveRefusal& refusal) {
  refusal = LiveRefusal::none;
  if (!running() || stopping_) {
    refusal = LiveRefusal::impossible;
    return Status(SL_FAILED_PRECONDITION, "the graph is not running");
  }
  // Asked of every task before any creates: a create may have effects (a file opened), and
  // a task that refuses would undo the others' work.
  const std::vector<Status> blocked =
      on_tasks(every_task(), [](Task& t, size_t) { return t.reconfigure_blocker(); });
  for (const Status& st : blocked) {
    if (!st.is_ok() && st.code() != SL_UNAVAILABLE) {
      refusal = LiveRefusal::impossible;
      return st;
    }
  }
  for (const Status& st : blocked) {
    if (!st.is_ok()) {
      refusal = LiveRefusal::busy;
      return st;
    }
  }
  Status st = on_every_task([&](Task& t) { return t.prepare_reconfigure(next, kept_from); });
  kept_from_ = kept_from;
  if (!st.is_ok()) {
    // The tasks that prepared undo it; the one that failed already did.
    (void)on_every_task([](Task& t) {
      t.abort_reconfigure();
      return Status::ok();
    });
  }
  return st;
}

Status PipelineRunner::commit_reconfigure(const GraphSpec& next, bool& rolled_back) {
  rolled_back = false;
  const GraphSpec& previous = *spec_;
  std::vector<char> task_rolled_back(tasks_.size(), 0);  // char: each task writes its own
  const std::vector<Status> results = on_tasks(every_task(), [&](Task& t, size_t index) {
    bool back = false;
    Status st = t.commit_reconfigure(back);
    task_rolled_back[index] = back ? 1 : 0;
    return st;
  });
  Status why = Status::ok();
  std::vector<size_t> committed;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].is_ok()) {
      committed.push_back(i);
    } else if (!task_rolled_back[i]) {
      // A failed task ends the graph as any failure does.
      spec_ = &next;
      kept_from_.clear();
      return results[i];
    } else if (why.is_ok()) {
      why = results[i];
    }
  }
  if (why.is_ok()) {
    spec_ = &next;
    forget_pauses_of_new_instances(next, kept_from_);
    kept_from_.clear();
    return Status::ok();
  }

  // A task could not start a new instance and put the previous graph back: the tasks that
  // committed follow it, by a live reload back to the previous graph. If that fails too,
  // the tasks would run different graphs: all of them end (the daemon then starts the
  // previous config afresh).
  std::vector<std::optional<size_t>> kept_back(previous.nodes.size());
  for (size_t j = 0; j < kept_from_.size(); ++j) {
    if (kept_from_[j]) kept_back[*kept_from_[j]] = j;
  }
  kept_from_.clear();
  Status back = first_failure(on_tasks(
      committed, [&](Task& t, size_t) { return t.prepare_reconfigure(previous, kept_back); }));
  if (back.is_ok()) {
    back = first_failure(on_tasks(committed, [](Task& t, size_t) {
      bool again = false;
      return t.commit_reconfigure(again);
    }));
  } else {
    (void)on_tasks(committed, [](Task& t, size_t) {
      t.abort_reconfigure();
      return Status::ok();
    });
  }
  if (!back.is_ok()) {
    Status failed(back.code(), fmt::format("{}; the other tasks could not return to the "
                                           "previous graph: {}",
                                           why.message(), back.message()));
    (void)on_tasks(every_task(), [&failed](Task& t, size_t) {
      t.abandon(failed);
      return Status::ok();
    });
    return failed;
  }
  forget_pauses_of_new_instances(previous, kept_back);
  rolled_back = true;
  return why;
}

void PipelineRunner::forget_pauses_of_new_instances(
    const GraphSpec& now, const std::vector<std::optional<size_t>>& kept_from) {
  // Operator pauses go with the sources a reload kept; a new instance is not paused.
  for (auto it = paused_.begin(); it != paused_.end();) {
    auto index = now.index_of(*it);
    it = index && kept_from[*index] ? std::next(it) : paused_.erase(it);
  }
}

void PipelineRunner::join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace sluice::host
