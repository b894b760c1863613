target_sources(sluice_host_core PRIVATE
  src/plugin_check/plugin_check.cc
  src/plugin_check/harness.cc
  src/plugin_check/report.cc
  src/plugin_check/declarations.cc
  src/plugin_check/hostile.cc
  src/plugin_check/restore.cc
  src/plugin_check/crash.cc)
