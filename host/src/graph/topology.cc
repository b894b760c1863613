#include "graph/topology.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

namespace sluice::host {

std::vector<std::vector<size_t>> input_indices(const GraphSpec& graph) {
  std::map<std::string_view, size_t> by_id;
  for (size_t i = 0; i < graph.nodes.size(); ++i) by_id.emplace(graph.nodes[i].id, i);
  std::vector<std::vector<size_t>> out(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const auto& ref : graph.nodes[i].inputs) {
      auto it = by_id.find(ref.node);
      if (it == by_id.end()) continue;
      auto& list = out[i];
      if (std::find(list.begin(), list.end(), it->second) == list.end()) list.push_back(it->second);
    }
  }
  return out;
}

std::vector<size_t> downstream_of(const GraphSpec& graph, size_t from) {
  const auto inputs = input_indices(graph);
  std::vector<bool> seen(inputs.size(), false);
  seen[from] = true;
  // Forward closure: repeat until no reader of a seen node is new (graphs are small).
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (seen[i]) continue;
      if (std::any_of(inputs[i].begin(), inputs[i].end(), [&](size_t in) { return seen[in]; })) {
        seen[i] = true;
        grew = true;
      }
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i]) out.push_back(i);
  }
  return out;
}

std::vector<size_t> stable_topo_order(const GraphSpec& graph) {
  const auto inputs = input_indices(graph);
  const size_t n = inputs.size();
  std::vector<size_t> pending(n);
  std::vector<std::vector<size_t>> readers(n);
  for (size_t i = 0; i < n; ++i) {
    pending[i] = inputs[i].size();
    for (size_t from : inputs[i]) readers[from].push_back(i);
  }
  // A min-heap of ready indices: ties resolve to node order, so the order is
  // the same on every run and reads like the config.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t r : readers[i]) {
      if (--pending[r] == 0) ready.push(r);
    }
  }
  return order;
}

std::vector<std::vector<size_t>> find_cycles(const GraphSpec& graph) {
  const auto inputs = input_indices(graph);
  const size_t n = inputs.size();
  std::vector<bool> placed(n, false);
  for (size_t i : stable_topo_order(graph)) placed[i] = true;

  // Every unplaced node reads at least one unplaced node, so walking upstream
  // through unplaced nodes must close a loop or reach a walk already taken.
  std::vector<bool> done(n, false);
  std::vector<std::vector<size_t>> cycles;
  for (size_t start = 0; start < n; ++start) {
    if (placed[start] || done[start]) continue;
    std::vector<size_t> path{start};
    std::map<size_t, size_t> index_in_path{{start, 0}};
    while (true) {
      size_t current = path.back();
      auto next = std::find_if(inputs[current].begin(), inputs[current].end(),
                               [&](size_t i) { return !placed[i]; });
      if (next == inputs[current].end() || done[*next]) break;
      auto seen = index_in_path.find(*next);
      if (seen != index_in_path.end()) {
        // The walk went upstream; data flows the other way.
        std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(seen->second),
                                  path.end());
        std::reverse(cycle.begin(), cycle.end());
        std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
        cycles.push_back(std::move(cycle));
        break;
      }
      index_in_path.emplace(*next, path.size());
      path.push_back(*next);
    }
    for (size_t i : path) done[i] = true;
  }
  return cycles;
}

}  // namespace sluice::host
