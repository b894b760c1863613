// Live reload on a task (docs/OPERATIONS.md, "Reload"): a new graph replaces the running
// one while the nodes it keeps go on running, with their state, files and connections.
// The new instances are created first, so that a node that cannot be created leaves the
// running graph untouched; only then are the replaced nodes finished and destroyed. A new
// instance that cannot start puts the previous graph back in place (roll_back_reconfigure).
#include "executor/task.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace sluice::host {

Status Task::reconfigure_blocker() const {
  auto impossible = [](std::string why) { return Status(SL_FAILED_PRECONDITION, std::move(why)); };
  if (reconfigure_) return impossible("a live reload is already prepared");
  if (failure_) return impossible("the task has failed");
  if (draining_) return impossible("the task is stopping");
  if (end_held_) return impossible("the task holds its exhausted input for a last checkpoint");
  if (nodes_.size() != spec_->nodes.size()) return impossible("the task runs in test mode");
  for (const NodeRuntime& n : nodes_) {
    // An ended node has told its readers so; a fresh producer could not undo that.
    if (n.ended) return impossible(fmt::format("node '{}' has ended", n.id));
  }
  // The node table must not change under an epoch: its sinks prepare and its states are
  // snapshotted. Epochs are short; the caller tries again.
  if (epoch_) return Status(SL_UNAVAILABLE, "a checkpoint is in progress");
  return Status::ok();
}

Status Task::create_instances(const GraphSpec& spec,
                              const std::vector<std::optional<size_t>>& kept_from,
                              std::vector<size_t>& fresh_at) {
  fresh_at.assign(spec.nodes.size(), k_retired);
  for (size_t j : spec.topo_order) {
    if (kept_from[j]) continue;
    const size_t index = nodes_.size();
    NodeRuntime& n = nodes_.emplace_back();
    init_runtime(n, spec, j);
    // Until the table is installed the new instance lives past its end: its host calls
    // (set_error, timers, posts) address it there.
    *n.ctx = {this, index};
    n.key = index_of_key_.size();
    index_of_key_.push_back(index);
    fresh_at[j] = index;

    const sl_node_init init = node_init(n, spec);
    void* self = nullptr;
    // Not invoke(): a node that cannot be created is the caller's to report.
    const sl_status status = call_guarded(index, [&] { return n.vt->create(&init, &self); });
    if (status != SL_OK) {
      return Status(
          status, fmt::format("node '{}' ({}): create failed: {}: {}", n.id, n.type,
                              sl_status_name(status), n.error.empty() ? "(no message)" : n.error));
    }
    nodes_[index].self = self;
    nodes_[index].created = true;
  }
  return Status::ok();
}

void Task::drop_instances_from(size_t first) {
  for (size_t i = nodes_.size(); i-- > first;) {
    destroy_node(i);
    retire_context(nodes_[i]);
  }
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(first), nodes_.end());
}

Status Task::prepare_reconfigure(const GraphSpec& next,
                                 std::vector<std::optional<size_t>> kept_from) {
  if (Status blocked = reconfigure_blocker(); !blocked.is_ok()) return blocked;
  if (kept_from.size() != next.nodes.size()) {
    return Status(SL_INVALID_ARGUMENT, "the reload plan does not fit the new graph");
  }

  Reconfigure r;
  r.next = &next;
  r.kept_from = std::move(kept_from);
  r.first_fresh = nodes_.size();
  reconfigure_ = std::move(r);
  // Named functions of the new instances bind in the new graph's plugins.
  earlier_registries_.push_back(registry_);
  registry_ = next.registry;
  // A node that cannot be created refuses the reload; it does not fail the running task.
  if (Status st = create_instances(next, reconfigure_->kept_from, reconfigure_->fresh_at);
      !st.is_ok()) {
    abort_reconfigure();
    return st;
  }
  return Status::ok();
}

void Task::retire_context(NodeRuntime& n) {
  n.ctx->node = k_retired;
  index_of_key_[n.key] = k_retired;
  timers_.cancel_node(n.key);
  io_watches_.cancel_node(n.key);
  retired_contexts_.push_back(std::move(n.ctx));
}

void Task::abort_reconfigure() {
  if (!reconfigure_) return;
  drop_instances_from(reconfigure_->first_fresh);
  registry_ = earlier_registries_.back();
  earlier_registries_.pop_back();
  reconfigure_.reset();
}

void Task::install_table(const GraphSpec& spec, const std::vector<size_t>& from) {
  std::vector<bool> moved(nodes_.size(), false);
  std::vector<NodeRuntime> table;
  table.reserve(spec.nodes.size() + 8);
  for (size_t j = 0; j < spec.nodes.size(); ++j) {
    moved[from[j]] = true;
    NodeRuntime& n = table.emplace_back(std::move(nodes_[from[j]]));
    n.ctx->node = j;
    index_of_key_[n.key] = j;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!moved[i]) retire_context(nodes_[i]);
  }
  nodes_ = std::move(table);
  spec_ = &spec;
  wire();
  next_source_ = 0;
  keyed_reach_.clear();
  assigned_once_.clear();
  // Back-pressure is recounted from what the nodes say now, over the new edges: a replaced
  // node's signal went with it.
  for (size_t src : sources_) {
    nodes_[src].paused = 0;
    nodes_[src].counters->held.store(0, std::memory_order_relaxed);
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].backpressured) {
      for (size_t src : upstream_sources(i)) hold_source(src, true);
    }
    for (uint32_t k = 0; k < nodes_[i].input_full.size(); ++k) {
      if (!nodes_[i].input_full[k]) continue;
      for (size_t src : input_only_sources(i)[k]) hold_source(src, true);
    }
  }
}

Status Task::commit_reconfigure(bool& rolled_back) {
  rolled_back = false;
  if (!reconfigure_) return Status(SL_FAILED_PRECONDITION, "no live reload is prepared");
  if (failure_) {
    abort_reconfigure();
    return *failure_;
  }
  Reconfigure r = std::move(*reconfigure_);
  reconfigure_.reset();
  const GraphSpec& next = *r.next;
  const GraphSpec& previous = *spec_;

  std::vector<bool> kept(r.first_fresh, false);
  for (const auto& from : r.kept_from) {
    if (from) kept[*from] = true;
  }
  size_t retired = 0;
  // 1. The replaced nodes finish in topological order, through the old wiring: what a
  //    replaced operator still holds reaches its readers (kept ones included), as in a drain.
  //    Their readers are not told that an input ended: a kept reader goes on.
  for (size_t i : order_) {
    if (kept[i]) continue;
    ++retired;
    NodeRuntime& n = nodes_[i];
    if (n.vt->finish &&
        invoke(i, "finish", [&] { return n.vt->finish(n.self, n.ctx.get()); }) != SL_OK) {
      return *failure_;
    }
    n.ended = true;
  }
  // 2. ... and are destroyed (readers before producers, as at the end of a task).
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    if (!kept[*it]) destroy_node(*it);
  }
  // 3. The new table, in the new graph's order: kept instances and new ones move in (the
  //    replaced nodes' contexts retire: their timers and io watches go).
  std::vector<size_t> from(next.nodes.size());
  for (size_t j = 0; j < next.nodes.size(); ++j) {
    from[j] = r.kept_from[j] ? *r.kept_from[j] : r.fresh_at[j];
  }
  install_table(next, from);
  // 4. The new instances start, producers first. One that cannot start (a port another
  //    process holds, ...) puts the previous graph back in place.
  for (size_t j : order_) {
    if (r.kept_from[j]) continue;
    NodeRuntime& n = nodes_[j];
    if (!n.vt->start) continue;
    const sl_status status = call_guarded(j, [&] { return n.vt->start(n.self, n.ctx.get()); });
    if (status == SL_OK || status == SL_CANCELLED) continue;
    n.counters->errors.fetch_add(1, std::memory_order_relaxed);
    Status why(status,
               fmt::format("node '{}' ({}): start failed: {}: {}", n.id, n.type,
                           sl_status_name(status), n.error.empty() ? "(no message)" : n.error));
    Status st = roll_back_reconfigure(previous, r.kept_from, std::move(why));
    rolled_back = !failure_;  // else the previous graph could not come back: the task failed
    return st;
  }
  const auto kept_count = static_cast<size_t>(std::count_if(
      r.kept_from.begin(), r.kept_from.end(), [](const auto& f) { return f.has_value(); }));
  spdlog::info("task {}: live reload: kept {} node(s), retired {}, started {}", options_.task_index,
               kept_count, retired, next.nodes.size() - kept_count);
  resume_after_reconfigure();
  return Status::ok();
}

Status Task::roll_back_reconfigure(const GraphSpec& previous,
                                   const std::vector<std::optional<size_t>>& kept_from,
                                   Status why) {
  // The new instances have not run yet (this runs in the same task-thread step as their
  // start: nothing polled or fed them): they are stopped, as after a failure, and destroyed.
  // The nodes they replaced come back as fresh instances of the previous spec (what those
  // held was finished in step 1, as a successful reload would have done); the kept nodes,
  // with their state, files and connections, never notice.
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    if (kept_from[*it]) continue;
    stop_node(nodes_[*it]);
    destroy_node(*it);
  }
  registry_ = earlier_registries_.back();
  earlier_registries_.pop_back();

  std::vector<std::optional<size_t>> kept_back(previous.nodes.size());
  for (size_t j = 0; j < kept_from.size(); ++j) {
    if (kept_from[j]) kept_back[*kept_from[j]] = j;
  }
  const size_t first = nodes_.size();
  std::vector<size_t> fresh_at;
  if (Status st = create_instances(previous, kept_back, fresh_at); !st.is_ok()) {
    drop_instances_from(first);
    abandon(Status(st.code(), fmt::format("{}; and the previous graph cannot come back: {}",
                                          why.message(), st.message())));
    return *failure_;
  }
  std::vector<size_t> from(previous.nodes.size());
  for (size_t i = 0; i < previous.nodes.size(); ++i) {
    from[i] = kept_back[i] ? *kept_back[i] : fresh_at[i];
  }
  install_table(previous, from);
  for (size_t i : order_) {
    if (kept_back[i]) continue;
    NodeRuntime& n = nodes_[i];
    if (n.vt->start &&
        invoke(i, "start", [&] { return n.vt->start(n.self, n.ctx.get()); }) != SL_OK && failure_) {
      return *failure_;
    }
  }
  spdlog::warn("task {}: live reload rolled back in place: {}", options_.task_index, why.message());
  resume_after_reconfigure();
  return why;
}

void Task::resume_after_reconfigure() {
  schedule_poll();
  rearm_wakeup();
  on_state_change();
}

}  // namespace sluice::host
