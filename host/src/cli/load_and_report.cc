#include "cli/load_and_report.hpp"

#include "common/log_fields.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace sluice::host {

void print_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) fmt::print(stderr, "{}\n", d.to_string());
}

void log_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) {
    const auto level = d.severity == Severity::error ? spdlog::level::err : spdlog::level::warn;
    if (d.node_id.empty()) {
      spdlog::log(level, "{}", d.to_string());
    } else {
      log_with(level, {{"node", d.node_id}}, "{}", d.to_string());
    }
  }
}

std::optional<LoadedPipeline> load_and_report(const std::filesystem::path& config,
                                              const std::vector<std::filesystem::path>& dirs,
                                              ReportTo to) {
  auto loaded = load_pipeline(config, dirs);
  if (to == ReportTo::log) {
    log_diagnostics(loaded.diagnostics);
  } else {
    print_diagnostics(loaded.diagnostics);
  }
  if (!loaded.ok() || loaded.has_errors()) return std::nullopt;
  return std::move(*loaded.value);
}

}  // namespace sluice::host
