#pragma once

#include "registry/plugin_registry.hpp"

#include <string>

namespace sluice::host {

// `sluiced plugins`: every loaded plugin with its version, ABI and file, and
// each node type and function with its parameters and docs.
std::string plugins_text(const PluginRegistry& registry);
// The same as one JSON document, for tools (docs/CONFIG.md is generated from it).
std::string plugins_json(const PluginRegistry& registry);

}  // namespace sluice::host
