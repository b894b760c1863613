// Which nodes a reload can keep running (docs/OPERATIONS.md, "Reload"). A node keeps its
// instance, with its state, files and connections, when the new config declares it as the
// running one was: the same id, type, plugin code, config, error policy and inputs (the
// same ids and ports, in the same order). Its producers may change: a kept reader goes on
// reading from their new instances.
#pragma once

#include "graph/graph_spec.hpp"

#include <optional>
#include <string>
#include <vector>

namespace sluice::host {

struct LiveReloadPlan {
  // For each node of the new graph: the index of the running node it keeps, or nullopt.
  std::vector<std::optional<size_t>> kept_from;
  size_t kept = 0;
  // The ids of the new graph's nodes that get a new instance, and of the running nodes that
  // go (for the log).
  std::vector<std::string> started, retired;
};

// The plan for replacing `running` with `next` in place, or nullopt with the reason in
// *why_not when the whole graph must be drained and restarted instead: the pipeline's
// name, [runtime] tasks / batch_size or [checkpoint] changed (every task would change), or,
// in a pipeline that checkpoints, a node that is replaced, removed or added keeps state or
// a transaction in checkpoints (its state moves through the checkpoint store on a reload:
// a final checkpoint, then a restore). Nodes that keep nothing in checkpoints (maps,
// filters, an HTTP source, a sink that writes synchronously) change in place there too.
[[nodiscard]] std::optional<LiveReloadPlan> plan_live_reload(const GraphSpec& running,
                                                             const GraphSpec& next,
                                                             std::string* why_not);

}  // namespace sluice::host
