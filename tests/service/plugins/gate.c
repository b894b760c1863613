/* An operator that passes elements through, and whose create fails while the file named by
 * its `blocker` param exists: a node that validates but cannot be created in this
 * environment (as one needing a device or a licence file would). Used to check that a
 * reload whose new node cannot be created leaves the running graph untouched. Its start
 * fails likewise while `start_blocker` exists (on task `start_task` only, when given): a
 * reload whose new node cannot start on one task. And `idle`, a source that runs on every
 * task and never emits nor ends: it keeps tasks other than 0 running. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sluice/sluice.h>

static const sl_host_api* host;

typedef struct gate {
  char start_blocker[4096]; /* empty: start never fails */
  int64_t start_task;       /* -1: every task */
  uint32_t task_index;
} gate;

static int copy_path(const sl_host_api* h, sl_value config, const char* key, char* out,
                     size_t size) {
  sl_value v;
  out[0] = 0;
  if (!h->object_get(config, key, strlen(key), &v) || v.kind != SL_KIND_STRING) return 1;
  sl_str s = h->value_str(v);
  if (s.size >= size) return 0;
  memcpy(out, s.data, s.size);
  out[s.size] = 0;
  return 1;
}

static sl_status create(const sl_node_init* init, void** self) {
  char path[4096];
  if (!copy_path(host, init->config, "blocker", path, sizeof path)) return SL_INVALID_ARGUMENT;
  if (path[0] && access(path, F_OK) == 0) {
    static const char msg[] = "gate: the blocker file exists";
    host->set_error(init->ctx, msg, sizeof msg - 1);
    return SL_UNAVAILABLE;
  }
  gate* g = calloc(1, sizeof *g);
  if (!g) return SL_RESOURCE_EXHAUSTED;
  if (!copy_path(host, init->config, "start_blocker", g->start_blocker, sizeof g->start_blocker)) {
    free(g);
    return SL_INVALID_ARGUMENT;
  }
  sl_value v;
  g->start_task = -1;
  if (host->object_get(init->config, "start_task", 10, &v) && v.kind == SL_KIND_INT) {
    g->start_task = v.as.i;
  }
  g->task_index = init->task_index;
  *self = g;
  return SL_OK;
}
static void destroy(void* self) { free(self); }
static sl_status start(void* self, sl_context* ctx) {
  const gate* g = self;
  if (!g->start_blocker[0] || access(g->start_blocker, F_OK) != 0) return SL_OK;
  if (g->start_task >= 0 && (uint32_t)g->start_task != g->task_index) return SL_OK;
  static const char msg[] = "gate: the start blocker file exists";
  host->set_error(ctx, msg, sizeof msg - 1);
  return SL_UNAVAILABLE;
}
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)self;
  (void)input;
  return host->emit(ctx, batch->messages, batch->count);
}

static sl_status idle_create(const sl_node_init* init, void** self) {
  (void)init;
  *self = NULL;
  return SL_OK;
}
static void idle_destroy(void* self) { (void)self; }
static sl_status idle_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* out_state) {
  (void)self;
  (void)ctx;
  (void)budget;
  *out_state = SL_SOURCE_IDLE;
  return SL_OK;
}

static const sl_param params[] = {{.struct_size = sizeof(sl_param),
                                   .name = "blocker",
                                   .type = SL_PARAM_STRING,
                                   .flags = SL_PARAM_REQUIRED,
                                   .doc = "create fails while this file exists."},
                                  {.struct_size = sizeof(sl_param),
                                   .name = "start_blocker",
                                   .type = SL_PARAM_STRING,
                                   .default_json = "\"\"",
                                   .doc = "start fails while this file exists (empty: never)."},
                                  {.struct_size = sizeof(sl_param),
                                   .name = "start_task",
                                   .type = SL_PARAM_INT,
                                   .default_json = "-1",
                                   .doc = "the task whose start may fail (-1: every task)."}};
static const sl_node_type gate_type = {.struct_size = sizeof(sl_node_type),
                                       .role = SL_ROLE_OPERATOR,
                                       .name = "gate",
                                       .doc = "Passes elements through; create or start may fail.",
                                       .params = params,
                                       .param_count = 3,
                                       .min_inputs = 1,
                                       .max_inputs = 1,
                                       .create = create,
                                       .destroy = destroy,
                                       .start = start,
                                       .process = process};
static const sl_node_type idle_type = {.struct_size = sizeof(sl_node_type),
                                       .role = SL_ROLE_SOURCE,
                                       .name = "idle",
                                       .doc = "A source on every task that never emits nor ends.",
                                       .create = idle_create,
                                       .destroy = idle_destroy,
                                       .poll = idle_poll};
static const sl_node_type* const types[] = {&gate_type, &idle_type};
static const sl_plugin plugin = {
    .struct_size = sizeof(sl_plugin),
    .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR,
    .name = "service_gate",
    .version = "0.0.1",
    .doc = "Service test: an operator whose create or start can fail; an idle source.",
    .node_types = types,
    .node_type_count = 2};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
