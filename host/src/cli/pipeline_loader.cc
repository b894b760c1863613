#include "cli/pipeline_loader.hpp"

#include "checkpoint/store.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "registry/plugin_loader.hpp"

#include <fmt/format.h>

#include <cstdio>

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

}  // namespace

std::unique_ptr<PluginRegistry> load_plugins(const std::vector<std::filesystem::path>& dirs,
                                             bool print_problems,
                                             const std::vector<PluginDirOrigin>& origins) {
  auto registry = std::make_unique<PluginRegistry>();
  // The built-in checkpoint stores ("fs") first, registered like plugins' stores.
  if (auto st = checkpoint::register_builtin_stores(*registry); !st.is_ok()) {
    fmt::print(stderr, "error: {}\n", st.message());
    return nullptr;
  }
  PluginLoader loader(*registry, host_api_table());
  auto problems = loader.load_search_path(plugin_search_path(dirs));
  if (print_problems) {
    for (const auto& p : problems) {
      if (const PluginDirOrigin* o = origin_of(p.file, origins)) {
        const Diagnostic d{Severity::error, o->pos, "", "plugin_dirs", p.message};
        fmt::print(stderr, "{}\n", d.to_string());
      } else {
        fmt::print(stderr, "error: plugin: {}\n", p.message);
      }
    }
  }
  if (!problems.empty()) return nullptr;
  return registry;
}

std::optional<LoadedPipeline> load_pipeline(const std::filesystem::path& config,
                                            const std::vector<std::filesystem::path>& extra_dirs,
                                            bool strip_tests) {
  auto print = [](const std::vector<Diagnostic>& diagnostics) {
    for (const auto& d : diagnostics) fmt::print(stderr, "{}\n", d.to_string());
  };
  auto parsed = parse_config_file(config);
  print(parsed.diagnostics);
  if (!parsed.ok() || parsed.has_errors()) return std::nullopt;
  ConfigDocument& doc = *parsed.value;
  if (strip_tests) doc.root.erase("tests");

  auto dirs = config_plugin_dirs(doc);
  print(dirs.diagnostics);
  if (!dirs.ok() || dirs.has_errors()) return std::nullopt;
  std::vector<std::filesystem::path> all_dirs = *dirs.value;
  std::vector<PluginDirOrigin> origins;
  const std::vector<SourcePos> positions = config_plugin_dir_positions(doc);
  for (size_t i = 0; i < all_dirs.size() && i < positions.size(); ++i) {
    origins.push_back({all_dirs[i], positions[i]});
  }
  all_dirs.insert(all_dirs.end(), extra_dirs.begin(), extra_dirs.end());

  std::shared_ptr<const PluginRegistry> registry = load_plugins(all_dirs, true, origins);
  if (!registry) return std::nullopt;

  auto validated = validate_config(doc, *registry);
  print(validated.diagnostics);
  if (!validated.ok() || validated.has_errors()) return std::nullopt;
  LoadedPipeline out;
  out.spec = std::move(*validated.value);
  out.spec.registry = std::move(registry);
  out.document = std::move(doc);
  return out;
}

}  // namespace sluice::host
