/* The silent state loss of issue 16: a C sink that keeps a count and fills snapshot and
 * restore, but forgot SL_NODE_STATEFUL. Its state would never be saved (the host takes
 * the flag as the sign of state), so the host refuses the type at load, naming the fix. */
#include <stdlib.h>
#include <sluice/sluice.h>

static sl_status create(const sl_node_init* init, void** self) {
  (void)init;
  *self = calloc(1, sizeof(int64_t));
  return *self ? SL_OK : SL_RESOURCE_EXHAUSTED;
}
static void destroy(void* self) { free(self); }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)ctx, (void)input;
  *(int64_t*)self += (int64_t)batch->count;
  return SL_OK;
}
static sl_status snapshot(void* self, sl_context* ctx, sl_value* out) {
  (void)ctx;
  *out = sl_int(*(int64_t*)self);
  return SL_OK;
}
static sl_status restore(void* self, sl_context* ctx, sl_value state) {
  (void)ctx;
  *(int64_t*)self = state.as.i;
  return SL_OK;
}

static const sl_node_type counting_sink = {.struct_size = sizeof(sl_node_type),
                                           .role = SL_ROLE_SINK,
                                           .name = "counting_sink",
                                           .doc = "Counts what it receives (forgot the flag).",
                                           .flags = 0, /* the bug: SL_NODE_STATEFUL missing */
                                           .min_inputs = 1,
                                           .max_inputs = 1,
                                           .create = create,
                                           .destroy = destroy,
                                           .process = process,
                                           .snapshot = snapshot,
                                           .restore = restore};
static const sl_node_type* const types[] = {&counting_sink};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .name = "it_state_without_flag",
                                 .version = "0.1.0",
                                 .doc = "A stateful sink without SL_NODE_STATEFUL.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host) {
  (void)host;
  return &plugin;
}
