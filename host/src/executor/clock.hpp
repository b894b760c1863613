// The task's clock. Plugins never read the OS clock: the host hands them time
// (now_ns) and timers, so `sluiced test` can run a graph on a virtual clock
// that only moves when the test says so.
#pragma once

#include <chrono>
#include <cstdint>

namespace sluice::host {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time for plugins: ns since the Unix epoch.
  virtual int64_t now_ns() const = 0;
  // Time that timers are scheduled on: monotonic ns from an arbitrary origin.
  virtual int64_t monotonic_ns() const = 0;
  // True when time moves only through advance() (test mode).
  virtual bool is_virtual() const = 0;
};

class RealClock final : public Clock {
 public:
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t monotonic_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  bool is_virtual() const override { return false; }
};

class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(int64_t start_ns) : now_(start_ns) {}
  int64_t now_ns() const override { return now_; }
  int64_t monotonic_ns() const override { return now_; }
  bool is_virtual() const override { return true; }
  void set(int64_t ns) { now_ = ns; }

 private:
  int64_t now_;
};

}  // namespace sluice::host
