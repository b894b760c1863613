#include "daemon/daemon.hpp"

#include "daemon/reload.hpp"
#include "pipeline/live_reload.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>

namespace sluice::host {

namespace {

const char* signal_name(int signo) {
  switch (signo) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

std::string clock_time() { return fmt::format("{:%H:%M:%S}", fmt::localtime(std::time(nullptr))); }

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Daemon::Daemon(LoadedPipeline pipeline, DaemonOptions options)
    : options_(std::move(options)),
      pipeline_(std::make_unique<LoadedPipeline>(std::move(pipeline))),
      signals_(control_, SIGINT, SIGTERM, SIGHUP),
      deadline_(control_),
      watchdog_(control_),
      live_retry_(control_) {
  facts_.state = "starting";
}

Daemon::~Daemon() {
  if (admin_) admin_->stop();
  runner_.reset();  // joins
}

Status Daemon::run() {
  const GraphSpec& spec = pipeline_->spec;
  signals_.async_wait([this](const auto& ec, int signo) { on_signal(ec, signo); });

  if (spec.admin.enabled) {
    AdminBackend backend;
    backend.runner = [this] { return runner_.get(); };
    backend.facts = [this] { return facts(); };
    backend.ready = [this] { return ready(); };
    backend.extra_metrics = [this] { return extra_metrics_ ? extra_metrics_() : std::string(); };
    admin_ = std::make_unique<AdminEndpoint>(control_, spec.admin, std::move(backend));
    auto port = admin_->start();
    if (!port.is_ok()) {
      spdlog::error("{}", port.status().message());
      return port.status();
    }
    const bool v6 = spec.admin.address.find(':') != std::string::npos;
    spdlog::info("admin endpoint listening on http://{}{}{}:{}/{}", v6 ? "[" : "",
                 spec.admin.address, v6 ? "]" : "", port.value(),
                 spec.admin.token.empty() ? "" : " (bearer token required)");
  }
  if (auto interval = notifier_.watchdog_interval()) {
    spdlog::info("systemd watchdog: pinging every {} ms while every task is responsive",
                 interval->count() / 2000);
    watchdog_tick();
  }
  notifier_.status(fmt::format("starting pipeline '{}'", spec.name));
  start_graph();
  // A handler that throws (a bug, or memory running out while answering a request) must
  // not end the daemon: log it and go on. run() may be called again after it threw.
  for (;;) {
    try {
      control_.run();
      break;
    } catch (const std::exception& e) {
      spdlog::error("control loop: a handler failed, continuing: {}", e.what());
    } catch (...) {
      spdlog::error("control loop: a handler failed with an unknown exception, continuing");
    }
  }
  if (runner_) runner_->join();
  return outcome_;
}

void Daemon::start_graph() {
  const GraphSpec& spec = pipeline_->spec;
  ++facts_.generation;
  runner_ = std::make_unique<PipelineRunner>(spec, control_, clock_, hooks_);
  runner_->start([this] { on_graph_running(); },
                 [this](Status s) { on_graph_finished(std::move(s)); });
}

std::string Daemon::running_status() const {
  const GraphSpec& spec = pipeline_->spec;
  std::string s = fmt::format("running '{}': {} nodes, {} task{}", spec.name, spec.nodes.size(),
                              spec.runtime.tasks, spec.runtime.tasks == 1 ? "" : "s");
  if (!last_reload_.empty()) s += "; " + last_reload_;
  return s;
}

void Daemon::on_graph_running() {
  const GraphSpec& spec = pipeline_->spec;
  facts_.state = "running";
  facts_.started_unix_ms = unix_ms();
  if (previous_) {
    // A drained reload's new graph runs: the reload is done.
    previous_.reset();
    ++facts_.reloads_ok;
    last_reload_ = fmt::format("reloaded at {}", clock_time());
  }
  spdlog::info("pipeline '{}' running ({} task{})", spec.name, spec.runtime.tasks,
               spec.runtime.tasks == 1 ? "" : "s");
  notifier_.ready(running_status());
}

void Daemon::on_graph_finished(Status status) {
  const std::string name = pipeline_->spec.name;
  runner_->join();
  for (const Status& s : runner_->results()) {
    if (!s.is_ok()) spdlog::error("{}", s.message());
  }
  runner_.reset();  // destroys the nodes: files closed, plugin resources released
  superseded_.clear();
  if (!status.is_ok() && previous_ && !stopping_) {
    restore_previous(status);
    return;
  }
  if (!status.is_ok()) {
    outcome_ = status;
    next_.reset();
    notifier_.stopping(fmt::format("pipeline '{}' failed: {}", name, status.message()));
    control_.stop();
    return;
  }
  if (reloading_ && !stopping_ && next_) {
    deadline_.cancel();
    reloading_ = false;
    previous_ = std::move(pipeline_);  // until the new graph runs
    pipeline_ = std::move(next_);
    spdlog::info("reload: old graph drained; starting pipeline '{}'", pipeline_->spec.name);
    start_graph();
    return;
  }
  spdlog::info("pipeline '{}' finished", name);
  notifier_.stopping(fmt::format("pipeline '{}' finished", name));
  outcome_ = Status::ok();
  control_.stop();
}

void Daemon::on_signal(const boost::system::error_code& ec, int signo) {
  if (ec) return;
  signals_.async_wait([this](const auto& e, int s) { on_signal(e, s); });
  if (signo == SIGHUP) {
    reload();
    return;
  }
  if (stopping_) {
    spdlog::warn("second signal ({}): exiting without waiting for the drain", signal_name(signo));
    std::_Exit(options_.forced_exit_code);
  }
  spdlog::info("received {}: stopping gracefully (timeout {} ms)", signal_name(signo),
               pipeline_->spec.runtime.shutdown_timeout_ms);
  begin_stop();
}

void Daemon::begin_stop() {
  stopping_ = true;
  facts_.state = "stopping";
  next_.reset();
  pending_live_.reset();
  live_retry_.cancel();
  notifier_.stopping(fmt::format("stopping '{}': draining", pipeline_->spec.name));
  if (runner_) runner_->request_stop();
  arm_deadline("graceful stop");
}

void Daemon::arm_deadline(const char* what) {
  const int64_t ms = pipeline_->spec.runtime.shutdown_timeout_ms;
  deadline_.expires_after(std::chrono::milliseconds(ms));
  deadline_.async_wait(
      [what, ms, code = options_.forced_exit_code](const boost::system::error_code& e) {
        if (e) return;
        spdlog::error("{} did not finish within shutdown_timeout_ms = {}; exiting", what, ms);
        std::_Exit(code);
      });
}

void Daemon::reload() {
  if (stopping_) {
    spdlog::warn("SIGHUP ignored: the daemon is stopping");
    return;
  }
  if (reloading_ || pending_live_) {
    spdlog::warn("SIGHUP ignored: a reload is already in progress");
    return;
  }
  std::string config_names;
  for (const auto& p : options_.config)
    config_names += (config_names.empty() ? "" : ", ") + p.string();
  spdlog::info("received SIGHUP: reloading {}", config_names);
  notifier_.reloading(fmt::format("reloading {}", config_names));
  ReloadCandidate candidate =
      prepare_reload(options_.config, options_.plugin_dirs, pipeline_->spec);
  if (!candidate.pipeline) {
    ++facts_.reloads_rejected;
    last_reload_ = fmt::format("reload rejected at {}: {}", clock_time(), candidate.rejected);
    spdlog::error("reload rejected: {}; the running graph continues", candidate.rejected);
    notifier_.ready(running_status());  // RELOADING=1 is always followed by READY=1
    return;
  }
  if (!runner_ || runner_->finished()) {
    // Nothing runs (the graph is ending on its own): nothing to swap.
    spdlog::warn("reload: no graph is running; nothing to replace");
    notifier_.ready(running_status());
    return;
  }
  std::string why_not;
  if (auto plan = plan_live_reload(pipeline_->spec, candidate.pipeline->spec, &why_not)) {
    try_live_reload(PendingLiveReload{std::move(candidate.pipeline), std::move(*plan),
                                      std::chrono::steady_clock::now() + k_live_reload_patience});
    return;
  }
  drain_for_reload(std::move(candidate.pipeline), why_not);
}

void Daemon::try_live_reload(PendingLiveReload pending) {
  const LiveReloadPlan& plan = pending.plan;
  const std::string summary = fmt::format("kept {} of {} nodes", plan.kept, plan.kept_from.size());
  switch (live_reload(pending.next, plan.kept_from, summary)) {
    case LiveReloadOutcome::done: return;
    case LiveReloadOutcome::impossible:
      drain_for_reload(std::move(pending.next),
                       "the graph cannot change in place now (logged above)");
      return;
    case LiveReloadOutcome::busy: break;
  }
  if (std::chrono::steady_clock::now() >= pending.give_up) {
    drain_for_reload(std::move(pending.next), "a checkpoint epoch did not end in time");
    return;
  }
  // A checkpoint epoch runs: the graph goes on meanwhile (/readyz stays 200), and the
  // reload runs between this epoch and the next.
  pending_live_ = std::move(pending);
  live_retry_.expires_after(std::chrono::milliseconds(10));
  live_retry_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !pending_live_) return;
    PendingLiveReload again = std::move(*pending_live_);
    pending_live_.reset();
    if (stopping_) return;
    if (!runner_ || runner_->finished()) {
      spdlog::warn("reload: no graph is running; nothing to replace");
      notifier_.ready(running_status());
      return;
    }
    try_live_reload(std::move(again));
  });
}

void Daemon::drain_for_reload(std::unique_ptr<LoadedPipeline> next, const std::string& why) {
  // The graph cannot change in place: the old one is drained (its sources end, every
  // finish() runs, sinks flush; with checkpoints: a final checkpoint) and the new one
  // starts, restoring that checkpoint (docs/OPERATIONS.md, "Reload").
  reloading_ = true;
  facts_.state = "reloading";
  next_ = std::move(next);
  spdlog::info("reload: config valid; {}: draining the running graph to start the new one", why);
  runner_->request_stop();
  arm_deadline("draining the old graph for a reload");
}

Daemon::LiveReloadOutcome Daemon::live_reload(std::unique_ptr<LoadedPipeline>& next,
                                              const std::vector<std::optional<size_t>>& kept_from,
                                              const std::string& summary) {
  // The new instances are created while the old graph runs on: one that cannot be created
  // rejects the reload and nothing changed.
  using Refusal = PipelineRunner::LiveRefusal;
  Refusal refusal = Refusal::none;
  if (Status st = runner_->prepare_reconfigure(next->spec, kept_from, refusal); !st.is_ok()) {
    if (refusal == Refusal::busy) return LiveReloadOutcome::busy;
    if (refusal == Refusal::impossible) {
      spdlog::info("reload: not in place: {}", st.message());
      return LiveReloadOutcome::impossible;
    }
    ++facts_.reloads_rejected;
    last_reload_ = fmt::format("reload rejected at {}: {}", clock_time(), st.message());
    spdlog::error("reload rejected: {}; the running graph continues unchanged", st.message());
    notifier_.ready(running_status());
    return LiveReloadOutcome::done;
  }
  previous_ = std::move(pipeline_);
  pipeline_ = std::move(next);
  ++facts_.generation;
  bool rolled_back = false;
  if (Status st = runner_->commit_reconfigure(pipeline_->spec, rolled_back); !st.is_ok()) {
    if (rolled_back) {
      // A new node could not start: every task runs the previous graph again, whose kept
      // nodes never stopped. The new graph stays alive with the runner, as a replaced one
      // does (what its instances left behind may point into it).
      superseded_.push_back(std::move(pipeline_));
      pipeline_ = std::move(previous_);
      --facts_.generation;
      ++facts_.reloads_rejected;
      last_reload_ = fmt::format("reload failed at {}: {}", clock_time(), st.message());
      spdlog::error("reload failed: {}; the previous graph is back in place", st.message());
      notifier_.ready(running_status());
      return LiveReloadOutcome::done;
    }
    // The failed task ends the graph; on_graph_finished starts previous_ again.
    spdlog::error("reload: the new graph failed to start: {}", st.message());
    return LiveReloadOutcome::done;
  }
  superseded_.push_back(std::move(previous_));
  ++facts_.reloads_ok;
  last_reload_ = fmt::format("reloaded at {} ({})", clock_time(), summary);
  spdlog::info("reload: applied in place ({}); pipeline '{}' running", summary,
               pipeline_->spec.name);
  notifier_.ready(running_status());
  return LiveReloadOutcome::done;
}

void Daemon::restore_previous(const Status& failure) {
  ++facts_.reloads_rejected;
  last_reload_ = fmt::format("reload failed at {}: {}", clock_time(), failure.message());
  spdlog::error(
      "reload failed: the new graph did not start ({}); starting the previous config "
      "again",
      failure.message());
  pipeline_ = std::move(previous_);
  reloading_ = false;
  start_graph();
}

void Daemon::watchdog_tick() {
  const auto interval = *notifier_.watchdog_interval();
  bool live = !runner_ || runner_->check_liveness();
  if (live) {
    notifier_.watchdog();
  } else if (live_) {
    // systemd kills the daemon when the pings stay away for WatchdogSec, and
    // Restart= starts it again: a thread stuck in a plugin cannot be stopped
    // from outside, only the process can.
    std::string who = runner_->unresponsive_tasks();
    spdlog::error(
        "{} has not answered for {} ms (stuck in a callback?): withholding the systemd "
        "watchdog ping",
        who.empty() ? "a task" : who, interval.count() / 2000);
  }
  live_ = live;
  watchdog_.expires_after(interval / 2);
  watchdog_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) watchdog_tick();
  });
}

DaemonFacts Daemon::facts() const { return facts_; }

bool Daemon::ready() const {
  return runner_ && runner_->running() && !runner_->stopping() && !reloading_ && !stopping_;
}

}  // namespace sluice::host
