// `sluiced graph [--format dot|json]`.
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/load_and_report.hpp"
#include "graph/graph_export.hpp"

#include <fmt/format.h>

namespace sluice::host {

int graph_command(const ConfigPaths& config, const std::string& format, const PluginDirs& dirs) {
  auto pipeline = load_and_report(config, dirs);
  if (!pipeline) return k_exit_invalid;
  fmt::print("{}", format == "json" ? to_json(pipeline->spec) : to_dot(pipeline->spec));
  return k_exit_ok;
}

}  // namespace sluice::host
