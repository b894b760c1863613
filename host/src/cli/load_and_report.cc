#include "cli/load_and_report.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace sluice::host {

void print_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) fmt::print(stderr, "{}\n", d.to_string());
}

std::optional<LoadedPipeline> load_and_report(const std::filesystem::path& config,
                                              const std::vector<std::filesystem::path>& dirs,
                                              ValidateOptions options) {
  auto loaded = load_pipeline(config, dirs, options);
  print_diagnostics(loaded.diagnostics);
  if (!loaded.ok() || loaded.has_errors()) return std::nullopt;
  return std::move(*loaded.value);
}

}  // namespace sluice::host
