target_sources(sluice_host_core PRIVATE
  src/admin/http_server.cc
  src/admin/admin_endpoint.cc
  src/admin/metrics.cc
  src/admin/graph_page.cc)
