// `sluiced checkpoints CONFIG [--json]`.
#include "checkpoint/coordinator.hpp"
#include "checkpoint/format.hpp"
#include "checkpoint/store.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "value/json.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace sluice::host::checkpoint {
namespace {

std::string iso_time(int64_t ns) {
  if (ns == 0) return "-";
  auto tp = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(ns)));
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}Z",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(tp)));
}

size_t encoded_size(const Value& v) {
  std::string out;
  encode_value(v, out);
  return out.size();
}

struct Row {
  EpochEntry entry;
  std::optional<Checkpoint> cp;
  std::string problem;
};

// Prints the listing to stdout (text or JSON); problems to stderr. Returns the exit
// code: 1 when the store cannot be opened or listed, 2 without [checkpoint].
int list_checkpoints(const GraphSpec& spec, bool json) {
  if (!spec.checkpoint.enabled) {
    fmt::print(stderr, "{}: the pipeline has no [checkpoint] table: checkpointing is off\n",
               spec.file.string());
    return k_exit_invalid;
  }
  auto store = open_store(spec);
  if (!store.is_ok()) {
    fmt::print(stderr, "error: {}\n", store.status().message());
    return k_exit_runtime_error;
  }
  auto entries = store.value()->list();
  if (!entries.is_ok()) {
    fmt::print(stderr, "error: {}\n", entries.status().message());
    return k_exit_runtime_error;
  }
  std::vector<Row> rows;
  std::optional<uint64_t> restore_point;
  for (const EpochEntry& e : *entries) {
    Row row{e, std::nullopt, {}};
    auto bytes = store.value()->read(e.epoch);
    if (!bytes.is_ok()) {
      row.problem = bytes.status().message();
    } else if (auto cp = decode_checkpoint(bytes.value()); !cp.is_ok()) {
      row.problem = cp.status().message();
    } else {
      row.cp = std::move(cp).value();
      if (!restore_point) restore_point = e.epoch;
    }
    rows.push_back(std::move(row));
  }

  if (json) {
    std::vector<Value> epochs;
    for (const Row& r : rows) {
      std::vector<std::pair<std::string, Value>> o;
      o.emplace_back("epoch", Value::integer(static_cast<int64_t>(r.entry.epoch)));
      int64_t time_ns = r.cp ? r.cp->time_ns : r.entry.time_ns;
      o.emplace_back("time", Value::string(iso_time(time_ns)));
      o.emplace_back("time_ns", Value::integer(time_ns));
      o.emplace_back("bytes", Value::integer(static_cast<int64_t>(r.entry.size)));
      o.emplace_back("committed", Value::boolean(r.entry.committed));
      o.emplace_back("usable", Value::boolean(r.cp.has_value()));
      o.emplace_back("newest", Value::boolean(restore_point && *restore_point == r.entry.epoch));
      o.emplace_back("error", r.problem.empty() ? Value::null() : Value::string(r.problem));
      std::vector<Value> tasks;
      if (r.cp) {
        for (size_t t = 0; t < r.cp->tasks.size(); ++t) {
          std::vector<Value> nodes;
          for (const NodeState& n : r.cp->tasks[t].nodes) {
            std::vector<std::pair<std::string, Value>> no;
            no.emplace_back("id", Value::string(n.id));
            no.emplace_back("type", Value::string(n.type));
            no.emplace_back("source", Value::boolean(n.role == SL_ROLE_SOURCE));
            no.emplace_back("state_bytes",
                            Value::integer(static_cast<int64_t>(encoded_size(n.state))));
            if (n.role == SL_ROLE_SOURCE) no.emplace_back("position", n.state);
            nodes.push_back(Value::object(no));
          }
          std::vector<std::pair<std::string, Value>> to;
          to.emplace_back("task", Value::integer(static_cast<int64_t>(t)));
          to.emplace_back("finished", Value::boolean(r.cp->tasks[t].finished));
          to.emplace_back("nodes", Value::array(nodes));
          tasks.push_back(Value::object(to));
        }
      }
      o.emplace_back("tasks", Value::array(tasks));
      epochs.push_back(Value::object(o));
    }
    std::vector<std::pair<std::string, Value>> root;
    root.emplace_back("pipeline", Value::string(spec.name));
    root.emplace_back("store", Value::string(spec.checkpoint.store));
    root.emplace_back("epochs", Value::array(epochs));
    fmt::print("{}\n", json_dump(Value::object(root).raw()));
    return k_exit_ok;
  }

  fmt::print("pipeline '{}': store '{}', {} epoch{}\n", spec.name, spec.checkpoint.store,
             rows.size(), rows.size() == 1 ? "" : "s");
  for (const Row& r : rows) {
    std::vector<std::string> tags;
    if (restore_point && *restore_point == r.entry.epoch) tags.emplace_back("newest usable");
    tags.emplace_back(r.entry.committed ? "committed" : "not committed");
    if (!r.cp) tags.emplace_back("UNUSABLE");
    fmt::print("epoch {}  {}  {} bytes  ({})\n", r.entry.epoch,
               iso_time(r.cp ? r.cp->time_ns : r.entry.time_ns), r.entry.size,
               fmt::join(tags, ", "));
    if (!r.cp) {
      fmt::print("  {}\n", r.problem);
      continue;
    }
    for (size_t t = 0; t < r.cp->tasks.size(); ++t) {
      const TaskState& ts = r.cp->tasks[t];
      if (ts.finished) {
        fmt::print("  task {}: finished (no state)\n", t);
        continue;
      }
      fmt::print("  task {}:\n", t);
      for (const NodeState& n : ts.nodes) {
        if (n.role == SL_ROLE_SOURCE) {
          fmt::print("    source {} ({}): position {}\n", n.id, n.type, json_dump(n.state.raw()));
        } else {
          fmt::print("    node {} ({}): {} bytes of state\n", n.id, n.type, encoded_size(n.state));
        }
      }
    }
  }
  return k_exit_ok;
}

}  // namespace
}  // namespace sluice::host::checkpoint

namespace sluice::host {

int checkpoints_command(const std::filesystem::path& config, bool json, const PluginDirs& dirs) {
  auto pipeline = load_and_report(config, dirs);
  if (!pipeline) return k_exit_invalid;
  return checkpoint::list_checkpoints(pipeline->spec, json);
}

}  // namespace sluice::host
