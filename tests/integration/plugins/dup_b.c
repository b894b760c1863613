/* One of two plugins in one directory that both provide node type "dup_op": the host
 * must refuse the second, naming both files. (dup_a.c and dup_b.c differ only in names.) */
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

static const sl_node_type dup_op = {.struct_size = sizeof(sl_node_type),
                                    .role = SL_ROLE_OPERATOR,
                                    .name = "dup_op",
                                    .doc = "Provided twice (plugin it_dup_b).",
                                    .min_inputs = 1,
                                    .max_inputs = 1,
                                    .create = create,
                                    .destroy = destroy,
                                    .process = process};
static const sl_node_type* const types[] = {&dup_op};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .name = "it_dup_b",
                                 .version = "0.0.1",
                                 .doc = "Integration test: duplicate node type name.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* host) {
  (void)host;
  return &plugin;
}
