target_sources(sluice_host_core PRIVATE
  src/cli/pipeline_loader.cc
  src/cli/run_command.cc
  src/cli/plugins_command.cc)
