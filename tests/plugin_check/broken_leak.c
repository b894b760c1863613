/* A deliberately broken plugin for tests/plugin_check: `leaky_create` allocates in create
 * and then refuses `fail = true` without freeing what it allocated (the host does not call
 * destroy after a failed create: create must free its own). Its validate does not refuse
 * that config either, so `sluiced validate` passes a config that create refuses. The kit,
 * given `fail = true` with --bad-config, must reject it: for the validate contract in
 * every build, and under ASan (LeakSanitizer) for the leak (plugin_check.broken_leak). */
#include "broken_plugin.h"

#include <stdlib.h>
#include <string.h>

static sl_status create(const sl_node_init* init, void** self) {
  char* buffer = malloc(4096);
  if (!buffer) return SL_RESOURCE_EXHAUSTED;
  sl_value fail;
  if (host->object_get(init->config, "fail", 4, &fail) && fail.kind == SL_KIND_BOOL && fail.as.i) {
    const char* msg = "leaky_create: fail = true";
    host->set_error(init->ctx, msg, strlen(msg));
    return SL_INVALID_ARGUMENT; /* the bug: buffer is not freed */
  }
  *self = buffer;
  return SL_OK;
}
static void destroy(void* self) { free(self); }

static const sl_param params[] = {
    {.struct_size = sizeof(sl_param),
     .name = "fail",
     .type = SL_PARAM_BOOL,
     .default_json = "false",
     .doc = "Refuse to be created."},
};
static const sl_node_type leaky_create = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "leaky_create",
    .doc = "Passes elements on; leaks when create refuses its config.",
    .params = params,
    .param_count = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create,
    .destroy = destroy,
    .process = pass_on,
};

BROKEN_PLUGIN("broken_leak", &leaky_create)
