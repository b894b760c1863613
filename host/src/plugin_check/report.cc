#include "plugin_check/report.hpp"

#include <fmt/format.h>

namespace sluice::host::plugin_check {

std::string render(const Subject& s) {
  std::string out = fmt::format("{} {}\n", s.kind, s.name);
  for (const CheckResult& c : s.checks) {
    const char* word = c.outcome == Outcome::passed   ? "ok    "
                       : c.outcome == Outcome::failed ? "FAILED"
                                                      : "not exercised";
    out += fmt::format("  {} {}{}{}\n", word, c.check, c.reason.empty() ? "" : ": ", c.reason);
  }
  return out;
}

Totals count(const std::vector<Subject>& subjects) {
  Totals t;
  for (const Subject& s : subjects) {
    for (const CheckResult& c : s.checks) {
      switch (c.outcome) {
        case Outcome::passed: ++t.passed; break;
        case Outcome::failed: ++t.failed; break;
        case Outcome::not_exercised: ++t.not_exercised; break;
      }
    }
  }
  return t;
}

}  // namespace sluice::host::plugin_check
