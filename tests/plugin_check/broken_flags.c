/* A deliberately broken plugin for tests/plugin_check: `unflagged_state` has snapshot and
 * restore but no SL_NODE_STATEFUL, so the host would never save its state (issue 16's
 * silent state loss). The kit must reject it (plugin_check.broken_flags); a host that
 * refuses such a type at load fails the load, which the kit reports too. */
#include "broken_plugin.h"

#include <stddef.h>

static sl_status snapshot(void* self, sl_context* ctx, sl_value* out) {
  (void)self, (void)ctx;
  *out = sl_int(0);
  return SL_OK;
}
static sl_status restore(void* self, sl_context* ctx, sl_value state) {
  (void)self, (void)ctx, (void)state;
  return SL_OK;
}

static const sl_node_type unflagged_state = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "unflagged_state",
    .doc = "Passes elements on; has snapshot and restore but no SL_NODE_STATEFUL.",
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create_empty,
    .destroy = destroy_nothing,
    .process = pass_on,
    .snapshot = snapshot,
    .restore = restore,
};

BROKEN_PLUGIN("broken_flags", &unflagged_state)
