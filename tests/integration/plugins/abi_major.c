/* A plugin built for a future ABI major (SL_ABI_MAJOR + 1): the host must refuse it,
 * naming the file and both versions. Otherwise well-formed. */
#include <sluice/sluice.h>

static sl_status create(const sl_node_init* init, void** self) {
  (void)init;
  *self = NULL;
  return SL_OK;
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)self, (void)ctx, (void)input, (void)batch;
  return SL_OK;
}

static const sl_node_type future_op = {.struct_size = sizeof(sl_node_type),
                                       .role = SL_ROLE_OPERATOR,
                                       .name = "future_op",
                                       .doc = "Never loads: built for the next ABI major.",
                                       .min_inputs = 1,
                                       .max_inputs = 1,
                                       .create = create,
                                       .destroy = destroy,
                                       .process = process};
static const sl_node_type* const types[] = {&future_op};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR + 1,
                                 .abi_minor = 0,
                                 .name = "it_abi_major",
                                 .version = "9.9.9",
                                 .doc = "Integration test: wrong ABI major.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host) {
  (void)host;
  return &plugin;
}
