// Node types written with the C++ SDK's batch helpers (sdk_helpers_cxx_nodes.cc), driven by
// sdk_helpers_test.cc. Kept in their own file so that sluice.hpp and the host's headers do
// not meet in one translation unit.
#pragma once

#include <sluice/sluice.h>

#include <span>

namespace sluice::test_support {

/// "cxx_times_ten" (Context::emit_mapped with a function returning Result<Value>: x * 10,
/// an error for a non-int), "cxx_tag" (emit_mapped over a span of Values: [x, task_index,
/// task_count, pipeline, checkpointing] from Config), "cxx_even" (emit_selected with a
/// predicate returning Result<bool>: even ints, an error for a non-int) and "cxx_every_third"
/// (emit_selected with a mask over Batch::values(): positions 0, 3, 6, ... of each batch). The
/// SDK's host table must be set (sdk::set_host) before use.
std::span<const sl_node_type* const> cxx_helper_node_types();

/// sluice::sdk::set_host(table), callable from a file that does not include sluice.hpp.
void set_sdk_host(const sl_host_api* table);

}  // namespace sluice::test_support
