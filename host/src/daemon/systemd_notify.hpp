// The systemd notify protocol (sd_notify(3)) for `Type=notify` units: READY=1,
// STATUS=, WATCHDOG=1, RELOADING=1, STOPPING=1. Every call is a no-op when
// NOTIFY_SOCKET is not set (not run by systemd), so the daemon calls them
// unconditionally. Control thread only.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace sluice::host {

class SystemdNotifier {
 public:
  SystemdNotifier();

  [[nodiscard]] bool enabled() const { return enabled_; }
  // The interval at which WATCHDOG=1 must be sent (WatchdogSec= / WATCHDOG_USEC),
  // or nullopt when the watchdog is off. The daemon pings at half of it.
  [[nodiscard]] std::optional<std::chrono::microseconds> watchdog_interval() const {
    return watchdog_;
  }

  void ready(std::string_view status);      // READY=1 + STATUS=
  void reloading(std::string_view status);  // RELOADING=1 + STATUS=
  void stopping(std::string_view status);   // STOPPING=1 + STATUS=
  void status(std::string_view status);     // STATUS= only
  void watchdog();                          // WATCHDOG=1

 private:
  void send(std::string_view state, std::string_view status);

  bool enabled_ = false;
  std::optional<std::chrono::microseconds> watchdog_;
};

}  // namespace sluice::host
