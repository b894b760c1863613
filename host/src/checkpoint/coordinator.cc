#include "checkpoint/coordinator.hpp"

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace sluice::host::checkpoint {
namespace {

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// How long a task thread waits for the others' recovery answers.
constexpr auto k_decision_timeout = std::chrono::seconds(120);

}  // namespace

Result<std::unique_ptr<StoreHandle>> open_store(const GraphSpec& spec) {
  const CheckpointSettings& cp = spec.checkpoint;
  if (!cp.store_info) {
    return Status(SL_FAILED_PRECONDITION,
                  fmt::format("checkpoint store '{}' is not registered", cp.store));
  }
  return StoreHandle::open(*cp.store_info, spec.name, cp.options, spec.registry);
}

Result<std::vector<Loaded>> load_newest(StoreHandle& store, size_t how_many) {
  SLUICE_ASSIGN_OR_RETURN(auto entries, store.list());
  std::vector<Loaded> out;
  for (const EpochEntry& e : entries) {
    const int64_t start = steady_ns();
    auto bytes = store.read(e.epoch);
    std::optional<Status> problem;
    if (!bytes.is_ok()) {
      problem = bytes.status();
    } else {
      const int64_t read = steady_ns();
      auto cp = decode_checkpoint(bytes.value());
      if (!cp.is_ok()) {
        problem = cp.status();
      } else if (cp->epoch != e.epoch) {
        problem = Status(SL_DATA_LOSS, fmt::format("the file holds epoch {}", cp->epoch));
      } else {
        out.push_back(Loaded{std::move(cp).value(), e.committed, bytes->size(), ms(read - start),
                             ms(steady_ns() - read)});
      }
    }
    if (problem) {
      spdlog::warn(
          "checkpoint epoch {} in store '{}' is unusable ({}); falling back to the "
          "previous one",
          e.epoch, store.name(), problem->message());
      continue;
    }
    if (out.back().committed || out.size() >= how_many) break;
  }
  return out;
}

Coordinator::Coordinator(const GraphSpec& spec, std::unique_ptr<StoreHandle> store,
                         ResetState reset)
    : spec_(&spec), store_(std::move(store)), reset_(std::move(reset)) {}

Coordinator::~Coordinator() {
  if (timer_) timer_->cancel();
}

Status Coordinator::load() {
  SLUICE_ASSIGN_OR_RETURN(auto entries, store_->list());
  if (!entries.empty()) next_epoch_ = entries.front().epoch + 1;
  if (reset_.all) {
    spdlog::warn(
        "--reset-state all: every node starts from fresh state; the next checkpoint is "
        "epoch {}",
        next_epoch_);
    return Status::ok();
  }
  SLUICE_ASSIGN_OR_RETURN(auto loaded, load_newest(*store_, 2));
  if (loaded.empty()) {
    if (!entries.empty()) {
      spdlog::warn("no usable checkpoint in store '{}' ({} unusable): starting fresh",
                   store_->name(), entries.size());
    } else {
      spdlog::info("no checkpoint in store '{}': starting fresh", store_->name());
    }
    return Status::ok();
  }
  graph_has_recover_ = std::any_of(spec_->nodes.begin(), spec_->nodes.end(), [](const NodeSpec& n) {
    return n.info && n.info->vtable.checkpoint_recover;
  });
  const Loaded& newest = loaded[0];
  const std::string read_note = fmt::format("{} bytes read in {:.1f} ms, decoded in {:.1f} ms",
                                            newest.bytes, newest.read_ms, newest.decode_ms);
  restore_ = std::move(loaded[0].checkpoint);
  // Without a node that can tell, an unconfirmed commit counts as done: the
  // commits of nodes without checkpoint_recover cannot be lost (file sinks).
  restore_committed_ = loaded[0].committed || !graph_has_recover_;
  if (!restore_committed_ && loaded.size() > 1) fallback_ = std::move(loaded[1].checkpoint);

  // Is the saved state usable by this graph?
  std::vector<std::string> problems;
  auto reset = [&](std::string_view id) {
    return std::find(reset_.nodes.begin(), reset_.nodes.end(), id) != reset_.nodes.end();
  };
  for (const Checkpoint* cp : {&*restore_, fallback_ ? &*fallback_ : nullptr}) {
    if (!cp) continue;
    if (cp->tasks.size() != spec_->runtime.tasks) {
      problems.push_back(fmt::format(
          "checkpoint epoch {} was taken with {} task{}, the pipeline now runs {} ([runtime] "
          "tasks): saved state cannot be split or merged",
          cp->epoch, cp->tasks.size(), cp->tasks.size() == 1 ? "" : "s", spec_->runtime.tasks));
      continue;
    }
    std::set<std::string> seen;
    for (const TaskState& t : cp->tasks) {
      for (const NodeState& n : t.nodes) {
        if (reset(n.id) || !seen.insert(n.id).second) continue;
        const NodeSpec* now = spec_->find(n.id);
        if (!now) {
          problems.push_back(
              fmt::format("node '{}' ({}) has saved state in checkpoint epoch {} "
                          "but is no longer in the pipeline",
                          n.id, n.type, cp->epoch));
        } else if (now->type != n.type) {
          problems.push_back(
              fmt::format("node '{}' was of type '{}' in checkpoint epoch {} and "
                          "is now '{}'",
                          n.id, n.type, cp->epoch, now->type));
        }
      }
    }
  }
  if (!problems.empty()) {
    std::string msg = "the saved state does not fit this pipeline:";
    for (const auto& p : problems) msg += "\n  " + p;
    msg +=
        "\nstart the named nodes fresh with --reset-state NODE (repeatable), or everything with "
        "--reset-state all";
    return Status(SL_FAILED_PRECONDITION, std::move(msg));
  }
  for (const std::string& id : reset_.nodes) {
    if (!spec_->find(id) && !restore_->find(0, id)) {
      spdlog::warn("--reset-state {}: no such node in the pipeline or the checkpoint", id);
    } else {
      spdlog::warn("--reset-state {}: the node starts from fresh state", id);
    }
  }
  spdlog::info("restoring checkpoint epoch {} from store '{}' ({}){}", restore_->epoch,
               store_->name(), read_note,
               restore_committed_ ? "" : " (its commit was not confirmed: asking the nodes)");
  return Status::ok();
}

NodeStates Coordinator::states_for(const Checkpoint& cp, uint32_t index) const {
  NodeStates out;
  if (index >= cp.tasks.size()) return out;
  for (const NodeState& n : cp.tasks[index].nodes) {
    if (std::find(reset_.nodes.begin(), reset_.nodes.end(), n.id) != reset_.nodes.end()) continue;
    const NodeSpec* now = spec_->find(n.id);
    if (!now || now->type != n.type) continue;  // load() refused these unless reset
    out.emplace_back(n.id, n.state);
  }
  return out;
}

Status Coordinator::restore_task(EpochParticipant* task, uint32_t index) {
  if (!restore_) return Status::ok();
  Status st = restore_task_states(task, index);
  std::lock_guard lock(mutex_);
  if (++restored_ == spec_->runtime.tasks) {
    // Every task has read what it needs (each reads before it counts here).
    restore_.reset();
    fallback_.reset();
  }
  return st;
}

Status Coordinator::restore_task_states(EpochParticipant* task, uint32_t index) {
  bool use_fallback = false;
  if (!restore_committed_) {
    Result<bool> mine = true;
    if (task) mine = task->recover_checkpoint(restore_->epoch, states_for(*restore_, index));
    std::unique_lock lock(mutex_);
    if (!mine.is_ok() || !mine.value()) use_fallback_ = true;
    ++answers_;
    decided_cv_.notify_all();
    if (!decided_cv_.wait_for(lock, k_decision_timeout,
                              [&] { return answers_ >= spec_->runtime.tasks; })) {
      return Status(SL_UNAVAILABLE, "checkpoint recovery: not every task answered within 120 s");
    }
    use_fallback = use_fallback_;
    if (!mine.is_ok()) return mine.status();
  }
  if (!task) return Status::ok();
  const Checkpoint* cp = &*restore_;
  if (use_fallback) {
    cp = fallback_ ? &*fallback_ : nullptr;
    if (index == 0) {
      spdlog::warn("checkpoint epoch {} was not committed: restoring {}", restore_->epoch,
                   cp ? fmt::format("epoch {}", cp->epoch) : std::string("fresh state"));
    }
    if (!cp) return Status::ok();
  }
  const int64_t start = steady_ns();
  NodeStates states = states_for(*cp, index);
  const size_t count = states.size();
  SLUICE_RETURN_IF_ERROR(task->restore_states(states));
  spdlog::info("task {}: checkpoint epoch {} restored into {} node{} in {:.1f} ms", index,
               cp->epoch, count, count == 1 ? "" : "s", ms(steady_ns() - start));
  return Status::ok();
}

void Coordinator::attach(boost::asio::io_context& control, std::vector<EpochParticipant*> tasks) {
  control_ = &control;
  tasks_ = std::move(tasks);
  live_.assign(tasks_.size(), true);
  timer_ = std::make_unique<boost::asio::steady_timer>(control);
  schedule_next();
}

void Coordinator::schedule_next() {
  if (!timer_ || failed_ || final_requested_) return;
  timer_->expires_after(std::chrono::milliseconds(spec_->checkpoint.interval_ms));
  timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) trigger();
  });
}

void Coordinator::trigger() {
  if (running_ || failed_ || final_requested_ || tasks_.empty()) return;
  start_epoch(false);
}

void Coordinator::start_epoch(bool final) {
  running_ = Running{};  // not emplace(): clang 14 misjudges a nested type's default constructor
  Running& r = *running_;
  r.epoch = next_epoch_++;
  r.final = final;
  r.started_ns = steady_ns();
  r.parts.resize(tasks_.size());
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    if (live_[i]) r.waiting.insert(i);
  }
  const uint64_t epoch = r.epoch;
  boost::asio::io_context* control = control_;
  for (uint32_t i : std::set<uint32_t>(r.waiting)) {
    tasks_[i]->begin_checkpoint(
        epoch, final, [this, i, control](uint64_t e, Result<NodeStates> states) {
          boost::asio::post(*control, [this, i, e, states = std::move(states)]() mutable {
            on_snapshot(i, e, std::move(states));
          });
        });
  }
  maybe_store();
}

void Coordinator::on_snapshot(uint32_t index, uint64_t epoch, Result<NodeStates> states) {
  if (!running_ || running_->epoch != epoch || running_->stored) return;
  if (states.is_ok()) {
    running_->parts[index] = std::move(states).value();
  } else {
    running_->failed = true;  // the task fails itself; task_finished follows
  }
  running_->waiting.erase(index);
  maybe_store();
}

void Coordinator::task_finished(uint32_t index, const Status& status) {
  if (index < live_.size()) live_[index] = false;
  if (!status.is_ok()) failed_ = true;
  if (running_ && running_->waiting.erase(index) != 0) {
    if (!status.is_ok()) running_->failed = true;
    if (running_->stored) {
      maybe_complete();
    } else {
      maybe_store();
    }
  }
}

void Coordinator::maybe_store() {
  if (!running_ || running_->stored || !running_->waiting.empty()) return;
  Running& r = *running_;
  auto abort_epoch = [&](Status why) {
    for (uint32_t i = 0; i < tasks_.size(); ++i) {
      if (live_[i]) tasks_[i]->end_checkpoint(r.epoch, false, {});
    }
    finish_epoch(std::move(why));
  };
  if (r.failed || failed_) {
    abort_epoch(
        Status(SL_CANCELLED, fmt::format("checkpoint epoch {} abandoned: a task failed", r.epoch)));
    return;
  }
  r.snapshot_done_ns = steady_ns();
  Checkpoint cp;
  cp.epoch = r.epoch;
  cp.time_ns = wall_ns();
  cp.pipeline = spec_->name;
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    TaskState t;
    if (!r.parts[i]) {
      t.finished = true;  // ended before the epoch: its input is consumed
    } else {
      for (auto& [id, state] : *r.parts[i]) {
        const NodeSpec* n = spec_->find(id);
        t.nodes.push_back(NodeState{id, n ? n->type : std::string(), n ? n->role : 0, state});
      }
    }
    cp.tasks.push_back(std::move(t));
  }
  const std::string bytes = encode_checkpoint(cp);
  r.encoded_ns = steady_ns();
  r.bytes = bytes.size();
  Status st = store_->write(r.epoch, bytes);
  r.stored_ns = steady_ns();
  if (!st.is_ok()) {
    spdlog::error("checkpoint epoch {} was not stored: {}; a restart uses {}", r.epoch,
                  st.message(),
                  last_completed_ ? fmt::format("epoch {}", last_completed_)
                                  : std::string("the newest earlier checkpoint"));
    abort_epoch(std::move(st));
    return;
  }
  r.stored = true;
  const uint64_t epoch = r.epoch;
  boost::asio::io_context* control = control_;
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    if (!live_[i]) continue;
    r.waiting.insert(i);
    tasks_[i]->end_checkpoint(epoch, true, [this, i, epoch, control] {
      boost::asio::post(*control, [this, i, epoch] { on_committed(i, epoch); });
    });
  }
  maybe_complete();
}

void Coordinator::on_committed(uint32_t index, uint64_t epoch) {
  if (!running_ || running_->epoch != epoch) return;
  running_->waiting.erase(index);
  maybe_complete();
}

void Coordinator::maybe_complete() {
  if (!running_ || !running_->stored || !running_->waiting.empty()) return;
  Running& r = *running_;
  if (!r.failed && !failed_) {
    Status st = store_->mark_committed(r.epoch);
    if (!st.is_ok()) {
      spdlog::warn("{} (a restart asks the nodes whether epoch {} was committed)", st.message(),
                   r.epoch);
    }
  }
  last_completed_ = r.epoch;
  const int64_t end = steady_ns();
  ++stats_.completed;
  stats_.last_duration_ms = ms(end - r.started_ns);
  stats_.last_bytes = r.bytes;
  spdlog::info(
      "checkpoint epoch {}{}: {} bytes in {:.1f} ms (prepare+snapshot {:.1f} ms, encode {:.1f} "
      "ms, store {:.1f} ms, commit {:.1f} ms)",
      r.epoch, r.final ? " (final)" : "", r.bytes, ms(end - r.started_ns),
      ms(r.snapshot_done_ns - r.started_ns), ms(r.encoded_ns - r.snapshot_done_ns),
      ms(r.stored_ns - r.encoded_ns), ms(end - r.stored_ns));
  prune();
  finish_epoch(Status::ok());
}

void Coordinator::prune() {
  auto entries = store_->list();
  if (!entries.is_ok()) {
    spdlog::warn("checkpoint retention: {}", entries.status().message());
    return;
  }
  for (size_t k = spec_->checkpoint.keep; k < entries->size(); ++k) {
    Status st = store_->remove((*entries)[k].epoch);
    if (!st.is_ok()) spdlog::warn("checkpoint retention: {}", st.message());
  }
}

void Coordinator::finish_epoch(Status outcome) {
  if (!outcome.is_ok()) ++stats_.failed;
  const bool final = running_->final;
  running_.reset();
  if (final || (final_requested_ && failed_)) {
    if (final_done_) {
      auto done = std::move(*final_done_);
      final_done_.reset();
      done(outcome.is_ok() || final ? std::move(outcome) : Status(SL_CANCELLED, "a task failed"));
    }
    return;
  }
  if (final_requested_) {
    start_epoch(true);
    return;
  }
  schedule_next();
}

bool Coordinator::stop_with_final_checkpoint(std::function<void(Status)> done) {
  if (failed_ || final_requested_ ||
      std::none_of(live_.begin(), live_.end(), [](bool b) { return b; })) {
    return false;
  }
  final_requested_ = true;
  final_done_ = std::move(done);
  if (timer_) timer_->cancel();
  if (!running_) start_epoch(true);
  return true;
}

}  // namespace sluice::host::checkpoint
