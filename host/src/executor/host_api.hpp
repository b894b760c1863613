// The sl_host_api table: the one way plugins reach the host.
#pragma once

#include <sluice/sluice.h>

namespace sluice::host {

// The process-wide table handed to every plugin (static storage).
const sl_host_api* host_api_table();

}  // namespace sluice::host
