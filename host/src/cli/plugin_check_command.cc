// `sluiced plugin-check FILE [--config F] [--bad-config F] [--readback CMD] ...`.
#include "cli/commands.hpp"
#include "plugin_check/plugin_check.hpp"

namespace sluice::host {

int plugin_check_command(const PluginCheckOptions& options) { return run_plugin_check(options); }

}  // namespace sluice::host
