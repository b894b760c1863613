#include "pipeline/live_reload.hpp"

#include "registry/plugin_registry.hpp"

#include <fmt/format.h>

namespace sluice::host {

namespace {

bool same_inputs(const NodeSpec& a, const NodeSpec& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    const InputRef& x = a.inputs[k];
    const InputRef& y = b.inputs[k];
    if (x.node != y.node || x.port != y.port || x.side != y.side) return false;
  }
  return true;
}

// The same code: a plugin replaced on disk and loaded anew by the reload has other callbacks,
// and its instances must be created by it.
bool same_code(const sl_node_type& a, const sl_node_type& b) {
  return a.create == b.create && a.destroy == b.destroy && a.process == b.process &&
         a.poll == b.poll && a.finish == b.finish;
}

// A node whose state or transaction is in every checkpoint epoch: a stateful node with a
// snapshot, a sink that prepares and commits, a keyed node. Replacing one in place would
// lose what the last checkpoint recorded for it (or its open transaction).
bool in_checkpoints(const sl_node_type& t) {
  return ((t.flags & SL_NODE_STATEFUL) != 0 && t.snapshot != nullptr) ||
         t.checkpoint_prepare != nullptr || t.checkpoint_commit != nullptr ||
         t.checkpoint_abort != nullptr || t.checkpoint_recover != nullptr ||
         t.restore_group != nullptr || t.drop_group != nullptr;
}

bool same_checkpointing(const CheckpointSettings& a, const CheckpointSettings& b) {
  if (a.enabled != b.enabled) return false;
  return !a.enabled || (a.store == b.store && a.interval_ms == b.interval_ms && a.keep == b.keep &&
                        a.member == b.member && a.options == b.options);
}

bool keeps(const NodeSpec& running, const NodeSpec& next) {
  return running.type == next.type && running.role == next.role &&
         running.on_error == next.on_error && running.generated_by == next.generated_by &&
         same_inputs(running, next) && same_code(running.info->vtable, next.info->vtable) &&
         running.config == next.config;
}

}  // namespace

std::optional<LiveReloadPlan> plan_live_reload(const GraphSpec& running, const GraphSpec& next,
                                               std::string* why_not) {
  auto no = [&](std::string why) -> std::optional<LiveReloadPlan> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (!same_checkpointing(running.checkpoint, next.checkpoint)) {
    return no("[checkpoint] changed");
  }
  if (running.name != next.name) return no("the pipeline's name changed");
  if (running.runtime.tasks != next.runtime.tasks) return no("[runtime] tasks changed");
  if (running.runtime.batch_size != next.runtime.batch_size) {
    return no("[runtime] batch_size changed");
  }
  LiveReloadPlan plan;
  plan.kept_from.resize(next.nodes.size());
  std::vector<bool> kept(running.nodes.size(), false);
  for (size_t j = 0; j < next.nodes.size(); ++j) {
    const NodeSpec& n = next.nodes[j];
    auto i = running.index_of(n.id);
    if (i && keeps(running.nodes[*i], n)) {
      plan.kept_from[j] = *i;
      kept[*i] = true;
      ++plan.kept;
    } else {
      plan.started.push_back(n.id);
    }
  }
  for (size_t i = 0; i < running.nodes.size(); ++i) {
    if (!kept[i]) plan.retired.push_back(running.nodes[i].id);
  }
  if (next.checkpoint.enabled) {
    // What checkpoints record must stay with its instance: the nodes that change are those
    // that keep nothing in a checkpoint.
    for (size_t i = 0; i < running.nodes.size(); ++i) {
      if (!kept[i] && in_checkpoints(running.nodes[i].info->vtable)) {
        return no(
            fmt::format("node '{}' keeps checkpointed state and changes (its state moves "
                        "through the checkpoint store)",
                        running.nodes[i].id));
      }
    }
    for (size_t j = 0; j < next.nodes.size(); ++j) {
      if (!plan.kept_from[j] && in_checkpoints(next.nodes[j].info->vtable)) {
        return no(
            fmt::format("the new node '{}' keeps checkpointed state (it starts from the "
                        "checkpoint store)",
                        next.nodes[j].id));
      }
    }
  }
  return plan;
}

}  // namespace sluice::host
