#include "pipeline/pipeline_loader.hpp"

#include "checkpoint/store.hpp"
#include "config/config_validator.hpp"
#include "config/config_values.hpp"
#include "config/repartition_expansion.hpp"
#include "executor/host_api.hpp"
#include "graph/redact.hpp"
#include "registry/plugin_loader.hpp"

namespace sluice::host {

namespace {

// The config entry a plugin problem comes from: the directory itself, or a file in it.
const PluginDirOrigin* origin_of(const std::filesystem::path& problem,
                                 const std::vector<PluginDirOrigin>& origins) {
  for (const auto& o : origins) {
    if (problem == o.dir || problem.parent_path() == o.dir) return &o;
  }
  return nullptr;
}

// An error with no place in the config. Built member by member: GCC 12 at -O3 (the Release
// build) warns that a braced `{}` SourcePos inside the braced Diagnostic "may be used
// uninitialized" (a false positive of -Wmaybe-uninitialized, which -Werror makes fatal).
Diagnostic plain_error(std::string message) {
  Diagnostic d;
  d.severity = Severity::error;
  d.message = std::move(message);
  return d;
}

}  // namespace

Diagnosed<std::unique_ptr<PluginRegistry>> load_plugins(
    const std::vector<std::filesystem::path>& dirs, const std::vector<PluginDirOrigin>& origins) {
  Diagnosed<std::unique_ptr<PluginRegistry>> out;
  auto registry = std::make_unique<PluginRegistry>();
  // The built-in checkpoint stores ("fs") first, registered like plugins' stores.
  if (auto st = checkpoint::register_builtin_stores(*registry); !st.is_ok()) {
    out.diagnostics.push_back(plain_error(std::string(st.message())));
    return out;
  }
  PluginLoader loader(*registry, host_api_table());
  // Plugins the cache knows open when the config first names one of their types,
  // functions or stores (the validation below): a start pays only for what it uses.
  loader.use_cache(PluginCache::default_path(), PluginCacheUse::defer);
  for (const auto& p : loader.load_search_path(plugin_search_path(dirs))) {
    if (const PluginDirOrigin* o = origin_of(p.file, origins)) {
      out.diagnostics.push_back({Severity::error, o->pos, "", "plugin_dirs", p.message});
    } else {
      out.diagnostics.push_back(plain_error("plugin: " + p.message));
    }
  }
  if (out.diagnostics.empty()) out.value = std::move(registry);
  return out;
}

namespace {

Diagnosed<LoadedPipeline> load_document(ConfigDocument& doc,
                                        const std::vector<std::filesystem::path>& extra_dirs,
                                        ValidateOptions options) {
  Diagnosed<LoadedPipeline> out;
  // Appends a step's findings; true when the step failed (then nothing more is done).
  auto failed = [&out](auto& step) {
    out.diagnostics.insert(out.diagnostics.end(), step.diagnostics.begin(), step.diagnostics.end());
    return !step.ok() || step.has_errors();
  };
  // Variables and secrets first: plugin_dirs may name a variable too.
  std::vector<Diagnostic> resolved = resolve_config_values(doc, process_environment());
  out.diagnostics.insert(out.diagnostics.end(), resolved.begin(), resolved.end());
  if (!resolved.empty()) return out;

  auto dirs = config_plugin_dirs(doc);
  if (failed(dirs)) return out;
  std::vector<std::filesystem::path> all_dirs = *dirs.value;
  std::vector<PluginDirOrigin> origins;
  const std::vector<SourcePos> positions = config_plugin_dir_positions(doc);
  for (size_t i = 0; i < all_dirs.size() && i < positions.size(); ++i) {
    origins.push_back({all_dirs[i], positions[i]});
  }
  all_dirs.insert(all_dirs.end(), extra_dirs.begin(), extra_dirs.end());

  auto plugins = load_plugins(all_dirs, origins);
  if (failed(plugins)) return out;
  std::shared_ptr<const PluginRegistry> registry = std::move(*plugins.value);
  // key_by's repartition_topic becomes the nodes it stands for, validated like the others.
  std::vector<Diagnostic> expanded = expand_repartitions(doc);
  out.diagnostics.insert(out.diagnostics.end(), expanded.begin(), expanded.end());
  auto validated = validate_config(doc, *registry, options);
  // A deferred plugin that failed to open now is refused as at discovery.
  for (std::string& problem : registry->take_open_problems()) {
    out.diagnostics.push_back(plain_error("plugin: " + std::move(problem)));
  }
  if (failed(validated) || !expanded.empty() || out.has_errors()) return out;
  out.value = LoadedPipeline{std::move(doc), std::move(*validated.value)};
  out.value->spec.registry = std::move(registry);
  out.value->spec.secrets = out.value->document->secrets;
  return out;
}

}  // namespace

Diagnosed<LoadedPipeline> load_pipeline(const std::vector<std::filesystem::path>& configs,
                                        const std::vector<std::filesystem::path>& extra_dirs,
                                        ValidateOptions options) {
  auto parsed = parse_config_files(configs);
  if (!parsed.ok() || parsed.has_errors()) {
    Diagnosed<LoadedPipeline> out;
    out.diagnostics = std::move(parsed.diagnostics);
    return out;
  }
  Diagnosed<LoadedPipeline> out = load_document(*parsed.value, extra_dirs, options);
  out.diagnostics.insert(out.diagnostics.begin(), parsed.diagnostics.begin(),
                         parsed.diagnostics.end());
  // A finding may quote a value (a plugin's validate message, a type error): never a secret.
  // (The document moved into the result when it loaded.)
  const std::vector<std::string>& secrets =
      out.value ? out.value->spec.secrets : parsed.value->secrets;
  for (Diagnostic& d : out.diagnostics) d.message = redact_text(std::move(d.message), secrets);
  return out;
}

}  // namespace sluice::host
