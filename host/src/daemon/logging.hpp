// Where sluiced's log goes: to journald (with priorities, via spdlog's systemd
// sink) when systemd connected our stderr to the journal, to stderr otherwise.
// stdout is never used for logs: it belongs to the pipeline (the print sink)
// and to the tools' output.
#pragma once

#include <string>

namespace sluice::host {

// True when stderr is the journal stream systemd set up (JOURNAL_STREAM names
// stderr's device and inode; see systemd.exec(5)).
[[nodiscard]] bool stderr_is_journal();

// Installs the default logger "sluiced" at `level` (trace ... off).
void setup_logging(const std::string& level);

}  // namespace sluice::host
