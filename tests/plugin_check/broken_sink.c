/* A deliberately broken plugin for tests/plugin_check: `doubling_sink` appends each element
 * as a JSON line to `path` and makes it durable on checkpoint_prepare (fsync), and its
 * snapshot is the durable length, as the exactly-once file sink of
 * examples/third_party_plugin/c_durable_sink does. But its restore drops that length
 * instead of cutting the file back to it, so the records written after the restored
 * checkpoint are written again: a crash after prepare doubles them. The kit, told that it
 * claims exactly-once, must reject it (plugin_check.broken_sink). */
#define _POSIX_C_SOURCE 200809L
#include "broken_plugin.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  int fd;
  int64_t durable;
  char path[4096];
} sink;

static sl_status fail(sl_context* ctx, const char* msg) {
  host->set_error(ctx, msg, strlen(msg));
  return SL_INTERNAL;
}
static sl_status create(const sl_node_init* init, void** self) {
  sink* s = calloc(1, sizeof *s);
  if (!s) return SL_RESOURCE_EXHAUSTED;
  sl_value path;
  host->object_get(init->config, "path", 4, &path);
  sl_str p = host->value_str(path);
  memcpy(s->path, p.data, p.size < sizeof s->path ? p.size : sizeof s->path - 1);
  s->fd = -1;
  *self = s;
  return SL_OK;
}
static void destroy(void* self) {
  sink* s = self;
  if (s->fd >= 0) close(s->fd);
  free(s);
}
static sl_status start(void* self, sl_context* ctx) {
  sink* s = self;
  s->fd = open(s->path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  return s->fd < 0 ? fail(ctx, "doubling_sink: cannot open the file") : SL_OK;
}
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  sink* s = self;
  (void)input;
  for (size_t i = 0; i < batch->count; ++i) {
    sl_value line = host->json_dump(sl_batch_at(batch, i)->value);
    sl_str t = host->value_str(line);
    int ok = write(s->fd, t.data, t.size) == (ssize_t)t.size && write(s->fd, "\n", 1) == 1;
    host->value_release(line);
    if (!ok) return fail(ctx, "doubling_sink: write failed");
  }
  return SL_OK;
}
static sl_status prepare(void* self, sl_context* ctx, uint64_t epoch) {
  sink* s = self;
  struct stat st;
  if (fsync(s->fd) != 0 || fstat(s->fd, &st) != 0) return fail(ctx, "doubling_sink: fsync failed");
  s->durable = st.st_size;
  host->checkpoint_ready(ctx, epoch, SL_OK);
  return SL_OK;
}
static sl_status snapshot(void* self, sl_context* ctx, sl_value* out) {
  (void)ctx;
  *out = sl_int(((sink*)self)->durable);
  return SL_OK;
}
static sl_status restore(void* self, sl_context* ctx, sl_value state) {
  (void)self, (void)ctx, (void)state; /* the bug: no ftruncate to the saved length */
  return SL_OK;
}

static const sl_param params[] = {
    {.struct_size = sizeof(sl_param),
     .name = "path",
     .type = SL_PARAM_STRING,
     .flags = SL_PARAM_REQUIRED | SL_PARAM_NON_EMPTY,
     .doc = "The file the lines are appended to."},
};
static const sl_node_type doubling_sink = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_SINK,
    .name = "doubling_sink",
    .doc = "JSON lines to a file, durable at each checkpoint; doubles records after a crash.",
    .params = params,
    .param_count = 1,
    .flags = SL_NODE_STATEFUL,
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create,
    .destroy = destroy,
    .start = start,
    .process = process,
    .snapshot = snapshot,
    .restore = restore,
    .checkpoint_prepare = prepare,
};

BROKEN_PLUGIN("broken_sink", &doubling_sink)
