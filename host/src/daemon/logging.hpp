// Where sluiced's log goes: to journald (with priorities, via spdlog's systemd
// sink) when systemd connected our stderr to the journal, to stderr otherwise.
// stdout is never used for logs: it belongs to the pipeline (the print sink)
// and to the tools' output.
//
// Two formats (docs/OPERATIONS.md, "Logs"):
//   text  `2026-12-02T07:25:49.123+00:00 info message` (local time with its UTC offset);
//         under journald only the message (journald adds time, unit and pid).
//   json  one object per line: {"time": RFC 3339 with offset, "level", "message",
//         "pipeline" (once known), then the fields of common/log_fields.hpp's log_with
//         ("node", ...)}; under journald the object is the MESSAGE, the level still the
//         PRIORITY. Any bytes in a message give valid JSON (value/json.hpp's escaping).
#pragma once

#include <optional>
#include <string>

namespace sluice::host {

enum class LogFormat { text, json };

struct LogSettings {
  std::string level = "info";  // trace, debug, info, warn, error, critical, off
  LogFormat format = LogFormat::text;
};

// The settings from the flags given (nullopt: not given) and the environment:
// SLUICE_LOG (level) and SLUICE_LOG_FORMAT (text|json); a flag wins over its variable.
// An unknown value in a variable is an error naming it (the flags are checked by CLI11).
struct LogSettingsOrError {
  LogSettings settings;
  std::string error;  // empty when ok
};
[[nodiscard]] LogSettingsOrError log_settings(const std::optional<std::string>& level_flag,
                                              const std::optional<std::string>& format_flag);

// True when stderr is the journal stream systemd set up (JOURNAL_STREAM names
// stderr's device and inode; see systemd.exec(5)).
[[nodiscard]] bool stderr_is_journal();

// Installs the default logger "sluiced" with these settings.
void setup_logging(const LogSettings& settings);

// The pipeline's name, written as "pipeline" in every JSON line from now on (empty:
// none). Thread-safe.
void set_log_pipeline(std::string name);

}  // namespace sluice::host
