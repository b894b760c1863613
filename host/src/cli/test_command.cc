// `sluiced test CONFIG [TESTS]`.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "testing/pipeline_test.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace sluice::host {

int test_command(const std::filesystem::path& config, const std::filesystem::path& tests_file,
                 const PluginDirs& dirs) {
  // Tests may live in the pipeline file itself ([[tests]]) or in their own file.
  auto pipeline = load_and_report(config, dirs, /*strip_tests=*/true);
  if (!pipeline) return k_exit_invalid;
  auto cases = load_test_cases(tests_file.empty() ? config : tests_file);
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
  size_t passed = 0, failed = 0;
  for (const auto& tc : cases.value()) {
    auto outcome = run_test_case(pipeline->spec, tc);
    if (outcome.passed) {
      ++passed;
      fmt::print("ok     {}\n", tc.name);
    } else {
      ++failed;
      fmt::print("FAILED {} ({}:{})\n{}", tc.name, tc.pos.file, tc.pos.line, outcome.report);
    }
  }
  fmt::print("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? k_exit_ok : k_exit_tests_failed;
}

}  // namespace sluice::host
