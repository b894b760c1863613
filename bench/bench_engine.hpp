// What the in-process benchmarks share: a registry with the build's core_ops plugin and the
// benchmark's own node types, a real clock, and graphs validated from TOML text. A failure
// here is a broken build, not a result: it prints why and exits 2.
#pragma once

#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#ifndef SLUICE_BENCH_PLUGIN_DIR
#error "SLUICE_BENCH_PLUGIN_DIR must name the build's plugin directory"
#endif

namespace sluice::host::bench {

struct Engine {
  std::shared_ptr<PluginRegistry> registry = std::make_shared<PluginRegistry>();
  RealClock clock;
};

/// An engine with core_ops loaded from the build, and `nodes` (the benchmark's own types).
inline Engine* make_engine(const sl_plugin& nodes) {
  auto* engine = new Engine;
  PluginLoader loader(*engine->registry, host_api_table());
  const auto file = std::filesystem::path(SLUICE_BENCH_PLUGIN_DIR) / "libsluice_core_ops.so";
  if (Status loaded = loader.load_file(file); !loaded.is_ok()) {
    std::fprintf(stderr, "cannot load %s: %s\n", file.c_str(), loaded.message().c_str());
    std::exit(2);
  }
  if (Status added = engine->registry->add_plugin(&nodes, "<bench>", nullptr); !added.is_ok()) {
    std::fprintf(stderr, "bench nodes: %s\n", added.message().c_str());
    std::exit(2);
  }
  return engine;
}

/// The validated graph of `toml` (`file_name` names it in messages), bound to the engine's
/// plugins.
inline GraphSpec load_graph(const Engine& engine, const std::string& toml, const char* file_name) {
  auto doc = parse_config_string(toml, file_name);
  if (!doc.ok()) {
    std::fprintf(stderr, "bench config does not parse:\n%s\n", toml.c_str());
    std::exit(2);
  }
  auto spec = validate_config(*doc.value, *engine.registry);
  if (!spec.value) {
    for (const auto& d : spec.diagnostics) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    std::exit(2);
  }
  spec.value->registry = engine.registry;  // the functions the operators bind
  return std::move(*spec.value);
}

}  // namespace sluice::host::bench
