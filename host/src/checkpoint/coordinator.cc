#include "checkpoint/coordinator.hpp"

#include "graph/topology.hpp"

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

// A keyed node's snapshot ({"groups": {"<g>": state}, ...}) without `lost`.
Value without_groups(const Value& state, const std::vector<uint32_t>& lost) {
  if (!state.is_object()) return state;
  std::vector<std::pair<std::string, Value>> top;
  for (size_t i = 0; i < state.size(); ++i) {
    Value member = state.at(i);
    if (state.key_at(i) == "groups" && member.is_object()) {
      std::vector<std::pair<std::string, Value>> kept;
      for (size_t k = 0; k < member.size(); ++k) {
        const std::string_view name = member.key_at(k);
        const bool gone = std::any_of(lost.begin(), lost.end(),
                                      [&](uint32_t g) { return std::to_string(g) == name; });
        if (!gone) kept.emplace_back(std::string(name), member.at(k));
      }
      member = Value::object(kept);
    }
    top.emplace_back(std::string(state.key_at(i)), std::move(member));
  }
  return Value::object(top);
}

// How long a task thread waits for the others' recovery answers.
constexpr auto k_decision_timeout = std::chrono::seconds(120);

}  // namespace

uint64_t member_tag(std::string_view member) {
  if (member.empty()) return 0;
  uint64_t h = 14695981039346656037ULL;  // FNV-1a
  for (unsigned char c : member) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return 1 + h % k_member_mask;
}

Result<std::unique_ptr<StoreHandle>> open_store(const GraphSpec& spec) {
  const CheckpointSettings& cp = spec.checkpoint;
  if (!cp.store_info) {
    return Status(SL_FAILED_PRECONDITION,
                  fmt::format("checkpoint store '{}' is not registered", cp.store));
  }
  return StoreHandle::open(*cp.store_info, spec.name, cp.options, spec.registry);
}

Result<std::vector<Loaded>> load_newest(StoreHandle& store, size_t how_many,
                                        const std::function<bool(uint64_t)>& own) {
  SLUICE_ASSIGN_OR_RETURN(auto entries, store.list());
  std::vector<Loaded> out;
  for (const EpochEntry& e : entries) {
    if (own && !own(e.epoch)) continue;
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
                         ResetState reset, std::string member)
    : spec_(&spec),
      store_(std::move(store)),
      reset_(std::move(reset)),
      member_(std::move(member)),
      tag_(member_tag(member_)),
      epoch_step_(tag_ == 0 ? 1 : uint64_t{1} << k_member_bits) {}

Coordinator::~Coordinator() {
  if (timer_) timer_->cancel();
}

Status Coordinator::load() {
  SLUICE_ASSIGN_OR_RETURN(auto all, store_->list());
  std::vector<EpochEntry> entries;
  for (const EpochEntry& e : all) {
    if (own(e.epoch)) entries.push_back(e);
  }
  next_epoch_ = tag_ == 0 ? 1 : epoch_step_ | tag_;
  if (!entries.empty()) next_epoch_ = entries.front().epoch + epoch_step_;
  const bool keyed = std::any_of(spec_->nodes.begin(), spec_->nodes.end(), [](const NodeSpec& n) {
    return n.info && (n.info->vtable.flags & SL_NODE_KEYED_STATE) != 0;
  });
  if (keyed) {
    // Grouped sources ask it for their groups' state on each assignment, from their tasks'
    // threads: it has a store handle of its own.
    SLUICE_ASSIGN_OR_RETURN(auto index_store, open_store(*spec_));
    index_ = std::make_unique<KeyGroupIndex>(std::move(index_store));
  }
  if (tag_ != 0) {
    spdlog::info("checkpoint member '{}': {} epoch{} of its own among {} in store '{}'", member_,
                 entries.size(), entries.size() == 1 ? "" : "s", all.size(), store_->name());
  }
  if (reset_.all) {
    spdlog::warn(
        "--reset-state all: every node starts from fresh state; the next checkpoint is "
        "epoch {}",
        next_epoch_);
    return Status::ok();
  }
  SLUICE_ASSIGN_OR_RETURN(auto loaded,
                          load_newest(*store_, 2, [this](uint64_t e) { return own(e); }));
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
  if (newest.checkpoint.member != member_) {
    return Status(
        SL_FAILED_PRECONDITION,
        fmt::format("checkpoint epoch {} in store '{}' was written by member '{}', and "
                    "this daemon is member '{}': the two names share an epoch tag "
                    "(or the pipeline ran before without [checkpoint] member); give "
                    "this member another name",
                    newest.checkpoint.epoch, store_->name(), newest.checkpoint.member, member_));
  }
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
      // Keyed state follows its sources' assignments to whichever task gets the groups;
      // any other state cannot be split or merged.
      bool only_keyed = true;
      for (const TaskState& t : cp->tasks) {
        for (const NodeState& n : t.nodes) {
          const NodeSpec* now = spec_->find(n.id);
          if (!now || !now->info || (now->info->vtable.flags & SL_NODE_KEYED_STATE) == 0) {
            only_keyed = reset(n.id);
          }
          if (!only_keyed) break;
        }
        if (!only_keyed) break;
      }
      if (only_keyed && index_) {
        keyed_by_assignment_only_ = true;
        spdlog::warn(
            "checkpoint epoch {} was taken with {} task{}, the pipeline now runs {}: its keyed "
            "state comes back with the key groups each task is assigned",
            cp->epoch, cp->tasks.size(), cp->tasks.size() == 1 ? "" : "s", spec_->runtime.tasks);
        continue;
      }
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
  if (index >= cp.tasks.size() || keyed_by_assignment_only_) return out;
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
  if (!keyed_by_assignment_only_ && index < cp->tasks.size()) {
    task->restore_claims(cp->tasks[index].claims);
  }
  spdlog::info("task {}: checkpoint epoch {} restored into {} node{} in {:.1f} ms", index,
               cp->epoch, count, count == 1 ? "" : "s", ms(steady_ns() - start));
  return Status::ok();
}

void Coordinator::attach(boost::asio::io_context& control, std::vector<EpochParticipant*> tasks) {
  control_ = &control;
  tasks_ = std::move(tasks);
  live_.assign(tasks_.size(), true);
  at_end_.assign(tasks_.size(), std::nullopt);
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    tasks_[i]->hold_end_of_input([this, i, control = &control] {
      boost::asio::post(*control, [this, i] { on_end_reached(i); });
    });
  }
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

void Coordinator::on_end_reached(uint32_t index) {
  if (index >= live_.size() || !live_[index]) return;
  end_waiting_.insert(index);
  // A stop's final epoch ends the held input itself; after a failure the runner's
  // request_stop does.
  if (running_ || failed_ || final_requested_) return;
  if (timer_) timer_->cancel();
  start_epoch(false);
}

void Coordinator::start_epoch(bool final) {
  running_ = Running{};  // not emplace(): clang 14 misjudges a nested type's default constructor
  Running& r = *running_;
  r.epoch = next_epoch_;
  next_epoch_ += epoch_step_;
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
        epoch, final, [this, i, control](uint64_t e, Result<TaskSnapshot> snapshot) {
          boost::asio::post(*control, [this, i, e, snapshot = std::move(snapshot)]() mutable {
            on_snapshot(i, e, std::move(snapshot));
          });
        });
  }
  maybe_store();
}

void Coordinator::on_snapshot(uint32_t index, uint64_t epoch, Result<TaskSnapshot> snapshot) {
  if (!running_ || running_->epoch != epoch || running_->stored) return;
  if (snapshot.is_ok()) {
    if (snapshot->at_end) end_waiting_.erase(index);
    running_->parts[index] = std::move(snapshot).value();
  } else {
    running_->failed = true;  // the task fails itself; task_finished follows
  }
  running_->waiting.erase(index);
  maybe_store();
}

void Coordinator::task_finished(uint32_t index, const Status& status) {
  if (index < live_.size()) live_[index] = false;
  end_waiting_.erase(index);
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
  cp.member = member_;
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    TaskState t;
    // A task that ended before the epoch: its snapshot at its end of input, else nothing
    // (finished: its input is consumed; a restart starts it fresh).
    const std::optional<TaskSnapshot>& part = r.parts[i] ? r.parts[i] : at_end_[i];
    if (!part) {
      t.finished = true;
    } else {
      for (const auto& [id, state] : part->states) {
        const NodeSpec* n = spec_->find(id);
        t.nodes.push_back(NodeState{id, n ? n->type : std::string(), n ? n->role : 0, state});
      }
      t.claims = part->claims;
    }
    cp.tasks.push_back(std::move(t));
  }
  fence(cp);
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
  for (uint32_t i = 0; i < tasks_.size(); ++i) {
    if (r.parts[i] && r.parts[i]->at_end) at_end_[i] = std::move(r.parts[i]);
  }
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
  stats_.last_success_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
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
  // An entry past `keep` that is still where some key group is restored from stays: the
  // group's new owner may not have checkpointed it yet.
  std::set<uint64_t> holders;
  if (index_) {
    auto view = index_->view();
    if (!view.is_ok()) {
      spdlog::warn("checkpoint retention: {}", view.status().message());
      return;
    }
    for (const auto& [key, h] : view->holder) holders.insert(h.epoch);
  }
  size_t mine = 0;
  for (const EpochEntry& e : *entries) {
    if (!own(e.epoch) || ++mine <= spec_->checkpoint.keep || holders.count(e.epoch) != 0) {
      continue;
    }
    Status st = store_->remove(e.epoch);
    if (!st.is_ok()) spdlog::warn("checkpoint retention: {}", st.message());
  }
}

void Coordinator::fence(Checkpoint& cp) {
  if (!index_) return;
  const bool any = std::any_of(cp.tasks.begin(), cp.tasks.end(),
                               [](const TaskState& t) { return !t.claims.empty(); });
  if (!any) return;
  auto view = index_->view();
  if (!view.is_ok()) {
    // Written unfenced: restore still prefers a higher claim, so a newer owner's entries win.
    spdlog::warn("checkpoint epoch {}: key group claims not checked: {}", cp.epoch,
                 view.status().message());
    return;
  }
  for (TaskState& t : cp.tasks) {
    for (auto& [source, groups] : t.claims) {
      std::vector<uint32_t> lost;
      for (const auto& [group, claim] : groups) {
        auto high = view->highest_claim.find({source, group});
        if (high != view->highest_claim.end() && high->second > claim) lost.push_back(group);
      }
      if (lost.empty()) continue;
      std::set<std::string> keyed;
      const auto index = spec_->index_of(source);
      if (index) {
        for (size_t k : downstream_of(*spec_, *index)) {
          const NodeSpec& n = spec_->nodes[k];
          if (n.info && (n.info->vtable.flags & SL_NODE_KEYED_STATE) != 0) keyed.insert(n.id);
        }
      }
      std::string names;
      for (uint32_t g : lost) {
        groups.erase(g);
        names += fmt::format("{}{}", names.empty() ? "" : ", ", g);
      }
      for (NodeState& n : t.nodes) {
        if (keyed.count(n.id) == 0) continue;
        n.state = without_groups(n.state, lost);
      }
      spdlog::warn(
          "checkpoint epoch {}: key group{} {} of node '{}' {} claimed by another task or "
          "member since this one took {}: left out of this checkpoint (this member lost {}, "
          "e.g. while paused)",
          cp.epoch, lost.size() == 1 ? "" : "s", names, source, lost.size() == 1 ? "was" : "were",
          lost.size() == 1 ? "it" : "them", lost.size() == 1 ? "it" : "them");
    }
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
  if (!end_waiting_.empty() && !failed_) {
    // A task reached its end of input after its snapshot in the epoch that just ended.
    start_epoch(false);
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
