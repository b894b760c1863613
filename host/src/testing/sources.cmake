target_sources(sluice_host_core PRIVATE src/testing/pipeline_test.cc)
