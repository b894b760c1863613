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

struct LoadProblem {
  std::filesystem::path file;
  std::string message;  // already names the file
};

class PluginLoader {
 public:
  PluginLoader(PluginRegistry& registry, const sl_host_api* host)
      : registry_(registry), host_(host) {}

  // Loads one shared object. The error names the file and says why.
  Status load_file(const std::filesystem::path& file);

  // Loads every plugin file (*.so, *.dylib, *.dll) found directly in `dir`, in
  // name order. Returns the problems; good plugins still load.
  std::vector<LoadProblem> load_directory(const std::filesystem::path& dir);

  // load_directory over the search path; a directory loaded once is not loaded again.
  std::vector<LoadProblem> load_search_path(const std::vector<std::filesystem::path>& dirs);

 private:
  PluginRegistry& registry_;
  const sl_host_api* host_;
  std::vector<std::filesystem::path> loaded_files_;  // canonical paths
};

}  // namespace sluice::host
