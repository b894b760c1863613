// What the admin endpoint reports about a running pipeline: Prometheus text
// (/metrics) and the compact JSON the live page polls (/stats). Both read the
// tasks' counters (relaxed atomics written by the task threads) without
// stopping anything, so a scrape sees each counter at some recent instant.
// Control thread.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::host {

class PipelineRunner;

// Daemon-wide facts that are not in a runner.
struct DaemonFacts {
  std::string state;        // "starting", "running", "reloading", "stopping"
  uint64_t generation = 0;  // +1 per graph started (reloads)
  uint64_t reloads_ok = 0;
  uint64_t reloads_rejected = 0;
  int64_t started_unix_ms = 0;  // when the current graph started
};

// Prometheus text exposition format 0.0.4. `runner` may be null (between
// graphs during a reload): only the daemon's own metrics are written then.
[[nodiscard]] std::string render_prometheus(const PipelineRunner* runner, const DaemonFacts& facts);

// {"generation", "state", "time_ms", "pipeline", "nodes": [{"id", "role", "type",
//  "in", "out", "errors", "skipped", "dead_letters", "backpressure_s", "paused",
//  "watermark_ms" (null, "end" or ms since the epoch: the lowest over the tasks), "late",
//  "bytes_in", "bytes_out", "backpressured" (signalling back-pressure now, in some task),
//  "held" (a source that back-pressure holds now), "holding" (a back-pressuring node: the
//  ids of the held sources upstream of it)}]}
// Counters are sums over the tasks.
[[nodiscard]] std::string render_stats_json(const PipelineRunner* runner, const DaemonFacts& facts);

}  // namespace sluice::host
