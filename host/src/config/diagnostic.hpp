// Findings about a config: one problem (or warning) with its file:line:col, node id
// and key, and a result that carries its findings.
#pragma once

#include "graph/graph_spec.hpp"

#include <optional>
#include <string>
#include <vector>

namespace sluice::host {

enum class Severity { error, warning };

// One finding about a config. to_string() gives the one-line form every tool
// prints: "FILE:LINE:COL: error: node 'ID': key 'KEY': MESSAGE" (node and key
// parts omitted when empty; the position too when its file is unknown).
struct Diagnostic {
  Severity severity = Severity::error;
  SourcePos pos;
  std::string node_id;
  std::string key;
  std::string message;  // says what is wrong and what would be valid

  [[nodiscard]] std::string to_string() const;
};

// Logs each finding's one-line form at level error or warn, with its node as a field
// (common/log_fields.hpp): what the service does (run, a reload), so that journald gets the
// priority and `--log-format json` a JSON line with "node".
void log_diagnostics(const std::vector<Diagnostic>& diagnostics);

// A result that carries findings even when it succeeds (warnings). `value` is
// empty exactly when at least one finding is an error.
template <class T>
struct Diagnosed {
  std::optional<T> value;
  std::vector<Diagnostic> diagnostics;

  [[nodiscard]] bool ok() const { return value.has_value(); }
  [[nodiscard]] bool has_errors() const {
    for (const auto& d : diagnostics) {
      if (d.severity == Severity::error) return true;
    }
    return false;
  }
};

}  // namespace sluice::host
