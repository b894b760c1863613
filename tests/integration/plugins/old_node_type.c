/* A plugin built against an older, smaller sl_node_type: its node type struct is a
 * prefix of today's (fields up to and including `process`), struct_size says so, and the
 * plugin declares ABI minor 0. The host must read only that prefix (treating on_timer,
 * on_input_end, finish, stop, snapshot and restore as absent) and run the node.
 *
 * `old_scale` multiplies int elements by `factor` (default 10); others pass unchanged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sluice/sluice.h>

/* The layout of sl_node_type up to `process`, as an older SDK would have declared it. */
typedef struct it_old_node_type {
  uint32_t struct_size;
  int32_t role;
  const char* name;
  const char* doc;
  const sl_param* params;
  uint32_t param_count;
  uint32_t flags;
  int32_t min_inputs;
  int32_t max_inputs;
  sl_status (*create)(const sl_node_init* init, void** out_self);
  void (*destroy)(void* self);
  sl_status (*start)(void* self, sl_context* ctx);
  sl_status (*poll)(void* self, sl_context* ctx, uint32_t budget, int32_t* out_state);
  sl_status (*process)(void* self, sl_context* ctx, uint32_t input_index, const sl_batch* batch);
} it_old_node_type;

_Static_assert(sizeof(it_old_node_type) < sizeof(sl_node_type), "must be a strict prefix");
_Static_assert(offsetof(it_old_node_type, process) == offsetof(sl_node_type, process),
               "must match today's layout");

static const sl_host_api* host;

/* What lies in memory right after the old struct: a host that reads past struct_size
 * (on_timer, on_input_end, finish, stop, ...) finds these instead of NULL and calls one,
 * which says so loudly and aborts. */
#define IT_POISON_MSG "it_old_node_type: BUG: the host read sl_node_type fields past struct_size\n"
static sl_status poisoned(void* self, sl_context* ctx) {
  (void)self, (void)ctx;
  fputs(IT_POISON_MSG, stderr);
  abort();
}

static sl_status create(const sl_node_init* init, void** self) {
  sl_value factor;
  int64_t f = 10;
  if (host->object_get(init->config, "factor", 6, &factor) && factor.kind == SL_KIND_INT) {
    f = factor.as.i;
  }
  *self = (void*)(intptr_t)f;
  return SL_OK;
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  int64_t factor = (int64_t)(intptr_t)self;
  (void)input;
  for (size_t i = 0; i < batch->count; ++i) {
    sl_message m = *sl_batch_at(batch, i);
    if (m.value.kind == SL_KIND_INT) m.value = sl_int(m.value.as.i * factor);
    sl_status st = host->emit(ctx, &m, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}

static const sl_param params[] = {{.struct_size = sizeof(sl_param),
                                   .name = "factor",
                                   .type = SL_PARAM_INT,
                                   .default_json = "10",
                                   .doc = "What int elements are multiplied by."}};
/* The old struct, followed by poison where today's later fields would be. */
struct it_old_with_poison {
  it_old_node_type type;
  sl_status (*poison[8])(void* self, sl_context* ctx);
};
static const struct it_old_with_poison old_scale = {
    .type = {.struct_size = sizeof(it_old_node_type),
             .role = SL_ROLE_OPERATOR,
             .name = "old_scale",
             .doc = "Built with a smaller sl_node_type.",
             .params = params,
             .param_count = 1,
             .min_inputs = 1,
             .max_inputs = 1,
             .create = create,
             .destroy = destroy,
             .process = process},
    .poison = {poisoned, poisoned, poisoned, poisoned, poisoned, poisoned, poisoned, poisoned}};
_Static_assert(offsetof(struct it_old_with_poison, poison) == sizeof(it_old_node_type),
               "the poison must follow the old struct directly");
static const sl_node_type* const types[] = {(const sl_node_type*)(const void*)&old_scale.type};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = 0,
                                 .min_host_minor = 0,
                                 .name = "it_old_node_type",
                                 .version = "0.0.1",
                                 .doc = "Integration test: a plugin with an older sl_node_type.",
                                 .node_types = types,
                                 .node_type_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
