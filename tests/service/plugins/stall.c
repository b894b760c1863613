/* An operator that passes elements through and, on the `after`-th element, blocks its
 * task thread for `stall_ms` (as a plugin stuck in a blocking call would). Used to check
 * that a stuck task withholds the systemd watchdog ping. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <sluice/sluice.h>

static const sl_host_api* host;

typedef struct {
  int64_t after;
  int64_t stall_ms;
  int64_t seen;
} stall;

static int64_t int_param(const sl_node_init* init, const char* key, size_t len) {
  sl_value v;
  if (host->object_get(init->config, key, len, &v) && v.kind == SL_KIND_INT) return v.as.i;
  return 0;
}

static sl_status create(const sl_node_init* init, void** self) {
  stall* s = calloc(1, sizeof *s);
  if (!s) return SL_RESOURCE_EXHAUSTED;
  s->after = int_param(init, "after", 5);
  s->stall_ms = int_param(init, "stall_ms", 8);
  *self = s;
  return SL_OK;
}
static void destroy(void* self) { free(self); }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)input;
  stall* s = self;
  for (size_t i = 0; i < batch->count; ++i) {
    if (++s->seen == s->after) {
      static const char msg[] = "stall: blocking the task thread";
      host->log(ctx, SL_LOG_INFO, msg, sizeof msg - 1);
      struct timespec left = {(time_t)(s->stall_ms / 1000), (long)(s->stall_ms % 1000) * 1000000L};
      while (nanosleep(&left, &left) != 0 && errno == EINTR) {
      }
    }
  }
  return host->emit(ctx, batch->messages, batch->count);
}

static const sl_param params[] = {{.struct_size = sizeof(sl_param),
                                   .name = "after",
                                   .type = SL_PARAM_INT,
                                   .default_json = "1",
                                   .doc = "Which element (1-based) triggers the stall."},
                                  {.struct_size = sizeof(sl_param),
                                   .name = "stall_ms",
                                   .type = SL_PARAM_DURATION,
                                   .default_json = "0",
                                   .doc = "How long the task thread is blocked."}};
static const sl_node_type stall_type = {.struct_size = sizeof(sl_node_type),
                                        .role = SL_ROLE_OPERATOR,
                                        .name = "stall",
                                        .doc = "Passes elements through; blocks once.",
                                        .params = params,
                                        .param_count = 2,
                                        .min_inputs = 1,
                                        .max_inputs = 1,
                                        .create = create,
                                        .destroy = destroy,
                                        .process = process};
static const sl_node_type* const types[] = {&stall_type};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .name = "service_stall",
                                 .version = "0.0.1",
                                 .doc = "Service test: an operator that blocks its task once.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
