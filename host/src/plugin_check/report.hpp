// The plugin-check report: per node type or function, each check passed, failed or not
// exercised, with a reason.
#pragma once

#include <string>
#include <vector>

namespace sluice::host::plugin_check {

enum class Outcome { passed, failed, not_exercised };

struct CheckResult {
  std::string check;  // "declarations", "hostile elements", "restore", "crash: ..."
  Outcome outcome = Outcome::passed;
  std::string reason;  // what failed or why it was not exercised (may say what passed)
};

struct Subject {
  std::string kind;  // "source", "operator", "sink", "function"
  std::string name;
  std::vector<CheckResult> checks;

  void pass(std::string check, std::string note = {}) {
    checks.push_back({std::move(check), Outcome::passed, std::move(note)});
  }
  void fail(std::string check, std::string reason) {
    checks.push_back({std::move(check), Outcome::failed, std::move(reason)});
  }
  void skip(std::string check, std::string reason) {
    checks.push_back({std::move(check), Outcome::not_exercised, std::move(reason)});
  }
};

// One subject's lines: "sink NAME" then "  ok      CHECK: note" / "  FAILED  ..." /
// "  not exercised CHECK: reason".
std::string render(const Subject& subject);

struct Totals {
  size_t passed = 0, failed = 0, not_exercised = 0;
};
Totals count(const std::vector<Subject>& subjects);

}  // namespace sluice::host::plugin_check
