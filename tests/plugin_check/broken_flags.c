/* A deliberately broken plugin for tests/plugin_check: `unflagged_state` has snapshot and
 * restore but no SL_NODE_STATEFUL, so the host would never save its state (issue 16's
 * silent state loss). The kit must reject it (plugin_check.broken_flags); a host that
 * refuses such a type at load fails the load, which the kit reports too. */
#include <sluice/sluice.h>

#include <stddef.h>

static const sl_host_api* host;

static sl_status create(const sl_node_init* init, void** self) {
  (void)init;
  *self = NULL;
  return SL_OK;
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)self, (void)input;
  return host->emit(ctx, batch->messages, batch->count);
}
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
    .create = create,
    .destroy = destroy,
    .process = process,
    .snapshot = snapshot,
    .restore = restore,
};
static const sl_node_type* const types[] = {&unflagged_state};
static const sl_plugin plugin = {
    .struct_size = sizeof(sl_plugin),
    .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR,
    .name = "broken_flags",
    .version = "1.0.0",
    .doc = "Broken on purpose: the kit must reject it.",
    .node_types = types,
    .node_type_count = 1,
};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
