// Structured fields for one log call: `log_with(level, {{"node", id}}, "...", args)` logs
// as spdlog::log does and hands the fields to the formatter, which writes them as members
// of the JSON object under `--log-format json` (daemon/logging.hpp) and ignores them in
// text form (the message names the node already). Loggers are synchronous, so the
// formatter runs on the calling thread and reads the fields from a thread_local.
#pragma once

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>

namespace sluice::host {

struct LogField {
  std::string_view key;  // a JSON member name: "node", "type", ...
  std::string_view value;
};

namespace detail {
inline thread_local std::span<const LogField> t_log_fields;
}  // namespace detail

// The fields of the log call running on this thread (empty outside log_with). Valid only
// while the formatter runs.
[[nodiscard]] inline std::span<const LogField> current_log_fields() noexcept {
  return detail::t_log_fields;
}

template <typename... Args>
void log_with(spdlog::level::level_enum level, std::initializer_list<LogField> fields,
              spdlog::format_string_t<Args...> format, Args&&... args) {
  struct Restore {
    std::span<const LogField> saved = detail::t_log_fields;
    ~Restore() { detail::t_log_fields = saved; }
  } restore;
  detail::t_log_fields = std::span<const LogField>(fields.begin(), fields.size());
  spdlog::log(level, format, std::forward<Args>(args)...);
}

}  // namespace sluice::host
