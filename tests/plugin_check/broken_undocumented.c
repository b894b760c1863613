/* A deliberately broken plugin for tests/plugin_check: `undocumented` has a parameter
 * without a doc, which `sluiced plugins` and docs/CONFIG.md would show blank. The kit must
 * reject it (plugin_check.broken_undocumented). */
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

static const sl_param undocumented_params[] = {
    {.struct_size = sizeof(sl_param), .name = "factor", .type = SL_PARAM_INT, .default_json = "2"},
};
static const sl_node_type undocumented = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "undocumented",
    .doc = "Passes elements on.",
    .params = undocumented_params,
    .param_count = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create,
    .destroy = destroy,
    .process = process,
};
static const sl_node_type* const types[] = {&undocumented};
static const sl_plugin plugin = {
    .struct_size = sizeof(sl_plugin),
    .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR,
    .name = "broken_undocumented",
    .version = "1.0.0",
    .doc = "Broken on purpose: the kit must reject it.",
    .node_types = types,
    .node_type_count = 1,
};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
