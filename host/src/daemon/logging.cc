#include "daemon/logging.hpp"

#include <sys/stat.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace sluice::host {

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

void setup_logging(const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (stderr_is_journal()) {
    // journald adds the time, unit and pid; the sink maps levels to priorities.
    logger = std::make_shared<spdlog::logger>(
        "sluiced", std::make_shared<spdlog::sinks::systemd_sink_mt>("sluiced"));
  } else {
    logger = spdlog::stderr_color_mt("sluiced");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

}  // namespace sluice::host
