// Order and cycles of a pipeline graph. Edges come from NodeSpec::inputs by
// id; inputs naming no node are ignored (the validator reports them).
#pragma once

#include "graph/graph_spec.hpp"

#include <cstddef>
#include <vector>

namespace sluice::host {

// For each node, the indices of the nodes it reads, in config order, without
// repeats or unknown ids.
[[nodiscard]] std::vector<std::vector<size_t>> input_indices(const GraphSpec& graph);

// The nodes that `from` feeds, directly or not, and `from` itself; ascending.
[[nodiscard]] std::vector<size_t> downstream_of(const GraphSpec& graph, size_t from);

// Kahn's algorithm, stable: among nodes whose inputs are all placed, the one
// first in `graph.nodes` goes next. Nodes on a cycle, or downstream of one,
// are left out, so the result is shorter than `nodes` exactly when the graph
// has a cycle.
[[nodiscard]] std::vector<size_t> stable_topo_order(const GraphSpec& graph);

// Cycles, each in data-flow order (every node reads the one before it, the
// first reads the last) starting at its lowest index. Each node is reported in
// at most one cycle; a graph with cycles yields at least one.
[[nodiscard]] std::vector<std::vector<size_t>> find_cycles(const GraphSpec& graph);

}  // namespace sluice::host
