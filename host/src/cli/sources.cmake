target_sources(sluice_host_core PRIVATE
  src/cli/load_and_report.cc
  src/cli/run_command.cc
  src/cli/validate_command.cc
  src/cli/graph_command.cc
  src/cli/plugins_command.cc
  src/cli/test_command.cc
  src/cli/checkpoints_command.cc
  src/cli/plugin_check_command.cc)
