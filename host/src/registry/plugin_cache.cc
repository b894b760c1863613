#include "registry/plugin_cache.hpp"

#include "registry/plugin_registry.hpp"
#include "value/json.hpp"
#include "value/value.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "unknown"
#endif

namespace sluice::host {
namespace fs = std::filesystem;

namespace {

constexpr int k_format = 1;
// A cache is a few kilobytes; anything much larger is not ours.
constexpr std::streamsize k_max_cache_bytes = 4 << 20;
constexpr size_t k_max_entries = 512;

// The host that wrote the cache: another version, ABI or build of sluiced may accept
// other plugins (a plugin's min_host_minor, the registry's checks), so its cache is not
// reused. The executable's identity stands for the build.
std::string host_key() {
  std::string key = fmt::format("sluiced {} abi {}.{}", SLUICE_VERSION, SL_ABI_MAJOR, SL_ABI_MINOR);
  struct stat st {};
  if (::stat("/proc/self/exe", &st) == 0) {
    const FileIdentity id = FileIdentity::of(st);
    key += fmt::format(" exe {}:{}:{}:{}", id.device, id.inode, id.size, id.mtime_ns);
  }
  return key;
}

int64_t nanoseconds(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

Value strings(const std::vector<std::string>& names) {
  std::vector<Value> items;
  items.reserve(names.size());
  for (const auto& n : names) items.push_back(Value::string(n));
  return Value::array(items);
}

Value encode(const CachedPlugin& p) {
  std::vector<Value> types;
  for (const auto& [name, role] : p.node_types) {
    const Value pair[] = {Value::string(name), Value::integer(role)};
    types.push_back(Value::array(pair));
  }
  const std::pair<std::string, Value> fields[] = {
      {"file", Value::string(p.file.string())},
      {"name", Value::string(p.name)},
      {"device", Value::integer(static_cast<int64_t>(p.identity.device))},
      {"inode", Value::integer(static_cast<int64_t>(p.identity.inode))},
      {"size", Value::integer(static_cast<int64_t>(p.identity.size))},
      {"mtime_ns", Value::integer(p.identity.mtime_ns)},
      {"ctime_ns", Value::integer(p.identity.ctime_ns)},
      {"node_types", Value::array(types)},
      {"functions", strings(p.functions)},
      {"stores", strings(p.stores)},
  };
  return Value::object(fields);
}

std::optional<int64_t> int_field(const Value& v, std::string_view key) {
  auto f = v.get(key);
  if (!f || !f->is_int()) return std::nullopt;
  return f->as_int();
}

bool read_strings(const Value& v, std::string_view key, std::vector<std::string>& out) {
  auto f = v.get(key);
  if (!f || !f->is_array()) return false;
  for (size_t i = 0; i < f->size(); ++i) {
    const Value s = f->at(i);
    if (!s.is_string()) return false;
    out.emplace_back(s.as_str());
  }
  return true;
}

// One entry, or nullopt when any field is missing or of another type.
std::optional<CachedPlugin> decode(const Value& v) {
  if (!v.is_object()) return std::nullopt;
  CachedPlugin p;
  auto file = v.get("file");
  if (!file || !file->is_string() || file->as_str().empty()) return std::nullopt;
  p.file = std::string(file->as_str());
  auto name = v.get("name");
  if (!name || !name->is_string()) return std::nullopt;
  p.name = std::string(name->as_str());
  const auto device = int_field(v, "device"), inode = int_field(v, "inode"),
             size = int_field(v, "size"), mtime = int_field(v, "mtime_ns"),
             ctime = int_field(v, "ctime_ns");
  if (!device || !inode || !size || !mtime || !ctime) return std::nullopt;
  p.identity = {static_cast<uint64_t>(*device), static_cast<uint64_t>(*inode),
                static_cast<uint64_t>(*size), *mtime, *ctime};
  auto types = v.get("node_types");
  if (!types || !types->is_array()) return std::nullopt;
  for (size_t i = 0; i < types->size(); ++i) {
    const Value pair = types->at(i);
    if (!pair.is_array() || pair.size() != 2 || !pair.at(0).is_string() || !pair.at(1).is_int()) {
      return std::nullopt;
    }
    p.node_types.emplace_back(std::string(pair.at(0).as_str()),
                              static_cast<int32_t>(pair.at(1).as_int()));
  }
  if (!read_strings(v, "functions", p.functions) || !read_strings(v, "stores", p.stores)) {
    return std::nullopt;
  }
  return p;
}

}  // namespace

FileIdentity FileIdentity::of(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(st.st_size), nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

CachedPlugin CachedPlugin::describe(const PluginInfo& plugin, const FileIdentity& identity) {
  CachedPlugin p;
  p.file = plugin.file;
  p.name = plugin.name;
  p.identity = identity;
  for (const NodeTypeInfo* t : plugin.node_types) p.node_types.emplace_back(t->name, t->role);
  for (const FunctionInfo* f : plugin.functions) p.functions.push_back(f->name);
  for (const StoreInfo* s : plugin.stores) p.stores.push_back(s->name);
  return p;
}

bool CachedPlugin::same_names(const CachedPlugin& other) const {
  auto sorted = [](auto v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  return name == other.name && sorted(node_types) == sorted(other.node_types) &&
         sorted(functions) == sorted(other.functions) && sorted(stores) == sorted(other.stores);
}

fs::path PluginCache::default_path() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (const char* explicit_path = std::getenv("SLUICE_PLUGIN_CACHE")) {
    const std::string p = explicit_path;
    return p.empty() || p == "off" ? fs::path() : fs::path(p);
  }
  // systemd sets CACHE_DIRECTORY to the unit's CacheDirectory= (several: colon-separated).
  if (std::string dir = env("CACHE_DIRECTORY"); !dir.empty()) {
    return fs::path(dir.substr(0, dir.find(':'))) / "plugins.json";
  }
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute()) {
    return fs::path(xdg) / "sluice" / "plugins.json";
  }
  if (std::string home = env("HOME"); !home.empty() && fs::path(home).is_absolute()) {
    return fs::path(home) / ".cache" / "sluice" / "plugins.json";
  }
  return {};
}

PluginCache PluginCache::read(const fs::path& path) {
  PluginCache cache;
  if (path.empty()) return cache;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return cache;
  struct stat st {};
  const bool trusted =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
      (st.st_uid == 0 || st.st_uid == ::geteuid()) && st.st_size < k_max_cache_bytes;
  std::string text;
  if (trusted) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (text.empty()) return cache;
  auto doc = json_parse(text);
  if (!doc.is_ok() || !doc->is_object()) return cache;
  auto format = int_field(*doc, "format");
  auto host = doc->get("host");
  auto plugins = doc->get("plugins");
  if (!format || *format != k_format || !host || !host->is_string() ||
      host->as_str() != host_key() || !plugins || !plugins->is_array()) {
    return cache;
  }
  for (size_t i = 0; i < plugins->size() && i < k_max_entries; ++i) {
    auto entry = decode(plugins->at(i));
    if (!entry) return PluginCache();  // one bad entry: the whole file is suspect
    cache.put(std::move(*entry));
  }
  return cache;
}

const CachedPlugin* PluginCache::find(const fs::path& file, const FileIdentity& identity) const {
  for (const auto& e : entries_) {
    if (e.file == file) return e.identity == identity ? &e : nullptr;
  }
  return nullptr;
}

void PluginCache::put(CachedPlugin plugin) {
  remove(plugin.file);
  entries_.push_back(std::move(plugin));
}

void PluginCache::remove(const fs::path& file) {
  std::erase_if(entries_, [&](const CachedPlugin& e) { return e.file == file; });
}

void PluginCache::prune() {
  std::erase_if(entries_, [](const CachedPlugin& e) {
    std::error_code ec;
    return !fs::is_regular_file(e.file, ec);
  });
  if (entries_.size() > k_max_entries) {
    entries_.erase(entries_.begin(), entries_.end() - static_cast<ptrdiff_t>(k_max_entries));
  }
}

Status PluginCache::write(const fs::path& path) const {
  if (path.empty()) return Status::ok();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return Status(SL_UNAVAILABLE,
                  fmt::format("{}: cannot create: {}", path.parent_path().string(), ec.message()));
  }
  std::vector<Value> plugins;
  plugins.reserve(entries_.size());
  for (const auto& e : entries_) plugins.push_back(encode(e));
  const std::pair<std::string, Value> fields[] = {
      {"format", Value::integer(k_format)},
      {"host", Value::string(host_key())},
      {"plugins", Value::array(plugins)},
  };
  const std::string text = json_dump(Value::object(fields).raw()) + "\n";

  // (fmt, not "." + string: GCC 12 at -O3 warns falsely on that operator+, -Werror=restrict.)
  std::string tmp =
      (path.parent_path() / fmt::format(".{}.XXXXXX", path.filename().string())).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return Status(SL_UNAVAILABLE, fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == text.size();
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Status(SL_UNAVAILABLE, fmt::format("{}: cannot write: {}", path.string(), why));
  }
  return Status::ok();
}

}  // namespace sluice::host
