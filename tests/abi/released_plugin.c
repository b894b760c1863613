/* One plugin source, built against every released sluice.h (tests/abi/released/1.N/, each
 * a verbatim copy of the header as it was when that minor landed) and loaded, all of them
 * side by side, by today's host (abi_released_headers). What a plugin author kept on an old
 * SDK must keep working: the struct layouts of that minor, its param stride, a stateful
 * node's snapshot and restore, a named function.
 *
 * RELEASED_TAG (e.g. v1_0) prefixes every name, so that the builds can load together:
 *   <tag>_scale  operator: int elements times `factor` (default 2; from 1.2 on the param
 *                declares the constraint factor >= 1, which today's validate then checks);
 *   <tag>_count  stateful operator: emits how many elements it has seen (its state);
 *   <tag>_add    map function: x + `n` (default 1). */
#include <sluice/sluice.h>

#include <stdint.h>
#include <stdlib.h>

#define RELEASED_STR2(x) #x
#define RELEASED_STR(x) RELEASED_STR2(x)
#define NAME(suffix) RELEASED_STR(RELEASED_TAG) "_" suffix

static const sl_host_api* host;

static int64_t config_int(sl_value config, const char* key, size_t key_len, int64_t fallback) {
  sl_value v;
  if (host->object_get(config, key, key_len, &v) && v.kind == SL_KIND_INT) return v.as.i;
  return fallback;
}

/* scale: the factor lives in the state pointer itself. */
static sl_status scale_create(const sl_node_init* init, void** self) {
  int64_t* factor = malloc(sizeof *factor);
  if (factor == NULL) return SL_RESOURCE_EXHAUSTED;
  *factor = config_int(init->config, "factor", 6, 2);
  *self = factor;
  return SL_OK;
}
static void scale_destroy(void* self) { free(self); }
static sl_status scale_process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  const int64_t factor = *(const int64_t*)self;
  size_t i;
  (void)input;
  for (i = 0; i < batch->count; ++i) {
    sl_message m = *sl_batch_at(batch, i);
    sl_status st;
    if (m.value.kind == SL_KIND_INT) m.value = sl_int(m.value.as.i * factor);
    st = host->emit(ctx, &m, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}

/* count: a running count, saved and restored by the checkpoint. */
typedef struct count_state {
  int64_t seen;
} count_state;
static sl_status count_create(const sl_node_init* init, void** self) {
  count_state* s = calloc(1, sizeof *s);
  (void)init;
  if (s == NULL) return SL_RESOURCE_EXHAUSTED;
  *self = s;
  return SL_OK;
}
static void count_destroy(void* self) { free(self); }
static sl_status count_process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  count_state* s = self;
  size_t i;
  (void)input;
  for (i = 0; i < batch->count; ++i) {
    sl_message m = *sl_batch_at(batch, i);
    sl_status st;
    m.value = sl_int(++s->seen);
    st = host->emit(ctx, &m, 1);
    if (st != SL_OK) return st;
  }
  return SL_OK;
}
static sl_status count_snapshot(void* self, sl_context* ctx, sl_value* out) {
  (void)ctx;
  *out = sl_int(((count_state*)self)->seen);
  return SL_OK;
}
static sl_status count_restore(void* self, sl_context* ctx, sl_value state) {
  if (state.kind != SL_KIND_INT) {
    static const char msg[] = "count: the saved state is not an int";
    host->set_error(ctx, msg, sizeof msg - 1);
    return SL_INVALID_ARGUMENT;
  }
  ((count_state*)self)->seen = state.as.i;
  return SL_OK;
}

/* add: x + n, with n from the args at bind. */
typedef struct add_args {
  int64_t n;
} add_args;
static sl_status add_bind(const sl_function_init* init, void** self) {
  add_args* a = malloc(sizeof *a);
  if (a == NULL) return SL_RESOURCE_EXHAUSTED;
  a->n = config_int(init->args, "n", 1, 1);
  *self = a;
  return SL_OK;
}
static void add_unbind(void* self) { free(self); }
static sl_status add_call(void* self, sl_context* ctx, const sl_value* argv, uint32_t argc,
                          sl_value* out) {
  (void)argc;
  if (argv[0].kind != SL_KIND_INT) {
    static const char msg[] = "add: not an int";
    host->set_error(ctx, msg, sizeof msg - 1);
    return SL_INVALID_ARGUMENT;
  }
  *out = sl_int(argv[0].as.i + ((const add_args*)self)->n);
  return SL_OK;
}

#if SL_ABI_MINOR >= 2
static const sl_param scale_params[] = {{.struct_size = sizeof(sl_param),
                                         .name = "factor",
                                         .type = SL_PARAM_INT,
                                         .flags = SL_PARAM_HAS_MIN,
                                         .default_json = "2",
                                         .doc = "What int elements are multiplied by.",
                                         .min_int = 1}};
#else
static const sl_param scale_params[] = {{.struct_size = sizeof(sl_param),
                                         .name = "factor",
                                         .type = SL_PARAM_INT,
                                         .default_json = "2",
                                         .doc = "What int elements are multiplied by."}};
#endif
static const sl_param add_params[] = {{.struct_size = sizeof(sl_param),
                                       .name = "n",
                                       .type = SL_PARAM_INT,
                                       .default_json = "1",
                                       .doc = "What is added."}};

static const sl_node_type scale_type = {.struct_size = sizeof(sl_node_type),
                                        .role = SL_ROLE_OPERATOR,
                                        .name = NAME("scale"),
                                        .doc = "Multiplies int elements by factor.",
                                        .params = scale_params,
                                        .param_count = 1,
                                        .min_inputs = 1,
                                        .max_inputs = 1,
                                        .create = scale_create,
                                        .destroy = scale_destroy,
                                        .process = scale_process};
static const sl_node_type count_type = {.struct_size = sizeof(sl_node_type),
                                        .role = SL_ROLE_OPERATOR,
                                        .name = NAME("count"),
                                        .doc = "Emits how many elements it has seen.",
                                        .flags = SL_NODE_STATEFUL,
                                        .min_inputs = 1,
                                        .max_inputs = 1,
                                        .create = count_create,
                                        .destroy = count_destroy,
                                        .process = count_process,
                                        .snapshot = count_snapshot,
                                        .restore = count_restore};
static const sl_function_def add_function = {.struct_size = sizeof(sl_function_def),
                                             .kind = SL_FUNCTION_MAP,
                                             .name = NAME("add"),
                                             .doc = "x + n.",
                                             .params = add_params,
                                             .param_count = 1,
                                             .min_arity = 1,
                                             .max_arity = 1,
                                             .bind = add_bind,
                                             .unbind = add_unbind,
                                             .call = add_call};

static const sl_node_type* const node_types[] = {&scale_type, &count_type};
static const sl_function_def* const functions[] = {&add_function};

static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin),
                                 .abi_major = SL_ABI_MAJOR,
                                 .abi_minor = SL_ABI_MINOR,
                                 .min_host_minor = 0,
                                 .name = NAME("released"),
                                 .version = "1.0.0",
                                 .doc = "Built against a released sluice.h (tests/abi).",
                                 .node_types = node_types,
                                 .node_type_count = 2,
                                 .functions = functions,
                                 .function_count = 1};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h);
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
