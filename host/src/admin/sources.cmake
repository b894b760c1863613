target_sources(sluice_host_core PRIVATE
  src/admin/http_server.cc
  src/admin/admin_endpoint.cc
  src/admin/metrics.cc
  src/admin/process_metrics.cc
  src/admin/graph_page.cc)
# The HTTP request reader (lib/http/http_request_reader.hpp, header-only): one implementation
# of the request bounds for both servers and the fuzz target.
target_link_libraries(sluice_host_core PRIVATE sluice_http)
# GCC 12 reports a false -Wmaybe-uninitialized inside Beast's basic_parser (driven by the
# reader) under ASan/UBSan; the warning is in Boost's code (see plugins/net/CMakeLists.txt).
set_source_files_properties(src/admin/http_server.cc PROPERTIES COMPILE_OPTIONS
                            -Wno-maybe-uninitialized)
