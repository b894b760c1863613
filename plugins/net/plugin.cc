// The net plugin: from_tcp and from_http_server, registered in one line.
#include <sluice/sluice.hpp>

#include "net.hpp"

using namespace sluice::net;  // NOLINT(google-build-using-namespace)

SLUICE_PLUGIN("net", "0.1.0",
              "Network sources on the task's own event loop: TCP lines and HTTP bodies",
              SLUICE_NODE_TYPES(FromTcp, FromHttpServer));
