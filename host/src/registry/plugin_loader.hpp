// Plugin discovery: finds shared objects in the configured directories, checks
// that nobody but their owner can change them, loads them with Boost.DLL and
// hands their descriptors to the registry.
#pragma once

#include "common/result.hpp"
#include "registry/plugin_registry.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host {

// Directories to search, in order: the config's `plugin_dirs`, then each entry
// of SLUICE_PLUGIN_PATH (colon-separated), then the install default. Missing
// entries of the environment variable and the default are skipped quietly;
// a missing config directory is an error for the caller to report.
std::vector<std::filesystem::path> plugin_search_path(
    const std::vector<std::filesystem::path>& config_dirs);

// The directory an installed sluiced searches when nothing else is configured.
std::filesystem::path default_plugin_dir();

// Refuses files and directories that a user other than root or the daemon's
// own user could modify: group- or world-writable, or owned by someone else.
Status check_not_tamperable(const std::filesystem::path& path);

// Refuses a directory that a user other than root or the daemon's own user could
// replace through one of its ancestors (from its parent up to /): an ancestor owned by
// someone else, or group- or world-writable without the sticky bit (as ssh's
// StrictModes and sudo check). A sticky world-writable ancestor such as /tmp is fine:
// others cannot rename or remove what they do not own there.
Status check_ancestors(const std::filesystem::path& dir);

struct LoadProblem {
  std::filesystem::path file;
  std::string message;  // already names the file
};

// How load_directory uses the plugin cache (registry/plugin_cache.hpp).
enum class PluginCacheUse {
  none,     // open every plugin; the cache is neither read nor written
  defer,    // plugins the cache describes are deferred (opened on first use); the cache
            // learns the others
  refresh,  // open every plugin and rewrite the cache from what they provide
};

class PluginLoader {
 public:
  // Plugins loaded here are handed `host`; so is every validate callback of
  // `registry` (PluginRegistry::host_api).
  PluginLoader(PluginRegistry& registry, const sl_host_api* host)
      : registry_(registry), host_(host) {
    registry.set_host_api(host);
  }

  // Loads one shared object. The error names the file and says why. Before dlopen the
  // file must be a regular file (a FIFO or a device is refused without blocking), not
  // modifiable by others, in a directory whose ancestors others cannot replace, and a
  // complete ELF shared object (a truncated one would SIGBUS inside the loader).
  Status load_file(const std::filesystem::path& file);

  // Loads every plugin file (*.so, *.dylib, *.dll) found directly in `dir`, in
  // name order. Returns the problems; good plugins still load.
  std::vector<LoadProblem> load_directory(const std::filesystem::path& dir);

  // load_directory over the search path; a directory loaded once is not loaded again.
  // With a cache, writes it at the end when it learned something.
  std::vector<LoadProblem> load_search_path(const std::vector<std::filesystem::path>& dirs);

  // Uses the plugin cache at `path` (empty: none) for the directories loaded after this.
  void use_cache(std::filesystem::path path, PluginCacheUse use);

 private:
  // Defers `file` (canonical) when the cache describes it as it is now and no name of it
  // is taken; false when it has to be opened.
  bool defer_cached(const std::filesystem::path& file);
  // After `file` loaded: the cache learns what it provides.
  void remember(const std::filesystem::path& file);

  PluginRegistry& registry_;
  const sl_host_api* host_;
  std::vector<std::filesystem::path> loaded_files_;  // canonical paths (deferred ones too)
  PluginCacheUse cache_use_ = PluginCacheUse::none;
  std::filesystem::path cache_path_;
  PluginCache cache_;
  bool cache_changed_ = false;
};

}  // namespace sluice::host
