#include "daemon/reload.hpp"

#include "daemon/log_redaction.hpp"

#include <spdlog/spdlog.h>

namespace sluice::host {

ReloadCandidate prepare_reload(const std::vector<std::filesystem::path>& config,
                               const std::vector<std::filesystem::path>& plugin_dirs,
                               const GraphSpec& running) {
  ReloadCandidate out;
  for (const auto& path : config) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      out.rejected = "the config file " + path.string() + " does not exist";
      return out;
    }
  }
  // As `sluiced validate` would, the machine included: the new graph starts right away.
  auto loaded = load_pipeline(config, plugin_dirs, ValidateOptions{.environment = true});
  log_diagnostics(loaded.diagnostics);
  if (!loaded.ok() || loaded.has_errors()) {
    out.rejected = "the new config is invalid (the errors are logged above)";
    return out;
  }
  const AdminSettings& a = loaded.value->spec.admin;
  const AdminSettings& b = running.admin;
  if (a.enabled != b.enabled || a.address != b.address || a.port != b.port || a.token != b.token) {
    spdlog::warn("reload: [admin] changed; the endpoint keeps its current settings until restart");
  }
  // Both graphs' secrets: the running one may go on (a rejected live reload) or log while it
  // drains.
  std::vector<std::string> secrets = running.secrets;
  secrets.insert(secrets.end(), loaded.value->spec.secrets.begin(),
                 loaded.value->spec.secrets.end());
  set_log_secrets(secrets);
  out.pipeline = std::make_unique<LoadedPipeline>(std::move(*loaded.value));
  return out;
}

}  // namespace sluice::host
