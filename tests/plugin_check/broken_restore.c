/* A deliberately broken plugin for tests/plugin_check: `forgetful_count` emits a running
 * count of its elements and snapshots it, but its restore ignores the state, so a restart
 * counts from zero again. The kit's restore check must reject it
 * (plugin_check.broken_restore). */
#include "broken_plugin.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct {
  int64_t count;
} counter;

static sl_status create(const sl_node_init* init, void** self) {
  (void)init;
  counter* c = calloc(1, sizeof *c);
  if (!c) return SL_RESOURCE_EXHAUSTED;
  *self = c;
  return SL_OK;
}
static void destroy(void* self) { free(self); }

static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  counter* c = self;
  (void)input;
  for (size_t i = 0; i < batch->count; ++i) {
    sl_value n = sl_int(++c->count);
    sl_status st = host->emit_values(ctx, &n, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}
static sl_status snapshot(void* self, sl_context* ctx, sl_value* out) {
  (void)ctx;
  *out = sl_int(((counter*)self)->count);
  return SL_OK;
}
static sl_status restore(void* self, sl_context* ctx, sl_value state) {
  (void)self, (void)ctx, (void)state; /* the bug: the saved count is dropped */
  return SL_OK;
}

static const sl_node_type forgetful_count = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "forgetful_count",
    .doc = "Emits 1, 2, 3, ...: the number of elements so far. Forgets it on restore.",
    .flags = SL_NODE_STATEFUL,
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create,
    .destroy = destroy,
    .process = process,
    .snapshot = snapshot,
    .restore = restore,
};

BROKEN_PLUGIN("broken_restore", &forgetful_count)
