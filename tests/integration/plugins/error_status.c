/* An operator that fails with SL_INVALID_ARGUMENT and a message set through set_error on
 * the element equal to `fail_on` (an int param, default 3); elements before it pass
 * through. The host must report the message with the node id (exit 1). A negative
 * `fail_on` fails create, which this plugin does not declare (no constraint, no validate
 * callback): `sluiced validate --create` must catch it. */
#include <stdio.h>
#include <sluice/sluice.h>

static const sl_host_api* host;

static sl_status create(const sl_node_init* init, void** self) {
  sl_value fail_on;
  if (!host->object_get(init->config, "fail_on", 7, &fail_on) || fail_on.kind != SL_KIND_INT) {
    static const char msg[] = "it_error_status: fail_on is missing";
    host->set_error(init->ctx, msg, sizeof msg - 1);
    return SL_INVALID_ARGUMENT;
  }
  if (fail_on.as.i < 0) {
    static const char msg[] = "it_error_status: fail_on must not be negative";
    host->set_error(init->ctx, msg, sizeof msg - 1);
    return SL_INVALID_ARGUMENT;
  }
  *self = (void*)(intptr_t)fail_on.as.i;
  return SL_OK;
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  int64_t fail_on = (int64_t)(intptr_t)self;
  (void)input;
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    if (m->value.kind == SL_KIND_INT && m->value.as.i == fail_on) {
      char msg[128];
      int n = snprintf(msg, sizeof msg, "it_error_status: element %lld is refused on purpose",
                       (long long)fail_on);
      host->set_error(ctx, msg, (size_t)n);
      return SL_INVALID_ARGUMENT;
    }
    sl_status st = host->emit(ctx, m, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}

static const sl_param params[] = {{.struct_size = sizeof(sl_param),
                                   .name = "fail_on",
                                   .type = SL_PARAM_INT,
                                   .default_json = "3",
                                   .doc = "The element that makes process fail."}};
static const sl_node_type failing_op = {.struct_size = sizeof(sl_node_type),
                                        .role = SL_ROLE_OPERATOR,
                                        .name = "failing_op",
                                        .doc = "Passes elements through; fails on fail_on.",
                                        .params = params,
                                        .param_count = 1,
                                        .min_inputs = 1,
                                        .max_inputs = 1,
                                        .create = create,
                                        .destroy = destroy,
                                        .process = process};
static const sl_node_type* const types[] = {&failing_op};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .name = "it_error_status",
                                 .version = "0.0.1",
                                 .doc = "Integration test: a node returning an error status.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
