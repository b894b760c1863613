target_sources(sluice_host_core PRIVATE src/registry/plugin_registry.cc src/registry/plugin_loader.cc
  src/registry/plugin_cache.cc)
