#include "daemon/systemd_notify.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sluice::host {

SystemdNotifier::SystemdNotifier() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  enabled_ = socket != nullptr && *socket != '\0';
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if set) is this process.
  if (enabled_ && sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
    watchdog_ = std::chrono::microseconds(usec);
  }
}

void SystemdNotifier::send(std::string_view state, std::string_view status) {
  if (!enabled_) return;
  std::string message(state);
  if (!status.empty()) {
    if (!message.empty()) message += '\n';
    message += "STATUS=";
    // One line: a newline would start another assignment.
    for (char c : status) message += c == '\n' ? ' ' : c;
  }
  int r = sd_notify(0, message.c_str());
  if (r < 0) {
    spdlog::warn("sd_notify({}) failed: {}", state.empty() ? "STATUS" : state,
                 std::string(std::strerror(-r)));
  }
}

void SystemdNotifier::ready(std::string_view status) { send("READY=1", status); }
void SystemdNotifier::reloading(std::string_view status) { send("RELOADING=1", status); }
void SystemdNotifier::stopping(std::string_view status) { send("STOPPING=1", status); }
void SystemdNotifier::status(std::string_view status) { send("", status); }
void SystemdNotifier::watchdog() { send("WATCHDOG=1", ""); }

}  // namespace sluice::host
