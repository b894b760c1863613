#include "graph/graph_spec.hpp"

namespace sluice::host {

const NodeSpec* GraphSpec::find(std::string_view id) const {
  auto index = index_of(id);
  return index ? &nodes[*index] : nullptr;
}

std::optional<size_t> GraphSpec::index_of(std::string_view id) const {
  // Graphs are small (tens of nodes) and this runs at setup only: a linear
  // scan beats keeping an index in sync with `nodes`.
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == id) return i;
  }
  return std::nullopt;
}

}  // namespace sluice::host
