// `sluiced validate [--create]`.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "executor/clock.hpp"
#include "executor/task.hpp"
#include "graph/redact.hpp"
#include "testing/pipeline_test.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace sluice::host {

int validate_command(const ConfigPaths& config, const PluginDirs& dirs, bool create,
                     bool environment) {
  auto pipeline = load_and_report(config, dirs, ReportTo::stderr_lines,
                                  ValidateOptions{.environment = environment});
  if (!pipeline) return k_exit_invalid;
  // Pipeline tests written in the file ([[tests]], docs/TESTING.md): `run` ignores them,
  // `validate` checks that `sluiced test` could run them.
  size_t test_count = 0;
  if (pipeline->document && pipeline->document->root.contains("tests")) {
    auto cases = load_test_cases(tests_file_of(*pipeline));
    if (!cases.is_ok()) {
      fmt::print(stderr, "{}\n", cases.status().message());
      return k_exit_invalid;
    }
    for (const auto& tc : cases.value()) {
      if (auto s = check_test_case(pipeline->spec, tc); !s.is_ok()) {
        fmt::print(stderr, "{}\n", s.message());
        return k_exit_invalid;
      }
    }
    test_count = cases->size();
  }
  if (create) {
    // What `run` does first, and nothing more: every node of every task is created, then
    // destroyed, without start. A failure here is a config the plugin's validate missed.
    const RealClock clock;
    const uint32_t tasks = pipeline->spec.runtime.tasks;
    for (uint32_t i = 0; i < tasks; ++i) {
      Task task(pipeline->spec, TaskOptions{pipeline->spec.runtime.batch_size, i, tasks, &clock});
      if (auto st = task.create(); !st.is_ok()) {
        // A plugin's message may quote a secret it was given.
        fmt::print(stderr, "{}: validated, but create failed (task {}): {}\n",
                   config_display_name(config), i,
                   redact_text(std::string(st.message()), pipeline->spec.secrets));
        return k_exit_runtime_error;
      }
    }
  }
  fmt::print("{}: OK ({} nodes{}{})\n", config_display_name(config), pipeline->spec.nodes.size(),
             test_count == 0 ? std::string()
                             : fmt::format(", {} test{}", test_count, test_count == 1 ? "" : "s"),
             create ? ", created" : "");
  return k_exit_ok;
}

}  // namespace sluice::host
