// Live reload on a task (docs/OPERATIONS.md, "Reload"): a new graph replaces the running
// one while the nodes it keeps go on running, with their state, files and connections.
// The new instances are created first, so that a node that cannot be created leaves the
// running graph untouched; only then are the replaced nodes finished and destroyed.
#include "executor/task.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace sluice::host {

std::string Task::reconfigure_blocker() const {
  if (reconfigure_) return "a live reload is already prepared";
  if (failure_) return "the task has failed";
  if (draining_) return "the task is stopping";
  if (epoch_ || end_held_) return "a checkpoint is in progress";
  if (nodes_.size() != spec_->nodes.size()) return "the task runs in test mode";
  for (const NodeRuntime& n : nodes_) {
    // An ended node has told its readers so; a fresh producer could not undo that.
    if (n.ended) return fmt::format("node '{}' has ended", n.id);
  }
  return {};
}

Status Task::prepare_reconfigure(const GraphSpec& next,
                                 std::vector<std::optional<size_t>> kept_from) {
  if (std::string why = reconfigure_blocker(); !why.empty()) {
    return Status(SL_FAILED_PRECONDITION, std::move(why));
  }
  if (kept_from.size() != next.nodes.size()) {
    return Status(SL_INVALID_ARGUMENT, "the reload plan does not fit the new graph");
  }

  Reconfigure r;
  r.next = &next;
  r.kept_from = std::move(kept_from);
  r.fresh_at.assign(next.nodes.size(), k_retired);
  r.first_fresh = nodes_.size();
  reconfigure_ = std::move(r);
  // Named functions of the new instances bind in the new graph's plugins.
  earlier_registries_.push_back(registry_);
  registry_ = next.registry;

  for (size_t j : next.topo_order) {
    if (reconfigure_->kept_from[j]) continue;
    const size_t index = nodes_.size();
    NodeRuntime& n = nodes_.emplace_back();
    init_runtime(n, next, j);
    // Until commit the new instance lives past the running table: its host calls (set_error,
    // timers, posts) address it there.
    *n.ctx = {this, index};
    n.key = index_of_key_.size();
    index_of_key_.push_back(index);
    reconfigure_->fresh_at[j] = index;

    const sl_node_init init = node_init(n, next);
    void* self = nullptr;
    // Not invoke(): a node that cannot be created refuses the reload, it does not fail the
    // running task.
    const sl_status status = call_guarded(index, [&] { return n.vt->create(&init, &self); });
    if (status != SL_OK) {
      Status refused(
          status, fmt::format("node '{}' ({}): create failed: {}: {}", n.id, n.type,
                              sl_status_name(status), n.error.empty() ? "(no message)" : n.error));
      abort_reconfigure();
      return refused;
    }
    nodes_[index].self = self;
    nodes_[index].created = true;
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
  const size_t first = reconfigure_->first_fresh;
  for (size_t i = nodes_.size(); i-- > first;) {
    NodeRuntime& n = nodes_[i];
    if (n.created && n.vt->destroy) call_guarded(i, [&] { return (n.vt->destroy(n.self), SL_OK); });
    n.created = false;
    retire_context(n);
  }
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(first), nodes_.end());
  registry_ = earlier_registries_.back();
  earlier_registries_.pop_back();
  reconfigure_.reset();
}

Status Task::commit_reconfigure() {
  if (!reconfigure_) return Status(SL_FAILED_PRECONDITION, "no live reload is prepared");
  if (failure_) {
    abort_reconfigure();
    return *failure_;
  }
  Reconfigure r = std::move(*reconfigure_);
  reconfigure_.reset();
  const GraphSpec& next = *r.next;

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
    timers_.cancel_node(n.key);
    io_watches_.cancel_node(n.key);
  }
  // 2. ... and are destroyed (readers before producers, as at the end of a task).
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    NodeRuntime& n = nodes_[*it];
    if (kept[*it] || !n.created) continue;
    if (n.vt->destroy) call_guarded(*it, [&] { return (n.vt->destroy(n.self), SL_OK); });
    n.created = false;
  }
  // 3. The new table, in the new graph's order: kept instances and new ones move in.
  std::vector<NodeRuntime> table;
  table.reserve(next.nodes.size() + 8);
  for (size_t j = 0; j < next.nodes.size(); ++j) {
    const size_t from = r.kept_from[j] ? *r.kept_from[j] : r.fresh_at[j];
    NodeRuntime& n = table.emplace_back(std::move(nodes_[from]));
    n.ctx->node = j;
    index_of_key_[n.key] = j;
  }
  for (size_t i = 0; i < r.first_fresh; ++i) {
    if (!kept[i]) retire_context(nodes_[i]);
  }
  nodes_ = std::move(table);
  spec_ = &next;
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
  // 4. The new instances start, producers first.
  for (size_t j : order_) {
    if (r.kept_from[j]) continue;
    NodeRuntime& n = nodes_[j];
    if (n.vt->start &&
        invoke(j, "start", [&] { return n.vt->start(n.self, n.ctx.get()); }) != SL_OK) {
      return *failure_;
    }
  }
  const auto kept_count = static_cast<size_t>(std::count_if(
      r.kept_from.begin(), r.kept_from.end(), [](const auto& from) { return from.has_value(); }));
  spdlog::info("task {}: live reload: kept {} node(s), retired {}, started {}", options_.task_index,
               kept_count, retired, next.nodes.size() - kept_count);
  schedule_poll();
  rearm_wakeup();
  on_state_change();
  return Status::ok();
}

}  // namespace sluice::host
