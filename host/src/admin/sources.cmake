target_sources(sluice_host_core PRIVATE
  src/admin/http_server.cc
  src/admin/admin_endpoint.cc
  src/admin/metrics.cc
  src/admin/graph_page.cc)
# The HTTP request reader is the net plugin's (header-only; plugins/net/http_request_reader.hpp):
# one implementation of the request bounds for both servers and the fuzz target.
target_include_directories(sluice_host_core PRIVATE ${PROJECT_SOURCE_DIR}/plugins)
# GCC 12 reports a false -Wmaybe-uninitialized inside Beast's basic_parser (driven by the
# reader) under ASan/UBSan; the warning is in Boost's code (see plugins/net/CMakeLists.txt).
set_source_files_properties(src/admin/http_server.cc PROPERTIES COMPILE_OPTIONS
                            -Wno-maybe-uninitialized)
