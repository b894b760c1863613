// `sluiced validate [--create] [--no-environment] [--json]`.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "executor/clock.hpp"
#include "executor/task.hpp"
#include "graph/redact.hpp"
#include "testing/pipeline_test.hpp"
#include "value/json.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace sluice::host {
namespace {

// What validate found: each finding printed as it comes (plain lines on stderr), or, with
// --json, one object on stdout at the end for editors and CI:
//   {"valid": BOOL, "config": [PATH...], "nodes": N, "tests": N, "created": BOOL,
//    "diagnostics": [{"severity", "message", "file", "line", "column", "node", "key"}...]}
// (file, line and column, node and key only where known).
class ValidateReport {
 public:
  ValidateReport(const ConfigPaths& config, bool json) : config_(config), json_(json) {}

  void add(const std::vector<Diagnostic>& found) {
    if (!json_) {
      print_diagnostics(found);
      return;
    }
    for (const Diagnostic& d : found) {
      std::vector<std::pair<std::string, Value>> e;
      e.emplace_back("severity",
                     Value::string(d.severity == Severity::error ? "error" : "warning"));
      e.emplace_back("message", Value::string(d.message));
      if (!d.pos.file.empty()) e.emplace_back("file", Value::string(d.pos.file));
      if (d.pos.line > 0) {
        e.emplace_back("line", Value::integer(d.pos.line));
        e.emplace_back("column", Value::integer(d.pos.column));
      }
      if (!d.node_id.empty()) e.emplace_back("node", Value::string(d.node_id));
      if (!d.key.empty()) e.emplace_back("key", Value::string(d.key));
      found_.push_back(Value::object(e));
    }
  }

  // A finding without a place (a test case that cannot run, a create that failed).
  void error(const std::string& message) {
    if (!json_) {
      fmt::print(stderr, "{}\n", message);
      return;
    }
    Diagnostic d;
    d.message = message;
    add({d});
  }

  int finish(int exit_code, size_t nodes, size_t tests, bool created) {
    if (!json_) {
      if (exit_code == k_exit_ok) {
        fmt::print(
            "{}: OK ({} nodes{}{})\n", config_display_name(config_), nodes,
            tests == 0 ? std::string() : fmt::format(", {} test{}", tests, tests == 1 ? "" : "s"),
            created ? ", created" : "");
      }
      return exit_code;
    }
    std::vector<Value> files;
    for (const auto& p : config_) files.push_back(Value::string(p.string()));
    std::vector<std::pair<std::string, Value>> root;
    root.emplace_back("valid", Value::boolean(exit_code == k_exit_ok));
    root.emplace_back("config", Value::array(files));
    root.emplace_back("nodes", Value::integer(static_cast<int64_t>(nodes)));
    root.emplace_back("tests", Value::integer(static_cast<int64_t>(tests)));
    root.emplace_back("created", Value::boolean(created));
    root.emplace_back("diagnostics", Value::array(found_));
    fmt::print("{}\n", json_dump(Value::object(root).raw()));
    return exit_code;
  }

 private:
  const ConfigPaths& config_;
  bool json_;
  std::vector<Value> found_;
};

}  // namespace

int validate_command(const ConfigPaths& config, const PluginDirs& dirs, bool create,
                     bool environment, bool json) {
  ValidateReport report(config, json);
  auto loaded = load_pipeline(config, dirs, ValidateOptions{.environment = environment});
  report.add(loaded.diagnostics);
  if (!loaded.ok() || loaded.has_errors()) return report.finish(k_exit_invalid, 0, 0, false);
  const LoadedPipeline& pipeline = *loaded.value;
  const size_t nodes = pipeline.spec.nodes.size();
  // Pipeline tests written in the file ([[tests]], docs/TESTING.md): `run` ignores them,
  // `validate` checks that `sluiced test` could run them.
  size_t test_count = 0;
  if (pipeline.document && pipeline.document->root.contains("tests")) {
    auto cases = load_test_cases(tests_file_of(pipeline));
    if (!cases.is_ok()) {
      report.error(std::string(cases.status().message()));
      return report.finish(k_exit_invalid, nodes, 0, false);
    }
    for (const auto& tc : cases.value()) {
      if (auto s = check_test_case(pipeline.spec, tc); !s.is_ok()) {
        report.error(std::string(s.message()));
        return report.finish(k_exit_invalid, nodes, 0, false);
      }
    }
    test_count = cases->size();
  }
  if (create) {
    // What `run` does first, and nothing more: every node of every task is created, then
    // destroyed, without start. A failure here is a config the plugin's validate missed.
    const RealClock clock;
    const uint32_t tasks = pipeline.spec.runtime.tasks;
    for (uint32_t i = 0; i < tasks; ++i) {
      Task task(pipeline.spec, TaskOptions{pipeline.spec.runtime.batch_size, i, tasks, &clock});
      if (auto st = task.create(); !st.is_ok()) {
        // A plugin's message may quote a secret it was given.
        report.error(fmt::format("{}: validated, but create failed (task {}): {}",
                                 config_display_name(config), i,
                                 redact_text(std::string(st.message()), pipeline.spec.secrets)));
        return report.finish(k_exit_runtime_error, nodes, test_count, false);
      }
    }
  }
  return report.finish(k_exit_ok, nodes, test_count, create);
}

}  // namespace sluice::host
