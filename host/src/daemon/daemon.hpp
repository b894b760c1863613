// `sluiced run` as a long-running service: the control loop (an io_context on
// the main thread) that owns the running graph (a PipelineRunner), signals
// (SIGTERM/SIGINT stop, SIGHUP reloads), the shutdown deadline, the systemd
// notify protocol and watchdog, and the admin endpoint.
//
// Lifecycle: start graph -> READY=1 -> [SIGHUP: RELOADING=1, validate; invalid -> keep
// running; valid -> a live reload (the nodes that did not change keep running: the new
// ones are created, the replaced ones finish, the new ones start) or, when the graph
// cannot change in place, drain the old graph and start the new one; READY=1. A new node
// that fails to start puts the previous graph back in place (a drained graph: the previous
// config starts again)] -> SIGTERM: STOPPING=1, drain, exit.
#pragma once

#include "admin/admin_endpoint.hpp"
#include "admin/metrics.hpp"
#include "daemon/systemd_notify.hpp"
#include "executor/clock.hpp"
#include "pipeline/live_reload.hpp"
#include "pipeline/pipeline_loader.hpp"
#include "pipeline/pipeline_runner.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::host {

struct DaemonOptions {
  // The config files and directories (every *.toml in it), read again on SIGHUP: a file
  // added to a directory since is part of the new config.
  std::vector<std::filesystem::path> config;
  std::vector<std::filesystem::path> plugin_dirs;
  // The process exit code when the daemon gives up waiting (a second SIGTERM, a
  // drain past shutdown_timeout_ms) and exits at once.
  int forced_exit_code = 1;
};

class Daemon {
 public:
  Daemon(LoadedPipeline pipeline, DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Extension points, set before run(): hooks for every graph this daemon
  // starts, and more Prometheus text for /metrics.
  RunnerHooks& hooks() { return hooks_; }
  void set_extra_metrics(std::function<std::string()> f) { extra_metrics_ = std::move(f); }
  boost::asio::io_context& control() { return control_; }

  // Runs until the graph ends or a stop finishes: OK when it ended (its sources were
  // exhausted, or a signal's drain finished), the failure otherwise.
  Status run();

 private:
  void start_graph();
  void on_graph_running();
  void on_graph_finished(Status status);
  void on_signal(const boost::system::error_code& ec, int signo);
  void reload();
  // A validated config whose plan allows a live reload, until it runs.
  struct PendingLiveReload {
    std::unique_ptr<LoadedPipeline> next;
    LiveReloadPlan plan;
    std::chrono::steady_clock::time_point give_up;  // then drained instead
  };
  // How long a live reload waits for checkpoint epochs to let it in (each takes ms).
  static constexpr std::chrono::seconds k_live_reload_patience{5};
  // live_reload, tried again every 10 ms while a checkpoint epoch runs (until give_up:
  // then, or when it cannot change in place, the graph is drained instead).
  void try_live_reload(PendingLiveReload pending);
  enum class LiveReloadOutcome {
    done,        // applied, rejected (a create failed) or rolled back: logged, READY=1 sent
    busy,        // a checkpoint epoch runs: nothing happened, `next` is left to the caller
    impossible,  // it cannot change in place after all (a node has ended): the same
  };
  // Replaces the running graph in place with `next` (pipeline/live_reload.hpp).
  LiveReloadOutcome live_reload(std::unique_ptr<LoadedPipeline>& next,
                                const std::vector<std::optional<size_t>>& kept_from,
                                const std::string& summary);
  // Drains the running graph, then starts `next` (on_graph_finished).
  void drain_for_reload(std::unique_ptr<LoadedPipeline> next, const std::string& why);
  // A reload's new graph failed before it ran: start the previous one again.
  void restore_previous(const Status& failure);
  void begin_stop();
  void arm_deadline(const char* what);
  void watchdog_tick();
  [[nodiscard]] DaemonFacts facts() const;
  [[nodiscard]] bool ready() const;
  [[nodiscard]] std::string running_status() const;

  DaemonOptions options_;
  RunnerHooks hooks_;
  std::function<std::string()> extra_metrics_;
  boost::asio::io_context control_;
  RealClock clock_;
  SystemdNotifier notifier_;
  std::unique_ptr<LoadedPipeline> pipeline_;  // the running graph's config and plugins
  std::unique_ptr<PipelineRunner> runner_;
  std::unique_ptr<LoadedPipeline> next_;  // a validated reload waiting for the drain
  // The graph a reload replaced, until the new one runs: started again if the new one fails
  // first.
  std::unique_ptr<LoadedPipeline> previous_;
  // Graphs a live reload replaced: the running nodes they created stay in the runner (their
  // plugins, strings and configs with them) until it ends.
  std::vector<std::unique_ptr<LoadedPipeline>> superseded_;
  std::unique_ptr<AdminEndpoint> admin_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer deadline_;
  boost::asio::steady_timer watchdog_;
  boost::asio::steady_timer live_retry_;
  std::optional<PendingLiveReload> pending_live_;
  std::string last_reload_;  // appended to STATUS=: the last reload's outcome
  DaemonFacts facts_;
  Status outcome_;
  bool stopping_ = false;   // SIGTERM/SIGINT: no new graph will start
  bool reloading_ = false;  // draining the old graph for next_
  bool live_ = true;        // the last watchdog check found every task alive
};

}  // namespace sluice::host
