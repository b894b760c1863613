#include "daemon/logging.hpp"

#include "common/log_fields.hpp"
#include "value/json.hpp"

#include <sys/stat.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <string_view>

namespace sluice::host {
namespace {

// Indexed by spdlog::level::level_enum; JSON's "level" (spdlog's own names say "warning").
constexpr std::array<std::string_view, 7> k_levels = {"trace", "debug",    "info", "warn",
                                                      "error", "critical", "off"};

std::optional<spdlog::level::level_enum> parse_level(std::string_view name) {
  if (name == "warning") return spdlog::level::warn;
  for (int l = spdlog::level::trace; l <= spdlog::level::off; ++l) {
    if (k_levels[static_cast<size_t>(l)] == name) return static_cast<spdlog::level::level_enum>(l);
  }
  return std::nullopt;
}

std::mutex g_pipeline_mutex;
std::string g_pipeline;  // guarded by g_pipeline_mutex

// RFC 3339 local time with milliseconds and the UTC offset: 2026-12-02T07:25:49.123+00:00.
void append_time(std::string& out, spdlog::log_clock::time_point when) {
  using namespace std::chrono;
  const auto since_epoch = when.time_since_epoch();
  const auto secs = floor<seconds>(since_epoch);
  const auto millis = duration_cast<milliseconds>(since_epoch - secs).count();
  const auto t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  localtime_r(&t, &tm);
  const long offset_min = tm.tm_gmtoff / 60;
  const char sign = offset_min < 0 ? '-' : '+';
  const long abs_min = offset_min < 0 ? -offset_min : offset_min;
  fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}{:02}:{:02}",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 millis, sign, abs_min / 60, abs_min % 60);
}

// One JSON object per record: a line on stderr; without the newline as a journal MESSAGE
// (journald's records need no terminator).
class JsonFormatter final : public spdlog::formatter {
 public:
  explicit JsonFormatter(bool newline) : newline_(newline) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string line;
    line.reserve(msg.payload.size() + 96);
    line += "{\"time\":\"";
    append_time(line, msg.time);
    line += "\",\"level\":\"";
    line += k_levels[static_cast<size_t>(msg.level)];
    line += "\",\"message\":";
    json_append_string(line, std::string_view(msg.payload.data(), msg.payload.size()));
    const auto fields = current_log_fields();
    bool has_pipeline = false;
    for (const LogField& f : fields) has_pipeline = has_pipeline || f.key == "pipeline";
    if (!has_pipeline) {
      std::lock_guard lock(g_pipeline_mutex);
      if (!g_pipeline.empty()) {
        line += ",\"pipeline\":";
        json_append_string(line, g_pipeline);
      }
    }
    for (const LogField& f : fields) {
      // The record's own members are not overwritten by a field of the same name.
      if (f.key == "time" || f.key == "level" || f.key == "message") continue;
      line += ',';
      json_append_string(line, f.key);
      line += ':';
      json_append_string(line, f.value);
    }
    line += newline_ ? "}\n" : "}";
    dest.append(line.data(), line.data() + line.size());
  }
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>(newline_);
  }

 private:
  bool newline_;
};

}  // namespace

LogSettingsOrError log_settings(const std::optional<std::string>& level_flag,
                                const std::optional<std::string>& format_flag) {
  LogSettingsOrError out;
  if (level_flag) {
    out.settings.level = *level_flag;
  } else if (const char* env = std::getenv("SLUICE_LOG"); env != nullptr && *env != '\0') {
    if (!parse_level(env)) {
      out.error = fmt::format(
          "SLUICE_LOG={}: not a log level (trace, debug, info, warn, error, critical, off)", env);
      return out;
    }
    out.settings.level = env;
  }
  std::string format = "text";
  if (format_flag) {
    format = *format_flag;
  } else if (const char* env = std::getenv("SLUICE_LOG_FORMAT"); env != nullptr && *env != '\0') {
    format = env;
    if (format != "text" && format != "json") {
      out.error = fmt::format("SLUICE_LOG_FORMAT={}: not a log format (text or json)", env);
      return out;
    }
  }
  out.settings.format = format == "json" ? LogFormat::json : LogFormat::text;
  return out;
}

bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (fstat(2, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

void setup_logging(const LogSettings& settings) {
  const bool json = settings.format == LogFormat::json;
  spdlog::sink_ptr sink;
  const bool journal = stderr_is_journal();
  if (journal) {
    // journald adds the time, unit and pid and maps levels to priorities; in json form
    // the object is the MESSAGE (enable_formatting), so `journalctl -o cat` gives JSON lines.
    sink = std::make_shared<spdlog::sinks::systemd_sink_mt>("sluiced", json);
  } else if (json) {
    sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  }
  if (json) {
    sink->set_formatter(std::make_unique<JsonFormatter>(!journal));
  } else {
    // %z: the UTC offset as +HH:MM, so a line's time is unambiguous across zones.
    sink->set_formatter(
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v"));
  }
  auto logger = std::make_shared<spdlog::logger>("sluiced", std::move(sink));
  logger->set_level(parse_level(settings.level).value_or(spdlog::level::info));
  spdlog::set_default_logger(std::move(logger));
}

void set_log_pipeline(std::string name) {
  std::lock_guard lock(g_pipeline_mutex);
  g_pipeline = std::move(name);
}

}  // namespace sluice::host
