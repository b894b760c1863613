#include "admin/metrics.hpp"

#include "admin/process_metrics.hpp"
#include "executor/node_gauges.hpp"
#include "pipeline/pipeline_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>
#include <vector>

namespace sluice::host {

namespace {

// The sums of one node's counters over every task.
struct NodeTotals {
  uint64_t in = 0, out = 0, errors = 0, skipped = 0, dead_letters = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool backpressured = false;  // signalling back-pressure now, in some task
  bool held = false;           // a source that back-pressure downstream holds now, in some task
  std::array<uint64_t, NodeCounters::k_latency_bounds_ns.size() + 1> buckets{};
  uint64_t latency_sum_ns = 0;
  uint64_t backpressure_ns = 0;
  // Event time: what went out on each side output (by the type's index), and the lowest
  // output watermark over the tasks that have one (SL_NO_WATERMARK: none has).
  std::vector<uint64_t> side_out;
  int64_t watermark_ns = SL_NO_WATERMARK;
  uint64_t late = 0;  // side output "late", if the type has one
};

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

NodeTotals totals(const PipelineRunner& runner, size_t node) {
  NodeTotals t;
  const NodeTypeInfo& type = *runner.spec().nodes[node].info;
  t.side_out.assign(type.side_outputs.size(), 0);
  const int64_t now = steady_now_ns();
  constexpr auto relaxed = std::memory_order_relaxed;
  for (const auto& task : runner.tasks()) {
    const NodeCounters& c = *task->nodes()[node].counters;
    t.in += c.messages_in.load(relaxed);
    t.out += c.messages_out.load(relaxed);
    t.bytes_in += c.bytes_in.load(relaxed);
    t.bytes_out += c.bytes_out.load(relaxed);
    t.held = t.held || c.held.load(relaxed) > 0;
    t.errors += c.errors.load(relaxed);
    t.skipped += c.skipped.load(relaxed);
    t.dead_letters += c.dead_letters.load(relaxed);
    for (size_t b = 0; b < t.buckets.size(); ++b)
      t.buckets[b] += c.latency_buckets[b].load(relaxed);
    t.latency_sum_ns += c.latency_sum_ns.load(relaxed);
    t.backpressure_ns += c.backpressure_ns.load(relaxed);
    int64_t since = c.backpressure_since_ns.load(relaxed);
    if (since > 0) t.backpressured = true;
    if (since > 0 && now > since) t.backpressure_ns += static_cast<uint64_t>(now - since);
    for (size_t k = 0; k < t.side_out.size(); ++k) t.side_out[k] += c.side_out[k].load(relaxed);
    // A task that has no watermark yet (no partition assigned) does not hide the others'.
    if (const int64_t w = c.watermark_ns.load(relaxed); w != SL_NO_WATERMARK) {
      t.watermark_ns = t.watermark_ns == SL_NO_WATERMARK ? w : std::min(t.watermark_ns, w);
    }
  }
  if (auto late = type.side_output("late")) t.late = t.side_out[*late];
  return t;
}

// Label values: backslash, double quote and newline are escaped.
std::string label(std::string_view v) { return prometheus_label_value(v); }

std::string json_string(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

const char* role_label(int32_t role) {
  switch (role) {
    case SL_ROLE_SOURCE: return "source";
    case SL_ROLE_SINK: return "sink";
    default: return "operator";
  }
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

// Whether node `i`'s series of a per-node family can apply: sources are delivered nothing
// (no messages or bytes in), sinks emit nothing on their main output, and only a node with
// that on_error policy skips or routes dead letters.
enum class Applies { all, has_input, has_output, skips, dead_letters };
bool applies(const NodeSpec& n, Applies a) {
  switch (a) {
    case Applies::has_input: return n.role != SL_ROLE_SOURCE;
    case Applies::has_output: return n.role != SL_ROLE_SINK;
    case Applies::skips: return n.role != SL_ROLE_SOURCE && n.on_error == ErrorPolicy::skip;
    case Applies::dead_letters:
      return n.role != SL_ROLE_SOURCE && n.on_error == ErrorPolicy::dead_letter;
    case Applies::all: return true;
  }
  return true;
}

// The sources upstream of node `node` (itself, if it is one): those its back-pressure holds.
std::vector<size_t> upstream_sources(const GraphSpec& spec, size_t node) {
  std::vector<size_t> found;
  std::vector<bool> seen(spec.nodes.size(), false);
  std::vector<size_t> stack{node};
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    if (seen[i]) continue;
    seen[i] = true;
    if (spec.nodes[i].role == SL_ROLE_SOURCE) found.push_back(i);
    for (const InputRef& ref : spec.nodes[i].inputs) {
      if (auto p = spec.producer_of(ref)) stack.push_back(*p);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The unit a plugin gauge's name ends in, for its HELP line ("" when none is known).
std::string_view unit_of(std::string_view name) {
  if (name.ends_with("_total")) name.remove_suffix(6);
  for (std::string_view unit : {"seconds", "bytes", "messages", "ratio"}) {
    if (name.ends_with(unit) && name.size() > unit.size() &&
        name[name.size() - unit.size() - 1] == '_') {
      return unit;
    }
  }
  return {};
}

}  // namespace

std::string render_prometheus(const PipelineRunner* runner, const DaemonFacts& facts) {
  std::string out;
  auto put = [&](std::string_view text) { out += text; };
  header(out, "sluice_build_info", "gauge", "The running sluiced's version (always 1).");
  put(fmt::format("sluice_build_info{{version=\"{}\"}} 1\n", label(SLUICE_VERSION)));
  header(out, "sluice_up", "gauge", "1 while a graph is running, 0 between graphs or stopping.");
  put(fmt::format("sluice_up {}\n", runner && runner->running() && !runner->stopping() ? 1 : 0));
  header(out, "sluice_graph_generation", "gauge", "Graphs started by this process (1 + reloads).");
  put(fmt::format("sluice_graph_generation {}\n", facts.generation));
  header(out, "sluice_graph_start_time_seconds", "gauge",
         "When the running graph started (Unix time; 0 before the first start).");
  put(fmt::format("sluice_graph_start_time_seconds {}\n", facts.started_unix_ms / 1000.0));
  header(out, "sluice_reloads_total", "counter", "SIGHUP reloads, by result.");
  put(fmt::format("sluice_reloads_total{{result=\"applied\"}} {}\n", facts.reloads_ok));
  put(fmt::format("sluice_reloads_total{{result=\"rejected\"}} {}\n", facts.reloads_rejected));
  put(render_process_metrics());
  if (!runner) return out;

  const GraphSpec& spec = runner->spec();
  header(out, "sluice_pipeline_tasks", "gauge", "Parallel instances of the graph.");
  put(fmt::format("sluice_pipeline_tasks{{pipeline=\"{}\"}} {}\n", label(spec.name),
                  spec.runtime.tasks));

  std::vector<NodeTotals> all;
  all.reserve(spec.nodes.size());
  for (size_t i = 0; i < spec.nodes.size(); ++i) all.push_back(totals(*runner, i));
  auto labels = [&](size_t i) {
    return fmt::format("pipeline=\"{}\",node=\"{}\",type=\"{}\"", label(spec.name),
                       label(spec.nodes[i].id), label(spec.nodes[i].type));
  };
  struct Counter {
    const char* name;
    const char* help;
    uint64_t NodeTotals::*field;
    Applies applies;
  };
  const Counter counters[] = {
      {"sluice_node_messages_in_total", "Messages delivered to the node (not for sources).",
       &NodeTotals::in, Applies::has_input},
      {"sluice_node_messages_out_total",
       "Messages the node emitted on its main output (not for sinks).", &NodeTotals::out,
       Applies::has_output},
      {"sluice_node_bytes_in_total",
       "Payload bytes delivered to the node: the length of string and bytes values, 8 per "
       "number, 16 per top-level entry of an array or object (not for sources).",
       &NodeTotals::bytes_in, Applies::has_input},
      {"sluice_node_bytes_out_total",
       "Payload bytes the node emitted on its main output, counted as bytes_in (not for sinks).",
       &NodeTotals::bytes_out, Applies::has_output},
      {"sluice_node_errors_total", "Failures of the node, including those on_error handled.",
       &NodeTotals::errors, Applies::all},
      {"sluice_node_skipped_total", "Messages dropped by on_error = \"skip\".",
       &NodeTotals::skipped, Applies::skips},
      {"sluice_node_dead_letters_total", "Messages routed by on_error = \"dead_letter\".",
       &NodeTotals::dead_letters, Applies::dead_letters},
  };
  for (const Counter& c : counters) {
    header(out, c.name, "counter", c.help);
    for (size_t i = 0; i < all.size(); ++i) {
      if (!applies(spec.nodes[i], c.applies)) continue;
      put(fmt::format("{}{{{}}} {}\n", c.name, labels(i), all[i].*c.field));
    }
  }

  // Event time (docs/EVENT_TIME.md): only the nodes it concerns.
  header(out, "sluice_node_late_total", "counter",
         "Elements the node sent to its \"late\" output (too late for every window, or too far "
         "in the future).");
  for (size_t i = 0; i < all.size(); ++i) {
    if (spec.nodes[i].info->side_output("late")) {
      put(fmt::format("sluice_node_late_total{{{}}} {}\n", labels(i), all[i].late));
    }
  }
  header(out, "sluice_node_side_output_messages_total", "counter",
         "Messages the node emitted on each of its side outputs.");
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& names = spec.nodes[i].info->side_outputs;
    for (size_t k = 0; k < names.size(); ++k) {
      put(fmt::format("sluice_node_side_output_messages_total{{{},output=\"{}\"}} {}\n", labels(i),
                      label(names[k]), all[i].side_out[k]));
    }
  }
  // The watermark as Unix time, and how far it is behind the wall clock (an event-time lag:
  // it grows when input stops or a partition holds it back). Absent before the first
  // watermark and after the end of input.
  const double wall_s = static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count()) /
                        1e3;
  header(out, "sluice_node_watermark_seconds", "gauge",
         "The node's output watermark (a sink's: its input's), Unix time: no element at or "
         "before it is still to come, except late ones. The lowest over the tasks.");
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t w = all[i].watermark_ns;
    if (w == SL_NO_WATERMARK || w == SL_WATERMARK_END) continue;
    put(fmt::format("sluice_node_watermark_seconds{{{}}} {:.3f}\n", labels(i),
                    static_cast<double>(w) / 1e9));
  }
  header(out, "sluice_node_watermark_lag_seconds", "gauge",
         "Wall-clock time now minus the node's watermark.");
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t w = all[i].watermark_ns;
    if (w == SL_NO_WATERMARK || w == SL_WATERMARK_END) continue;
    put(fmt::format("sluice_node_watermark_lag_seconds{{{}}} {:.3f}\n", labels(i),
                    wall_s - static_cast<double>(w) / 1e9));
  }

  header(out, "sluice_node_batch_latency_seconds", "histogram",
         "Time of one process() call on a batch, including the synchronous delivery downstream; "
         "sampled: about 1 call in 16 per node is timed, so _count counts timed calls, not "
         "batches.");
  for (size_t i = 0; i < all.size(); ++i) {
    if (spec.nodes[i].role == SL_ROLE_SOURCE) continue;  // sources are polled, not delivered to
    uint64_t cumulative = 0;
    for (size_t b = 0; b < all[i].buckets.size(); ++b) {
      cumulative += all[i].buckets[b];
      std::string le = b < NodeCounters::k_latency_bounds_ns.size()
                           ? fmt::format("{}", NodeCounters::k_latency_bounds_ns[b] / 1e9)
                           : std::string("+Inf");
      put(fmt::format("sluice_node_batch_latency_seconds_bucket{{{},le=\"{}\"}} {}\n", labels(i),
                      le, cumulative));
    }
    put(fmt::format("sluice_node_batch_latency_seconds_sum{{{}}} {}\n", labels(i),
                    all[i].latency_sum_ns / 1e9));
    put(fmt::format("sluice_node_batch_latency_seconds_count{{{}}} {}\n", labels(i), cumulative));
  }

  header(out, "sluice_node_backpressure_seconds_total", "counter",
         "Time the node signalled back-pressure (its buffer or one of its inputs full).");
  for (size_t i = 0; i < all.size(); ++i) {
    put(fmt::format("sluice_node_backpressure_seconds_total{{{}}} {}\n", labels(i),
                    all[i].backpressure_ns / 1e9));
  }

  // Plugin-reported gauges (sl_host_api.gauge_set): sluice_node_<name>, one family per
  // name; a series reported by several tasks of a node is their sum. A name ending in
  // "_total" is a counter the plugin keeps (docs/PLUGIN_GUIDE.md, "Metrics").
  std::map<std::string, std::map<std::pair<size_t, std::string>, double>> gauges;
  for (const auto& task : runner->tasks()) {
    for (size_t i = 0; i < spec.nodes.size(); ++i) {
      for (NodeGauges::Series& g : task->nodes()[i].gauges->snapshot()) {
        gauges[std::move(g.name)][{i, std::move(g.labels)}] += g.value;
      }
    }
  }
  for (const auto& [name, series] : gauges) {
    const std::string family = "sluice_node_" + name;
    const std::string_view unit = unit_of(name);
    header(
        out, family, name.ends_with("_total") ? "counter" : "gauge",
        unit.empty()
            ? std::string("Reported by the node's plugin (see docs/OPERATIONS.md).")
            : fmt::format("Reported by the node's plugin, in {} (see docs/OPERATIONS.md).", unit));
    for (const auto& [key, value] : series) {
      put(fmt::format("{}{{{}{}{}}} {}\n", family, labels(key.first), key.second.empty() ? "" : ",",
                      key.second, value));
    }
  }

  header(out, "sluice_source_paused", "gauge", "1 while an operator paused the source.");
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    if (spec.nodes[i].role != SL_ROLE_SOURCE) continue;
    put(fmt::format("sluice_source_paused{{{}}} {}\n", labels(i),
                    runner->source_paused(spec.nodes[i].id) ? 1 : 0));
  }
  header(out, "sluice_source_backpressured", "gauge",
         "1 while a node downstream of the source signals back-pressure and holds it (in any "
         "task): the source is not polled.");
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    if (spec.nodes[i].role != SL_ROLE_SOURCE) continue;
    put(fmt::format("sluice_source_backpressured{{{}}} {}\n", labels(i), all[i].held ? 1 : 0));
  }
  return out;
}

std::string render_stats_json(const PipelineRunner* runner, const DaemonFacts& facts) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::string out = fmt::format("{{\"generation\":{},\"state\":{},\"time_ms\":{}", facts.generation,
                                json_string(facts.state), now_ms);
  if (!runner) return out + ",\"pipeline\":null,\"nodes\":[]}";
  const GraphSpec& spec = runner->spec();
  out += fmt::format(",\"pipeline\":{},\"nodes\":[", json_string(spec.name));
  std::vector<NodeTotals> all;
  all.reserve(spec.nodes.size());
  for (size_t i = 0; i < spec.nodes.size(); ++i) all.push_back(totals(*runner, i));
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeTotals& t = all[i];
    const NodeSpec& n = spec.nodes[i];
    // holding: the sources this back-pressuring node holds now (upstream of it, and held).
    std::string holding = "[";
    if (t.backpressured) {
      for (size_t s : upstream_sources(spec, i)) {
        if (!all[s].held) continue;
        if (holding.size() > 1) holding += ',';
        holding += json_string(spec.nodes[s].id);
      }
    }
    holding += ']';
    // watermark_ms: null before the first watermark, "end" after the end of input.
    const std::string watermark = t.watermark_ns == SL_NO_WATERMARK ? std::string("null")
                                  : t.watermark_ns == SL_WATERMARK_END
                                      ? std::string("\"end\"")
                                      : fmt::format("{}", t.watermark_ns / 1'000'000);
    out += fmt::format(
        "{}{{\"id\":{},\"role\":\"{}\",\"type\":{},\"in\":{},\"out\":{},\"errors\":{},"
        "\"skipped\":{},\"dead_letters\":{},\"backpressure_s\":{},\"paused\":{},"
        "\"watermark_ms\":{},\"late\":{},\"bytes_in\":{},\"bytes_out\":{},"
        "\"backpressured\":{},\"held\":{},\"holding\":{}}}",
        i == 0 ? "" : ",", json_string(n.id), role_label(n.role), json_string(n.type), t.in, t.out,
        t.errors, t.skipped, t.dead_letters, t.backpressure_ns / 1e9,
        runner->source_paused(n.id) ? "true" : "false", watermark, t.late, t.bytes_in, t.bytes_out,
        t.backpressured ? "true" : "false", t.held ? "true" : "false", holding);
  }
  return out + "]}";
}

}  // namespace sluice::host
