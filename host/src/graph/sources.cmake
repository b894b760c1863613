target_sources(sluice_host_core PRIVATE src/graph/topology.cc src/graph/graph_export.cc
                                         src/graph/redact.cc)
