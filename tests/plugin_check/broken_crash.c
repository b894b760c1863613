/* A deliberately broken plugin for tests/plugin_check: two operators that break the
 * contract on hostile elements. `crash_on_null` dereferences the text of every element, so
 * null (no text) crashes it; `silent_error` refuses strings without set_error. The kit must
 * reject both (plugin_check.broken_crash, plugin_check.broken_silent). */
#include "broken_plugin.h"

#include <stddef.h>

static sl_status crash_process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  (void)self, (void)input;
  for (size_t i = 0; i < batch->count; ++i) {
    sl_value v = sl_batch_at(batch, i)->value;
    if (v.kind == SL_KIND_NULL) {
      volatile const char* text = NULL; /* "every element has text": wrong for null */
      if (*text == 'x') return SL_INTERNAL;
    }
  }
  return host->emit(ctx, batch->messages, batch->count);
}

static sl_status silent_process(void* self, sl_context* ctx, uint32_t input,
                                const sl_batch* batch) {
  (void)self, (void)input;
  for (size_t i = 0; i < batch->count; ++i) {
    if (sl_batch_at(batch, i)->value.kind == SL_KIND_STRING) {
      return SL_INVALID_ARGUMENT; /* no set_error: the operator cannot tell why it stopped */
    }
  }
  return host->emit(ctx, batch->messages, batch->count);
}

static const sl_node_type crash_on_null = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "crash_on_null",
    .doc = "Passes elements on; crashes on null.",
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create_empty,
    .destroy = destroy_nothing,
    .process = crash_process,
};
static const sl_node_type silent_error = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "silent_error",
    .doc = "Passes elements on; fails on strings without a message.",
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create_empty,
    .destroy = destroy_nothing,
    .process = silent_process,
};

BROKEN_PLUGIN("broken_crash", &crash_on_null, &silent_error)
