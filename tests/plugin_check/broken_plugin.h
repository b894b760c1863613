/* What the plugins broken on purpose (broken_*.c) share: the host table, the callbacks of
 * a node that holds nothing and passes its elements on, and the descriptor with its entry
 * point. Each file keeps only the fault it is about. */
#ifndef SLUICE_TESTS_BROKEN_PLUGIN_H
#define SLUICE_TESTS_BROKEN_PLUGIN_H

#include <sluice/sluice.h>

#include <stddef.h>

static const sl_host_api* host; /* set by the entry point */

static inline sl_status create_empty(const sl_node_init* init, void** self) {
  (void)init;
  *self = NULL;
  return SL_OK;
}
static inline void destroy_nothing(void* self) { (void)self; }
static inline sl_status pass_on(void* self, sl_context* ctx, uint32_t input,
                                const sl_batch* batch) {
  (void)self, (void)input;
  return host->emit(ctx, batch->messages, batch->count);
}

/* The plugin NAME with the node types given (pointers), and its entry point. */
#define BROKEN_PLUGIN(NAME, ...)                                        \
  static const sl_node_type* const broken_types[] = {__VA_ARGS__};      \
  static const sl_plugin broken_plugin = {                              \
      .struct_size = sizeof(sl_plugin),                                 \
      .abi_major = SL_ABI_MAJOR,                                        \
      .abi_minor = SL_ABI_MINOR,                                        \
      .min_host_minor = 1,                                              \
      .name = NAME,                                                     \
      .version = "1.0.0",                                               \
      .doc = "Broken on purpose: sluiced plugin-check must reject it.", \
      .node_types = broken_types,                                       \
      .node_type_count = sizeof broken_types / sizeof broken_types[0],  \
  };                                                                    \
  SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {   \
    host = h;                                                           \
    return &broken_plugin;                                              \
  }

#endif
