/* An operator that passes elements through, and whose create fails while the file named by
 * its `blocker` param exists: a node that validates but cannot be created in this
 * environment (as one needing a device or a licence file would). Used to check that a
 * reload whose new node cannot be created leaves the running graph untouched. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sluice/sluice.h>

static const sl_host_api* host;

static sl_status create(const sl_node_init* init, void** self) {
  sl_value v;
  char path[4096];
  if (host->object_get(init->config, "blocker", 7, &v) && v.kind == SL_KIND_STRING) {
    sl_str s = host->value_str(v);
    if (s.size >= sizeof path) return SL_INVALID_ARGUMENT;
    memcpy(path, s.data, s.size);
    path[s.size] = 0;
    if (access(path, F_OK) == 0) {
      static const char msg[] = "gate: the blocker file exists";
      host->set_error(init->ctx, msg, sizeof msg - 1);
      return SL_UNAVAILABLE;
    }
  }
  *self = NULL;
  return SL_OK;
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)self;
  (void)input;
  return host->emit(ctx, batch->messages, batch->count);
}

static const sl_param params[] = {{.struct_size = sizeof(sl_param),
                                   .name = "blocker",
                                   .type = SL_PARAM_STRING,
                                   .flags = SL_PARAM_REQUIRED,
                                   .doc = "create fails while this file exists."}};
static const sl_node_type gate_type = {.struct_size = sizeof(sl_node_type),
                                       .role = SL_ROLE_OPERATOR,
                                       .name = "gate",
                                       .doc = "Passes elements through; create may fail.",
                                       .params = params,
                                       .param_count = 1,
                                       .min_inputs = 1,
                                       .max_inputs = 1,
                                       .create = create,
                                       .destroy = destroy,
                                       .process = process};
static const sl_node_type* const types[] = {&gate_type};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .name = "service_gate",
                                 .version = "0.0.1",
                                 .doc = "Service test: an operator whose create can fail.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
