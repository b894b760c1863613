/* "uppercase": ASCII upper-case of string elements, in plain C11 against sluice.h alone.
 * Other elements pass through as they came, or are dropped when `drop_others` is true.
 * Keys, headers and event times are kept. */
#include <stdlib.h>
#include <string.h>

#include <sluice/sluice.h>

/* The host's function table, stored by the entry point; valid until the plugin unloads. */
static const sl_host_api* host;

typedef struct upper {
  int drop_others;
} upper;

static sl_status create(const sl_node_init* init, void** out_self) {
  /* The host checked the config against `params` below and filled in the default. */
  sl_value drop_others;
  host->object_get(init->config, "drop_others", strlen("drop_others"), &drop_others);

  upper* self = malloc(sizeof *self);
  if (!self) return SL_RESOURCE_EXHAUSTED;
  self->drop_others = drop_others.as.i != 0;
  *out_self = self;
  return SL_OK;
}

static void destroy(void* self) { free(self); }

/* Emits one message whose value is the upper-case copy of `text`. */
static sl_status emit_upper(sl_context* ctx, sl_message message, sl_str text) {
  char* copy = malloc(text.size + 1);
  if (!copy) return SL_RESOURCE_EXHAUSTED;
  for (size_t i = 0; i < text.size; ++i) {
    char c = text.data[i];
    copy[i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
  }
  message.value = host->string_create(copy, text.size); /* owned: released below */
  free(copy);
  sl_status status = host->emit(ctx, &message, 1); /* emit borrows the message */
  host->value_release(message.value);
  return status;
}

static sl_status process(void* self, sl_context* ctx, uint32_t input_index, const sl_batch* batch) {
  const upper* u = self;
  (void)input_index; /* one input */
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* message = sl_batch_at(batch, i); /* borrowed for the call */
    sl_status status = SL_OK;
    if (message->value.kind == SL_KIND_STRING) {
      status = emit_upper(ctx, *message, host->value_str(message->value));
    } else if (!u->drop_others) {
      status = host->emit(ctx, message, 1);
    }
    if (status != SL_OK) return status;
  }
  return SL_OK;
}

static const sl_param params[] = {{
    .struct_size = sizeof(sl_param),
    .name = "drop_others",
    .type = SL_PARAM_BOOL,
    .default_json = "false",
    .doc = "Drop elements that are not strings instead of passing them on.",
}};

static const sl_node_type uppercase = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "uppercase",
    .doc = "ASCII upper-case of strings.",
    .params = params,
    .param_count = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create,
    .destroy = destroy,
    .process = process,
};

static const sl_node_type* const node_types[] = {&uppercase};

static const sl_plugin plugin = {
    .struct_size = sizeof(sl_plugin),
    .abi_major = SL_ABI_MAJOR,
    .abi_minor = SL_ABI_MINOR,
    .name = "c_upper",
    .version = "1.0.0",
    .doc = "Example plugin in C: upper-cases strings.",
    .node_types = node_types,
    .node_type_count = 1,
};

SL_EXPORT const sl_plugin* sluice_plugin_v1(const sl_host_api* h) {
  host = h;
  return &plugin;
}
