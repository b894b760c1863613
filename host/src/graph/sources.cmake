target_sources(sluice_host_core PRIVATE src/graph/graph_spec.cc src/graph/topology.cc src/graph/graph_export.cc
                                         src/graph/redact.cc)
