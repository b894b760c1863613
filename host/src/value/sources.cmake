target_sources(sluice_host_core PRIVATE src/value/value.cc src/value/json.cc
                                        src/value/json_ondemand.cc
                                        src/value/block_cache.cc)
