/* "batch_every": a complete C operator with config, state, a timer and checkpoints.
 *
 * It gathers incoming values into arrays of `size` values and emits each array when it is
 * full, or `max_wait_ms` after its first value arrived, whichever comes first; at the end
 * of input it emits what it holds. Every input value comes out exactly once, in order.
 *
 * What it shows (docs/PLUGIN_GUIDE.md, "Timers, restore and threading"):
 *  - reading validated config in create (the host checked types and bounds already);
 *  - owning values: retain what you keep, release what you drop;
 *  - SL_NODE_STATEFUL with snapshot/restore: the values held are part of the checkpoint;
 *  - timers are NOT part of a checkpoint: restore runs before start, so start re-arms the
 *    timer when restore brought values back.
 * Plain C11 against <sluice/sluice.h> alone. */
#include <stdlib.h>
#include <string.h>

#include <sluice/sluice.h>

/* The host's function table, stored by the entry point; valid until the plugin unloads. */
static const sl_host_api* host;

/* The only timer this node arms: "flush what is held". Timer ids are the node's own. */
enum { FLUSH_TIMER = 1 };

typedef struct batcher {
  /* config */
  size_t size;         /* values per array */
  int64_t max_wait_ns; /* how long the first held value may wait */
  /* state: the values held, each owned (retained) by the node */
  sl_value* held;
  size_t held_count;
  size_t held_capacity;
} batcher;

/* Sets the node's error text and returns `status`: the host reports it with the node id. */
static sl_status fail(sl_context* ctx, sl_status status, const char* message) {
  host->set_error(ctx, message, strlen(message));
  return status;
}

static void release_held(batcher* b) {
  for (size_t i = 0; i < b->held_count; ++i) host->value_release(b->held[i]);
  b->held_count = 0;
}

/* Keeps `value` (borrowed from the caller): retains it and appends it to `held`. */
static sl_status hold(batcher* b, sl_context* ctx, sl_value value) {
  if (b->held_count == b->held_capacity) {
    size_t capacity = b->held_capacity ? 2 * b->held_capacity : b->size;
    sl_value* grown = realloc(b->held, capacity * sizeof *grown);
    if (!grown) return fail(ctx, SL_RESOURCE_EXHAUSTED, "batch_every: out of memory");
    b->held = grown;
    b->held_capacity = capacity;
  }
  host->value_retain(value);
  b->held[b->held_count++] = value;
  return SL_OK;
}

/* Emits the held values as one array (nothing when none are held) and disarms the timer. */
static sl_status flush(batcher* b, sl_context* ctx) {
  host->timer_cancel(ctx, FLUSH_TIMER);
  if (b->held_count == 0) return SL_OK;
  sl_message out;
  memset(&out, 0, sizeof out); /* no key, no headers */
  out.timestamp_ns = SL_NO_TIMESTAMP;
  out.value = host->array_create(b->held, b->held_count); /* owned; retains the items */
  sl_status status = host->emit(ctx, &out, 1);            /* emit borrows the message */
  host->value_release(out.value);
  release_held(b);
  return status;
}

static sl_status create(const sl_node_init* init, void** out_self) {
  /* The config holds every declared param, checked against its type and bounds (size >= 1,
   * max_wait_ms >= 1) and with defaults filled in, so create does not check them again. */
  sl_value size;
  sl_value max_wait_ms;
  host->object_get(init->config, "size", strlen("size"), &size);
  host->object_get(init->config, "max_wait_ms", strlen("max_wait_ms"), &max_wait_ms);

  batcher* b = calloc(1, sizeof *b);
  if (!b) return SL_RESOURCE_EXHAUSTED;
  b->size = (size_t)size.as.i;
  b->max_wait_ns = max_wait_ms.as.i * 1000000;
  *out_self = b;
  return SL_OK;
}

static void destroy(void* self) {
  batcher* b = self;
  release_held(b);
  free(b->held);
  free(b);
}

/* Called after restore (if any) and before the first batch: the place to arm timers. */
static sl_status start(void* self, sl_context* ctx) {
  batcher* b = self;
  if (b->held_count > 0) return host->timer_start(ctx, FLUSH_TIMER, b->max_wait_ns);
  return SL_OK;
}

static sl_status process(void* self, sl_context* ctx, uint32_t input_index, const sl_batch* batch) {
  batcher* b = self;
  (void)input_index; /* one input */
  for (size_t i = 0; i < batch->count; ++i) {
    sl_status status = hold(b, ctx, sl_batch_at(batch, i)->value); /* retains it */
    if (status == SL_OK && b->held_count == 1) {
      status = host->timer_start(ctx, FLUSH_TIMER, b->max_wait_ns); /* the first one waits */
    }
    if (status == SL_OK && b->held_count == b->size) status = flush(b, ctx);
    if (status != SL_OK) return status;
  }
  return SL_OK;
}

static sl_status on_timer(void* self, sl_context* ctx, uint64_t timer_id) {
  (void)timer_id; /* FLUSH_TIMER is the only one */
  return flush(self, ctx);
}

/* All inputs ended: what is held goes out now. */
static sl_status finish(void* self, sl_context* ctx) { return flush(self, ctx); }

/* The state is the array of held values; the host owns what snapshot returns. */
static sl_status snapshot(void* self, sl_context* ctx, sl_value* out_state) {
  batcher* b = self;
  (void)ctx;
  *out_state = host->array_create(b->held, b->held_count);
  return SL_OK;
}

/* After create, before start. `state` is borrowed: retain the items kept. */
static sl_status restore(void* self, sl_context* ctx, sl_value state) {
  batcher* b = self;
  if (state.kind != SL_KIND_ARRAY) {
    return fail(ctx, SL_INVALID_ARGUMENT, "batch_every: the saved state is not an array");
  }
  release_held(b);
  size_t count = host->value_size(state);
  for (size_t i = 0; i < count; ++i) {
    sl_status status = hold(b, ctx, host->value_at(state, i));
    if (status != SL_OK) return status;
  }
  return SL_OK; /* the timer is armed in start */
}

static const sl_param params[] = {
    {
        .struct_size = sizeof(sl_param),
        .name = "size",
        .type = SL_PARAM_INT,
        .default_json = "10",
        .doc = "Values per array.",
        .flags = SL_PARAM_HAS_MIN,
        .min_int = 1,
    },
    {
        .struct_size = sizeof(sl_param),
        .name = "max_wait_ms",
        .type = SL_PARAM_DURATION,
        .default_json = "1000",
        .doc = "Emit a partial array this long after its first value arrived.",
        .flags = SL_PARAM_HAS_MIN,
        .min_int = 1,
    },
};

static const sl_node_type batch_every = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "batch_every",
    .doc = "Gathers values into arrays of `size`, emitted when full or after `max_wait_ms`.",
    .params = params,
    .param_count = (uint32_t)(sizeof params / sizeof params[0]),
    .flags = SL_NODE_STATEFUL, /* snapshot and restore are called only with this flag */
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create,
    .destroy = destroy,
    .start = start,
    .process = process,
    .on_timer = on_timer,
    .finish = finish,
    .snapshot = snapshot,
    .restore = restore,
};

static const sl_node_type* const node_types[] = {&batch_every};

static const sl_plugin plugin = {
    .struct_size = sizeof(sl_plugin),
    .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR,
    .min_host_minor = 2, /* the params' bounds (SL_PARAM_HAS_MIN) are checked since 1.2 */
    .name = "c_batcher",
    .version = "1.0.0",
    .doc = "Example plugin in C: an operator with state, a timer and checkpoints.",
    .node_types = node_types,
    .node_type_count = 1,
};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
