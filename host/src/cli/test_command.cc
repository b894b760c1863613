// `sluiced test PIPELINE.toml [CASES.tests.toml] [--case NAME]...`.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "graph/redact.hpp"
#include "testing/pipeline_test.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>

namespace sluice::host {

int test_command(const ConfigPaths& config, const std::filesystem::path& tests_file,
                 const PluginDirs& dirs, const std::vector<std::string>& case_patterns) {
  // Tests may live in the pipeline file itself ([[tests]]) or in their own file.
  auto pipeline = load_and_report(config, dirs);
  if (!pipeline) return k_exit_invalid;
  // Without a CASES file: the config file that has [[tests]] (the first one when none has).
  std::filesystem::path file = tests_file;
  if (file.empty()) file = tests_file_of(*pipeline);
  if (file.empty()) file = pipeline->document ? pipeline->document->file : config.front();
  auto cases = load_test_cases(file);
  if (!cases.is_ok()) {
    fmt::print(stderr, "{}\n", cases.status().message());
    if (tests_file.empty()) {
      fmt::print(stderr,
                 "(the cases are read from the pipeline file when no CASES file is given: "
                 "sluiced test {} CASES.tests.toml)\n",
                 config_display_name(config));
    }
    return k_exit_invalid;
  }
  for (const auto& tc : cases.value()) {
    if (auto s = check_test_case(pipeline->spec, tc); !s.is_ok()) {
      fmt::print(stderr, "{}\n", s.message());
      return k_exit_invalid;
    }
  }
  auto selected = select_test_cases(std::move(cases).value(), case_patterns, file.string());
  if (!selected.is_ok()) {
    fmt::print(stderr, "{}\n", selected.status().message());
    return k_exit_invalid;
  }
  size_t passed = 0, failed = 0;
  // Cases per RestartCheck value, for the summary.
  std::array<size_t, 4> restart{};
  for (const auto& tc : selected.value()) {
    auto outcome = run_test_case(pipeline->spec, tc);
    ++restart[static_cast<size_t>(outcome.restart)];
    const std::string restart_note =
        outcome.restart == RestartCheck::ran
            ? std::string("restart check ran")
            : fmt::format("no restart check: {}", restart_check_reason(outcome.restart));
    if (outcome.passed) {
      ++passed;
      fmt::print("ok     {}  ({})\n", tc.name, restart_note);
    } else {
      ++failed;
      // A report quotes records and config values: never a secret.
      fmt::print("FAILED {} ({}:{})  ({})\n{}", tc.name, tc.pos.file, tc.pos.line, restart_note,
                 redact_text(outcome.report, pipeline->spec.secrets));
    }
  }
  // "restart check: ran for 2 of 5 cases; not run for 3 (2 no stateful node, 1 the run
  // failed)"
  const size_t ran = restart[static_cast<size_t>(RestartCheck::ran)];
  const size_t total = passed + failed;
  std::string why;
  for (RestartCheck r :
       {RestartCheck::no_stateful_node, RestartCheck::turned_off, RestartCheck::run_failed}) {
    if (const size_t n = restart[static_cast<size_t>(r)]; n != 0) {
      why += fmt::format("{}{} {}", why.empty() ? "" : ", ", n, restart_check_reason(r));
    }
  }
  fmt::print("restart check: ran for {} of {} case{}{}\n", ran, total, total == 1 ? "" : "s",
             ran == total ? std::string() : fmt::format("; not run for {} ({})", total - ran, why));
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? k_exit_ok : k_exit_tests_failed;
}

}  // namespace sluice::host
