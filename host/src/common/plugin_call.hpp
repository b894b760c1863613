// The host's edge of "no exception crosses the C ABI" (sluice.h) for plugin callbacks that
// return a status: a task's node callbacks (executor/task.hpp, executor/task_epoch.cc) and
// the checkpoint stores' (checkpoint/store.cc). The SDK's C++ layer already catches on the
// plugin's side; an exception that escapes anyway is an ABI violation, caught here as a
// last resort and reported as the callback's failure.
#pragma once

#include <fmt/format.h>

#include <sluice/sluice.h>

#include <exception>
#include <string>
#include <utility>

namespace sluice::host {

// Runs `call` (a plugin callback returning sl_status) and returns its status; an escaped
// exception becomes SL_INTERNAL, with its message written to `error`.
template <class F>
sl_status call_plugin(std::string& error, F&& call) {
  try {
    return std::forward<F>(call)();
  } catch (const std::exception& e) {
    error = fmt::format("plugin let an exception escape (an ABI violation): {}", e.what());
  } catch (...) {
    error = "plugin let an exception escape (an ABI violation)";
  }
  return SL_INTERNAL;
}

}  // namespace sluice::host
