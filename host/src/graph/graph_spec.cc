#include "graph/graph_spec.hpp"

#include <algorithm>
#include <cctype>

namespace sluice::host {

std::optional<std::string> member_name_problem(std::string_view name) {
  if (name.empty() || name.size() > 64) return "must be 1 to 64 characters long";
  const bool ok = std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  });
  if (!ok) return "may hold only A-Z a-z 0-9 . _ -";
  return std::nullopt;
}

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
