// Secrets never reach the log: every line the default logger writes (the host's, and the
// plugins' through sl_host_api.log) has each secret of the running config replaced by
// "<redacted>" before any sink sees it (graph/redact.hpp, redact_text). A plugin's error
// message that quotes its password is logged redacted.
#pragma once

#include <string>
#include <vector>

namespace sluice::host {

// Puts a redacting sink in front of the default logger's sinks (once; later calls only
// replace the list) and makes `secrets` the texts it redacts. Called with each graph's
// GraphSpec::secrets (start, reload: the old graph's secrets stay in the list, a reload
// that fails may still log them). Thread-safe.
void set_log_secrets(const std::vector<std::string>& secrets);

}  // namespace sluice::host
