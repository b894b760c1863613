// Key groups that move with their partitions (docs/SCALING.md): a partitioned source tells
// its task which key groups it was assigned or lost (sl_host_api.key_groups_assigned /
// key_groups_revoked); the task hands every keyed node downstream of that source
// (SL_NODE_KEYED_STATE) each assigned group's state from the checkpoint directory, or has
// them drop the lost ones, and keeps its claims for the next checkpoint.
#include "executor/task.hpp"
#include "graph/topology.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace sluice::host {

const std::vector<size_t>& Task::keyed_reach(size_t source) {
  auto found = keyed_reach_.find(source);
  if (found != keyed_reach_.end()) return found->second;
  // The keyed nodes among those the source feeds (itself included). Task node indices are
  // the spec's (capture nodes come after them and keep no state).
  std::vector<size_t> keyed;
  for (size_t i : downstream_of(*spec_, source)) {
    const NodeRuntime& n = nodes_[i];
    if (n.created && (n.vt->flags & SL_NODE_KEYED_STATE) != 0 && n.vt->restore_group != nullptr &&
        n.vt->drop_group != nullptr) {
      keyed.push_back(i);
    }
  }
  return keyed_reach_.emplace(source, std::move(keyed)).first->second;
}

sl_status Task::call_restore_group(size_t node, uint32_t group, const Value* state) {
  NodeRuntime& n = nodes_[node];
  const sl_value raw = state ? state->raw() : sl_null();
  return invoke(node, "restore_group",
                [&] { return n.vt->restore_group(n.self, n.ctx.get(), group, raw); });
}

sl_status Task::call_drop_group(size_t node, uint32_t group) {
  NodeRuntime& n = nodes_[node];
  return invoke(node, "drop_group", [&] { return n.vt->drop_group(n.self, n.ctx.get(), group); });
}

sl_status Task::key_groups_assigned(size_t source, std::span<const uint32_t> groups) {
  if (key_groups_ == nullptr || failure_) return SL_OK;
  NodeRuntime& src = nodes_[source];
  const auto started = std::chrono::steady_clock::now();
  const std::vector<size_t>& keyed = keyed_reach(source);
  std::vector<KeyGroupDirectory::KeyedNode> names;
  names.reserve(keyed.size());
  for (size_t k : keyed) names.push_back({nodes_[k].id, nodes_[k].type});
  auto found = key_groups_->claim(options_.task_index, src.id, groups, names);
  if (!found.is_ok()) {
    src.error = fmt::format("key groups: {}", found.status().message());
    return found.status().code();
  }
  std::map<uint32_t, uint64_t>& mine = claims_[src.id];
  if (assigned_once_.insert(source).second) {
    // The first assignment says which of the groups restored at start are still ours: the
    // others moved while the pipeline was down.
    for (auto it = mine.begin(); it != mine.end();) {
      if (std::find(groups.begin(), groups.end(), it->first) != groups.end()) {
        ++it;
        continue;
      }
      for (size_t k : keyed) {
        if (call_drop_group(k, it->first) != SL_OK) return SL_INTERNAL;
      }
      it = mine.erase(it);
    }
  }
  std::string restored;
  for (uint32_t g : groups) {
    const KeyGroupDirectory::GroupState& gs = found.value()[g];
    if (gs.epoch != 0) {
      // A node without state for the group in that checkpoint starts it empty: what it may
      // hold (from the checkpoint restored at start) is older.
      for (size_t k : keyed) {
        const Value* state = nullptr;
        for (const auto& [id, value] : gs.states) {
          if (id == nodes_[k].id) state = &value;
        }
        if (call_restore_group(k, g, state) != SL_OK) return SL_INTERNAL;
      }
      restored += fmt::format("{}{} (epoch {}{}, claim {})", restored.empty() ? "" : ", ", g,
                              gs.epoch, gs.member.empty() ? "" : " of " + gs.member, gs.claim);
    } else {
      restored += fmt::format("{}{} (new, claim {})", restored.empty() ? "" : ", ", g, gs.claim);
    }
    mine[g] = gs.claim;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  spdlog::info(
      "task {}: node '{}' was assigned key groups {}; restored into {} keyed node{} in "
      "{:.1f} ms",
      options_.task_index, src.id, restored, keyed.size(), keyed.size() == 1 ? "" : "s", ms);
  return SL_OK;
}

sl_status Task::key_groups_revoked(size_t source, std::span<const uint32_t> groups) {
  if (key_groups_ == nullptr || failure_) return SL_OK;
  NodeRuntime& src = nodes_[source];
  const std::vector<size_t>& keyed = keyed_reach(source);
  std::map<uint32_t, uint64_t>& mine = claims_[src.id];
  std::string names;
  for (uint32_t g : groups) {
    for (size_t k : keyed) {
      if (call_drop_group(k, g) != SL_OK) return SL_INTERNAL;
    }
    mine.erase(g);
    names += fmt::format("{}{}", names.empty() ? "" : ", ", g);
  }
  spdlog::info("task {}: node '{}' lost key groups {}; the next owner restores them",
               options_.task_index, src.id, names);
  return SL_OK;
}

}  // namespace sluice::host
