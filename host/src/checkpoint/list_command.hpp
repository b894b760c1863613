// `sluiced checkpoints CONFIG`: the epochs in the pipeline's checkpoint store,
// with their time, positions per source and state size per node.
#pragma once

#include "graph/graph_spec.hpp"

#include <string>

namespace sluice::host::checkpoint {

// Prints the listing to stdout (text or JSON); problems to stderr. Returns an
// exit code (0, or 1 when the store cannot be opened or listed, 2 without
// [checkpoint]).
int list_checkpoints(const GraphSpec& spec, bool json);

}  // namespace sluice::host::checkpoint
