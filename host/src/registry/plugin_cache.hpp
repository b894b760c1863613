// The plugin cache: what each plugin file provides (node types with their roles,
// functions, checkpoint stores), keyed by the file's identity, so that a start opens only
// the plugins its config names. Opening a plugin maps its libraries and runs their
// initializers: librdkafka, libpq and their TLS and Kerberos stacks cost tens of
// milliseconds, which `sluiced run` of a small pipeline should not pay for plugins it does
// not use. GStreamer keeps such a registry cache of its elements for the same reason.
//
// The cache is a hint, never trusted for more than "which file to open": a plugin it
// names is checked like any other when it is opened (PluginLoader::load_file), and a
// plugin that turns out to provide other names than the cache says is reported stale
// (PluginRegistry loads every deferred plugin then). A file whose identity (device,
// inode, size, mtime, ctime) or whose host (version, ABI) changed is opened at discovery.
#pragma once

#include "common/result.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host {

struct PluginInfo;

// What identifies one version of a file without reading it: a rebuilt or replaced plugin
// has another inode, size, mtime or (for a touched or chmod'ed one) ctime.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  static FileIdentity of(const struct stat& st);
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// One plugin file as the cache records it.
struct CachedPlugin {
  std::filesystem::path file;  // canonical
  std::string name;            // the plugin's name (sl_plugin.name)
  FileIdentity identity;
  std::vector<std::pair<std::string, int32_t>> node_types;  // name, SL_ROLE_*
  std::vector<std::string> functions;
  std::vector<std::string> stores;

  // What a loaded plugin provides, as the cache would record it.
  static CachedPlugin describe(const PluginInfo& plugin, const FileIdentity& identity);
  // Same names (order aside): the cache told the truth about the file.
  [[nodiscard]] bool same_names(const CachedPlugin& other) const;
};

class PluginCache {
 public:
  // Where the cache lives: $SLUICE_PLUGIN_CACHE ("off" or empty: no cache), else
  // $CACHE_DIRECTORY/plugins.json (systemd's CacheDirectory=), else
  // $XDG_CACHE_HOME/sluice/plugins.json, else $HOME/.cache/sluice/plugins.json; empty
  // when none is set.
  static std::filesystem::path default_path();

  // The cache at `path`, or an empty one when it is missing, unreadable, malformed,
  // written by another host version, or could be changed by another user (the same rule
  // as plugin files: owned by root or this user, not group- or world-writable).
  static PluginCache read(const std::filesystem::path& path);

  // The entry for `file` (canonical) if its identity is still `identity`.
  [[nodiscard]] const CachedPlugin* find(const std::filesystem::path& file,
                                         const FileIdentity& identity) const;
  // Adds or replaces the entry for plugin.file.
  void put(CachedPlugin plugin);
  // Removes the entry for `file`, if any.
  void remove(const std::filesystem::path& file);
  // Entries whose file no longer exists go; the rest stay (other configs search other
  // directories), at most a bounded number of them.
  void prune();
  [[nodiscard]] const std::vector<CachedPlugin>& entries() const { return entries_; }

  // Writes atomically (a temporary file, mode 0600, renamed over the old one), creating
  // the directory if needed. Concurrent writers: the last rename wins, and a lost
  // entry only costs one more open at the next start.
  [[nodiscard]] Status write(const std::filesystem::path& path) const;

 private:
  std::vector<CachedPlugin> entries_;
};

}  // namespace sluice::host
