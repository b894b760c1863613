// Node types defined inside a test or benchmark binary and handed to a PluginRegistry
// directly (add_plugin) instead of being loaded from a shared library: the descriptor
// boilerplate every such binary needs, written once.
#pragma once

#include <sluice/sluice.h>

#include <cstddef>
#include <cstdint>

namespace sluice::test_support {

/// `create` of node types that keep no state.
inline sl_status stateless_create(const sl_node_init* /*init*/, void** self) {
  *self = nullptr;
  return SL_OK;
}
inline void stateless_destroy(void* /*self*/) {}

/// A node type with the basics only: `role`, `name`, no inputs for a source and 1 to
/// `max_inputs` for the others, stateless create/destroy. Tests set the callbacks they use.
inline sl_node_type bare_node_type(int32_t role, const char* name, int32_t max_inputs = 1) {
  sl_node_type t{};
  t.struct_size = sizeof t;
  t.role = role;
  t.name = name;
  t.create = stateless_create;
  t.destroy = stateless_destroy;
  t.min_inputs = role == SL_ROLE_SOURCE ? 0 : 1;
  t.max_inputs = role == SL_ROLE_SOURCE ? 0 : max_inputs;
  return t;
}

/// A source node type: bare_node_type with its parameters and the callbacks every
/// source has. `params` must outlive the type (a static array).
template <size_t N>
sl_node_type source_node_type(const char* name, const sl_param (&params)[N],
                              sl_status (*create)(const sl_node_init*, void**),
                              void (*destroy)(void*),
                              sl_status (*poll)(void*, sl_context*, uint32_t, int32_t*)) {
  sl_node_type t = bare_node_type(SL_ROLE_SOURCE, name);
  t.params = params;
  t.param_count = static_cast<uint32_t>(N);
  t.create = create;
  t.destroy = destroy;
  t.poll = poll;
  return t;
}

/// A plugin descriptor, at this header's ABI version, for `types` (which must outlive it).
template <size_t N>
sl_plugin in_process_plugin(const char* name, const sl_node_type* (&types)[N]) {
  sl_plugin p{};
  p.struct_size = sizeof p;
  p.abi_major = SL_ABI_MAJOR;
  p.abi_minor = SL_ABI_MINOR;
  p.name = name;
  p.node_types = types;
  p.node_type_count = static_cast<uint32_t>(N);
  return p;
}

}  // namespace sluice::test_support
