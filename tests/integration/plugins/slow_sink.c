/* A sink whose finish takes `finish_ms` milliseconds (it sleeps on the executor, as a
 * sink flushing to a slow disk or broker would block). Used to test sluiced's shutdown
 * deadline (`[runtime] shutdown_timeout_ms`) and the second signal that cuts the drain. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <time.h>
#include <sluice/sluice.h>

static const sl_host_api* host;

static sl_status create(const sl_node_init* init, void** self) {
  sl_value ms;
  int64_t v = 0;
  if (host->object_get(init->config, "finish_ms", 9, &ms) && ms.kind == SL_KIND_INT) v = ms.as.i;
  *self = (void*)(intptr_t)v;
  return SL_OK;
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)self, (void)ctx, (void)input, (void)batch;
  return SL_OK;
}
static sl_status finish(void* self, sl_context* ctx) {
  int64_t ms = (int64_t)(intptr_t)self;
  struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  static const char msg[] = "slow_sink: finishing slowly";
  host->log(ctx, SL_LOG_INFO, msg, sizeof msg - 1);
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  return SL_OK;
}

static const sl_param params[] = {{.struct_size = sizeof(sl_param),
                                   .name = "finish_ms",
                                   .type = SL_PARAM_DURATION,
                                   .default_json = "0",
                                   .doc = "How long finish takes."}};
static const sl_node_type slow_sink = {.struct_size = sizeof(sl_node_type),
                                       .role = SL_ROLE_SINK,
                                       .name = "slow_sink",
                                       .doc = "Discards elements; finish takes finish_ms.",
                                       .params = params,
                                       .param_count = 1,
                                       .min_inputs = 1,
                                       .max_inputs = 1,
                                       .create = create,
                                       .destroy = destroy,
                                       .process = process,
                                       .finish = finish};
static const sl_node_type* const types[] = {&slow_sink};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .name = "it_slow_sink",
                                 .version = "0.0.1",
                                 .doc = "Integration test: a sink that is slow to finish.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
