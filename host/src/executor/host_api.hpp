// The sl_host_api table: the one way plugins reach the host.
#pragma once

#include "registry/plugin_registry.hpp"

#include <sluice/sluice.h>

namespace sluice::host {

// The process-wide table handed to every plugin (static storage).
const sl_host_api* host_api_table();

// The registry function_bind resolves names in. Set once at start-up, before
// any task is created; read-only afterwards.
void set_function_registry(const PluginRegistry* registry);

}  // namespace sluice::host
