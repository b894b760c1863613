// The plugins of this build (core_ops, kafka...) loaded into a test's registry from the
// build's plugin directory: SLUICE_TEST_PLUGIN_DIR, which tests/unit/CMakeLists.txt defines
// for the test targets that depend on a plugin target.
#pragma once

#include "executor/host_api.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"

#include <filesystem>
#include <string_view>

#ifndef SLUICE_TEST_PLUGIN_DIR
#error "SLUICE_TEST_PLUGIN_DIR must name the build's plugin directory"
#endif

namespace sluice::test_support {

/// Loads `file_name` ("libsluice_core_ops.so") of the build's plugin directory into `registry`,
/// as the daemon would. The error names the file and why.
inline host::Status load_build_plugin(host::PluginRegistry& registry, std::string_view file_name) {
  host::PluginLoader loader(registry, host::host_api_table());
  return loader.load_file(std::filesystem::path(SLUICE_TEST_PLUGIN_DIR) / file_name);
}

}  // namespace sluice::test_support
