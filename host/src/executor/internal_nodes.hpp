// Node types the host itself provides (not loaded from plugins): the source a
// pipeline test feeds, and the sink that records a node's output for it.
#pragma once

#include <sluice/sluice.h>

namespace sluice::host {

const sl_node_type* injected_source_type();
const sl_node_type* capture_sink_type();
const sl_node_type* discard_sink_type();

}  // namespace sluice::host
