#include "cli/load_and_report.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace sluice::host {

void print_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  for (const auto& d : diagnostics) fmt::print(stderr, "{}\n", d.to_string());
}

std::optional<LoadedPipeline> load_and_report(const std::vector<std::filesystem::path>& config,
                                              const std::vector<std::filesystem::path>& dirs,
                                              ReportTo to, ValidateOptions options) {
  auto loaded = load_pipeline(config, dirs, options);
  if (to == ReportTo::log) {
    log_diagnostics(loaded.diagnostics);
  } else {
    print_diagnostics(loaded.diagnostics);
  }
  if (!loaded.ok() || loaded.has_errors()) return std::nullopt;
  return std::move(*loaded.value);
}

std::string config_display_name(const std::vector<std::filesystem::path>& config) {
  std::string out;
  for (const auto& p : config) {
    if (!out.empty()) out += ", ";
    out += p.string();
  }
  return out;
}

std::filesystem::path tests_file_of(const LoadedPipeline& pipeline) {
  if (!pipeline.document) return {};
  const toml::node* tests = pipeline.document->root.get("tests");
  if (!tests) return {};
  const auto& path = tests->source().path;
  return path && !path->empty() ? std::filesystem::path(*path) : pipeline.document->file;
}

}  // namespace sluice::host
