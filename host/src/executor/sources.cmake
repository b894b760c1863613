target_sources(sluice_host_core PRIVATE
  src/executor/task.cc
  src/executor/task_epoch.cc
  src/executor/task_key_groups.cc
  src/executor/task_watermarks.cc
  src/executor/task_reconfigure.cc
  src/executor/node_gauges.cc
  src/executor/operator_chain.cc
  src/executor/host_api.cc
  src/executor/io_watches.cc
  src/executor/internal_nodes.cc)
