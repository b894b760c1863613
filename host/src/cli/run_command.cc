#include "cli/run_command.hpp"

#include "executor/clock.hpp"
#include "executor/task.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace sluice::host {

int run_pipeline(const LoadedPipeline& pipeline) {
  const GraphSpec& spec = pipeline.spec;
  RealClock clock;
  const uint32_t task_count = spec.runtime.tasks;

  std::vector<std::unique_ptr<Task>> tasks;
  for (uint32_t i = 0; i < task_count; ++i) {
    tasks.push_back(
        std::make_unique<Task>(spec, TaskOptions{spec.runtime.batch_size, i, task_count, &clock}));
  }

  boost::asio::io_context control;  // the main thread: signals and shutdown deadline
  std::vector<Status> results(task_count);
  size_t finished = 0;
  bool stopping = false;

  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < task_count; ++i) {
    threads.emplace_back([&, i] {
      Task& task = *tasks[i];
      Status status = task.create();
      if (status.is_ok()) status = task.start();
      if (status.is_ok()) status = task.run();
      boost::asio::post(control, [&, i, status] {
        results[i] = status;
        if (!status.is_ok() && !stopping) {
          // One failed task stops the others: the pipeline is one unit.
          stopping = true;
          for (auto& t : tasks) t->request_stop();
        }
        if (++finished == task_count) control.stop();
      });
    });
  }

  boost::asio::signal_set signals(control, SIGINT, SIGTERM);
  boost::asio::steady_timer deadline(control);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int signo) {
        if (ec) return;
        if (stopping) {
          spdlog::warn("second signal ({}): exiting without waiting for the drain", signo);
          std::_Exit(k_exit_runtime_error);
        }
        stopping = true;
        spdlog::info("received {}: stopping gracefully (timeout {} ms)",
                     signo == SIGINT ? "SIGINT" : "SIGTERM", spec.runtime.shutdown_timeout_ms);
        for (auto& t : tasks) t->request_stop();
        deadline.expires_after(std::chrono::milliseconds(spec.runtime.shutdown_timeout_ms));
        deadline.async_wait([&](const boost::system::error_code& e) {
          if (e) return;
          spdlog::error("graceful stop did not finish within shutdown_timeout_ms = {}; exiting",
                        spec.runtime.shutdown_timeout_ms);
          std::_Exit(k_exit_runtime_error);
        });
        signals.async_wait(on_signal);
      };
  signals.async_wait(on_signal);

  spdlog::info("pipeline '{}' running ({} task{})", spec.name, task_count,
               task_count == 1 ? "" : "s");
  control.run();
  for (auto& t : threads) t.join();

  int exit_code = k_exit_ok;
  for (const Status& s : results) {
    if (!s.is_ok()) {
      spdlog::error("{}", s.message());
      exit_code = k_exit_runtime_error;
    }
  }
  tasks.clear();  // destroy nodes (close files, release plugins' resources) before exit
  if (exit_code == k_exit_ok) spdlog::info("pipeline '{}' finished", spec.name);
  return exit_code;
}

}  // namespace sluice::host
