target_sources(sluice_host_core PRIVATE
  src/pipeline/pipeline_loader.cc
  src/pipeline/pipeline_runner.cc
  src/pipeline/live_reload.cc
  src/pipeline/checkpoint_service.cc)
