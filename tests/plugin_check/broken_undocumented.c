/* A deliberately broken plugin for tests/plugin_check: `undocumented` has a parameter
 * without a doc, which `sluiced plugins` and docs/CONFIG.md would show blank. The kit must
 * reject it (plugin_check.broken_undocumented). */
#include "broken_plugin.h"

#include <stddef.h>

static const sl_param undocumented_params[] = {
    {.struct_size = sizeof(sl_param), .name = "factor", .type = SL_PARAM_INT, .default_json = "2"},
};
static const sl_node_type undocumented = {
    .struct_size = sizeof(sl_node_type),
    .role = SL_ROLE_OPERATOR,
    .name = "undocumented",
    .doc = "Passes elements on.",
    .params = undocumented_params,
    .param_count = 1,
    .min_inputs = 1,
    .max_inputs = 1,
    .create = create_empty,
    .destroy = destroy_nothing,
    .process = pass_on,
};

BROKEN_PLUGIN("broken_undocumented", &undocumented)
