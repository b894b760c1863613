#include "registry/plugin_loader.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#ifndef SLUICE_DEFAULT_PLUGIN_DIR
#define SLUICE_DEFAULT_PLUGIN_DIR "/usr/lib/sluice/plugins"
#endif

namespace sluice::host {
namespace fs = std::filesystem;

namespace {

bool is_plugin_file(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".so" || ext == ".dylib" || ext == ".dll";
}

}  // namespace

fs::path default_plugin_dir() { return SLUICE_DEFAULT_PLUGIN_DIR; }

std::vector<fs::path> plugin_search_path(const std::vector<fs::path>& config_dirs) {
  std::vector<fs::path> out = config_dirs;
  if (const char* env = std::getenv("SLUICE_PLUGIN_PATH"); env && *env) {
    std::string_view rest(env);
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string_view entry = rest.substr(0, colon);
      if (!entry.empty() && fs::is_directory(fs::path(entry))) out.emplace_back(entry);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  if (fs::is_directory(default_plugin_dir())) out.push_back(default_plugin_dir());
  return out;
}

Status check_not_tamperable(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(SL_NOT_FOUND, fmt::format("{}: {}", path.string(), std::strerror(errno)));
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return Status(SL_PERMISSION_DENIED,
                  fmt::format("{}: refused: {} is writable by {} (mode {:04o}); "
                              "run `chmod go-w {}`",
                              path.string(), S_ISDIR(st.st_mode) ? "directory" : "file",
                              (st.st_mode & S_IWOTH) ? "others" : "its group", st.st_mode & 07777,
                              path.string()));
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return Status(
        SL_PERMISSION_DENIED,
        fmt::format("{}: refused: owned by uid {}, neither root nor this process's user ({})",
                    path.string(), st.st_uid, ::geteuid()));
  }
  return Status::ok();
}

Status PluginLoader::load_file(const fs::path& file) {
  std::error_code ec;
  fs::path canonical = fs::canonical(file, ec);
  if (ec) return Status(SL_NOT_FOUND, fmt::format("{}: {}", file.string(), ec.message()));
  if (std::find(loaded_files_.begin(), loaded_files_.end(), canonical) != loaded_files_.end()) {
    return Status::ok();  // reached twice (two search entries, or a symlink)
  }
  SLUICE_RETURN_IF_ERROR(check_not_tamperable(canonical.parent_path()));
  SLUICE_RETURN_IF_ERROR(check_not_tamperable(canonical));

  auto library = std::make_shared<boost::dll::shared_library>();
  try {
    // RTLD_LOCAL keeps each plugin's symbols to itself; RTLD_NOW fails at load, not mid-run.
    library->load(canonical, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now);
  } catch (const std::exception& e) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: cannot load: {}", file.string(), e.what()));
  }
  if (!library->has(SL_PLUGIN_ENTRY_SYMBOL)) {
    return Status(SL_NOT_FOUND, fmt::format("{}: not a sluice plugin: it does not export the entry "
                                            "symbol '{}' (did you mark it SL_EXPORT?)",
                                            file.string(), SL_PLUGIN_ENTRY_SYMBOL));
  }
  auto entry = library->get<const sl_plugin*(const sl_host_api*)>(SL_PLUGIN_ENTRY_SYMBOL);
  const sl_plugin* descriptor = nullptr;
  try {
    // A C++ plugin that lets an exception out of its entry point breaks the ABI
    // contract; catching it here keeps the host alive to say so.
    descriptor = entry(host_);
  } catch (const std::exception& e) {
    return Status(SL_INTERNAL,
                  fmt::format("{}: entry point threw an exception: {}", file.string(), e.what()));
  } catch (...) {
    return Status(SL_INTERNAL, fmt::format("{}: entry point threw an exception", file.string()));
  }
  if (!descriptor) {
    return Status(SL_FAILED_PRECONDITION,
                  fmt::format("{}: the plugin refused to load (its entry point returned NULL; see "
                              "its log lines above)",
                              file.string()));
  }
  SLUICE_RETURN_IF_ERROR(registry_.add_plugin(descriptor, file, library));
  loaded_files_.push_back(canonical);
  return Status::ok();
}

std::vector<LoadProblem> PluginLoader::load_directory(const fs::path& dir) {
  std::vector<LoadProblem> problems;
  if (Status s = check_not_tamperable(dir); !s.is_ok()) {
    problems.push_back({dir, s.message()});
    return problems;
  }
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (is_plugin_file(entry.path()) && !fs::is_directory(entry.path()))
      files.push_back(entry.path());
  }
  if (ec) {
    problems.push_back(
        {dir, fmt::format("{}: cannot list plugin directory: {}", dir.string(), ec.message())});
    return problems;
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (Status s = load_file(f); !s.is_ok()) problems.push_back({f, s.message()});
  }
  return problems;
}

std::vector<LoadProblem> PluginLoader::load_search_path(const std::vector<fs::path>& dirs) {
  std::vector<LoadProblem> problems;
  std::vector<fs::path> seen;
  for (const auto& dir : dirs) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(dir, ec);
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    if (!fs::is_directory(dir)) {
      problems.push_back({dir, fmt::format("{}: plugin directory does not exist", dir.string())});
      continue;
    }
    auto more = load_directory(dir);
    problems.insert(problems.end(), more.begin(), more.end());
  }
  return problems;
}

}  // namespace sluice::host
