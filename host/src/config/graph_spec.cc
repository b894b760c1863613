#include "config/graph_spec.hpp"

#include <fmt/format.h>

namespace sluice::host {

std::string Diagnostic::to_string() const {
  std::string out = pos.file;
  // A position of 0 means "unknown": print only what is known, so the line
  // still starts with the file and stays clickable in editors.
  if (pos.line > 0) {
    out += fmt::format(":{}", pos.line);
    if (pos.column > 0) out += fmt::format(":{}", pos.column);
  }
  out += severity == Severity::error ? ": error: " : ": warning: ";
  if (!node_id.empty()) out += fmt::format("node '{}': ", node_id);
  if (!key.empty()) out += fmt::format("key '{}': ", key);
  out += message;
  return out;
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
