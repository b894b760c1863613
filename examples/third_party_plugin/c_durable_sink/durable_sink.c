/* "durable_lines": a C sink that takes part in checkpoints through sluice.h alone. Each
 * element goes to `path` as one JSON line. On checkpoint_prepare it answers LATER (from a
 * timer, as a sink waiting for acknowledgements would): fsync, then checkpoint_ready. Its
 * snapshot is the durable length; a restart truncates the file to it: exactly once. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sluice/sluice.h>

typedef struct {
  int fd;
  int64_t restored, durable; /* bytes: from restore (-1: none), at the last prepare */
  uint64_t epoch;            /* the epoch being prepared */
  char path[4096];
} sink;
static const sl_host_api* host; /* Set by the entry point; valid until the plugin unloads. */

static sl_status fail(sl_context* ctx, const char* msg) {
  host->set_error(ctx, msg, strlen(msg));
  return SL_INTERNAL;
}
static sl_status create(const sl_node_init* init, void** self) {
  sl_value path;
  sink* s = calloc(1, sizeof *s);
  if (!s) return SL_RESOURCE_EXHAUSTED;
  host->object_get(init->config, "path", 4, &path); /* required: the host checked it */
  sl_str p = host->value_str(path);
  memcpy(s->path, p.data, p.size < sizeof s->path ? p.size : sizeof s->path - 1);
  s->fd = -1;
  s->restored = -1;
  *self = s;
  return SL_OK;
}
static void destroy(void* self) {
  sink* s = self;
  if (s->fd >= 0) close(s->fd);
  free(s);
}
static sl_status restore(void* self, sl_context* ctx, sl_value state) {
  ((sink*)self)->restored = state.kind == SL_KIND_INT ? state.as.i : -1;
  return (void)ctx, SL_OK;
}
static sl_status start(void* self, sl_context* ctx) {
  sink* s = self; /* Fresh: truncate. Restored: cut back to the checkpoint's length. */
  s->fd = open(s->path, O_WRONLY | O_CREAT | O_APPEND | (s->restored < 0 ? O_TRUNC : 0), 0644);
  if (s->fd < 0) return fail(ctx, "durable_lines: cannot open the file");
  if (s->restored >= 0 && ftruncate(s->fd, s->restored) != 0) return fail(ctx, "cannot truncate");
  return SL_OK;
}
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  sink* s = self;
  for (size_t i = 0; i < batch->count; ++i) {
    sl_value line = host->json_dump(sl_batch_at(batch, i)->value); /* Owned. */
    sl_str t = host->value_str(line);
    int ok = write(s->fd, t.data, t.size) == (ssize_t)t.size && write(s->fd, "\n", 1) == 1;
    host->value_release(line);
    if (!ok) return fail(ctx, "durable_lines: write failed");
  }
  return (void)input, SL_OK;
}
static sl_status prepare(void* self, sl_context* ctx, uint64_t epoch) {
  ((sink*)self)->epoch = epoch; /* Answered by on_timer: sinks' timers run during prepare. */
  return host->timer_start(ctx, 1, 1000000);
}
static sl_status on_timer(void* self, sl_context* ctx, uint64_t timer_id) {
  sink* s = self;
  struct stat st;
  int ok = fsync(s->fd) == 0 && fstat(s->fd, &st) == 0;
  if (ok) s->durable = st.st_size;
  if (!ok) host->set_error(ctx, "durable_lines: fsync failed", 27);
  host->checkpoint_ready(ctx, s->epoch, ok ? SL_OK : SL_INTERNAL);
  return (void)timer_id, SL_OK;
}
static sl_status snapshot(void* self, sl_context* ctx, sl_value* out) {
  *out = sl_int(((sink*)self)->durable);
  return (void)ctx, SL_OK;
}
/* clang-format off */
static const sl_node_type durable = {.struct_size = sizeof(sl_node_type), .role = SL_ROLE_SINK,
    .name = "durable_lines", .doc = "JSON lines to a file, exactly once under checkpoints.",
    .flags = SL_NODE_STATEFUL, .min_inputs = 1, .max_inputs = 1,
    .params = (const sl_param[]){{.struct_size = sizeof(sl_param), .name = "path",
        .type = SL_PARAM_STRING, .flags = SL_PARAM_REQUIRED, .doc = "The file to write."}},
    .param_count = 1, .create = create, .destroy = destroy, .start = start, .process = process,
    .on_timer = on_timer, .snapshot = snapshot, .restore = restore,
    .checkpoint_prepare = prepare};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin), .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR, .min_host_minor = 1, /* checkpoint_ready is ABI 1.1 */
    .name = "c_durable_sink", .version = "1.0.0", .doc = "A checkpointing sink in C.",
    .node_types = (const sl_node_type* const[]){&durable}, .node_type_count = 1};
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) { host = h; return &plugin; }
/* clang-format on */
