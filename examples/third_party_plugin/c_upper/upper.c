/* "uppercase": ASCII upper-case of string elements, in plain C11 against sluice.h alone. */
#include <stdlib.h>
#include <sluice/sluice.h>

static const sl_host_api* host; /* Set by the entry point; valid until the plugin unloads. */
static sl_status create(const sl_node_init* init, void** self) {
  sl_value drop; /* The host checked the config against .params below and added defaults. */
  *self = (void*)(intptr_t)(host->object_get(init->config, "drop_others", 11, &drop) && drop.as.i);
  return SL_OK; /* The flag is all the state there is: destroy has nothing to free. */
}
static void destroy(void* self) { (void)self; }
static sl_status process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  sl_status st = SL_OK;
  for (size_t i = 0; i < batch->count && st == SL_OK; ++i) {
    sl_message msg = *sl_batch_at(batch, i); /* Borrowed; emit borrows it in turn. */
    sl_str s = host->value_str(msg.value);
    char* up = msg.value.kind == SL_KIND_STRING ? malloc(s.size + 1) : NULL; /* NULL: other kind */
    if (msg.value.kind == SL_KIND_STRING && !up) return SL_RESOURCE_EXHAUSTED;
    for (size_t j = 0; up && j < s.size; ++j)
      up[j] = (char)(s.data[j] >= 'a' && s.data[j] <= 'z' ? s.data[j] - 32 : s.data[j]);
    if (up) msg.value = host->string_create(up, s.size); /* Owned: released after emit. */
    if (up || !self) st = host->emit(ctx, &msg, 1);      /* Non-strings: as they came. */
    if (up) host->value_release(msg.value);
    free(up);
  }
  return (void)input, st;
}
/* clang-format off */
static const sl_node_type upper = {.struct_size = sizeof(sl_node_type), .role = SL_ROLE_OPERATOR,
    .name = "uppercase", .doc = "ASCII upper-case of strings.", .min_inputs = 1, .max_inputs = 1,
    .params = (const sl_param[]){{.struct_size = sizeof(sl_param), .name = "drop_others",
        .type = SL_PARAM_BOOL, .default_json = "false", .doc = "Drop non-strings."}},
    .param_count = 1, .create = create, .destroy = destroy, .process = process};
static const sl_plugin plugin = {.struct_size = sizeof(sl_plugin), .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR, .name = "c_upper", .version = "1.0.0", .doc = "An example in C.",
    .node_types = (const sl_node_type* const[]){&upper}, .node_type_count = 1};
SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) { host = h; return &plugin; }
/* clang-format on */
