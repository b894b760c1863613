// The process_* metrics every Prometheus client library exports (the Go and Python
// clients' process collector), read from /proc/self on each scrape: CPU time, resident
// and virtual memory, open and maximum file descriptors, and the start time.
#pragma once

#include <string>

namespace sluice::host {

// Prometheus text for the process_* families; the families whose source cannot be read
// (no /proc) are left out. Any thread.
[[nodiscard]] std::string render_process_metrics();

}  // namespace sluice::host
