// Renderings of a validated graph for people and tools: Graphviz DOT
// (`sluiced graph`) and JSON (`sluiced validate --json`, the admin endpoint).
#pragma once

#include "graph/graph_spec.hpp"

#include <string>

namespace sluice::host {

// A `digraph`: nodes labelled "id\ntype", sources, operators and sinks in
// different shapes, edges from input to reader, labelled with the input index
// when the reader has more than one input.
[[nodiscard]] std::string to_dot(const GraphSpec& graph);

// {"name": ..., "nodes": [{"id", "role", "type", "plugin", "inputs", "config"}],
//  "edges": [{"from", "to", "input"}]}, nodes in GraphSpec order. "plugin" is
// null when the type is not resolved; "input" is the index in the reader's
// inputs. Secret values in "config" are replaced by "<redacted>" (graph/redact.hpp).
[[nodiscard]] std::string to_json(const GraphSpec& graph);

}  // namespace sluice::host
