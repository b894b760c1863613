#include "registry/plugin_loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__ELF__)
#include <elf.h>
#include <link.h>
#endif
#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#ifndef SLUICE_DEFAULT_PLUGIN_DIR
#define SLUICE_DEFAULT_PLUGIN_DIR "/usr/lib/sluice/plugins"
#endif
#ifndef SLUICE_PLUGIN_DIR_FROM_BINDIR
#define SLUICE_PLUGIN_DIR_FROM_BINDIR "../lib/sluice/plugins"
#endif

namespace sluice::host {
namespace fs = std::filesystem;

namespace {

bool is_plugin_file(const fs::path& p) {
  auto ext = p.extension().string();
  return ext == ".so" || ext == ".dylib" || ext == ".dll";
}

std::string describe_type(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  return "not a regular file";
}

// The mode and owner rule of check_not_tamperable, on a stat already taken.
Status check_mode_and_owner(const fs::path& path, const struct stat& st) {
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

// Reads exactly `size` bytes at `offset`; false on a short read or an error.
bool read_at(int fd, void* buf, size_t size, off_t offset) {
  auto* p = static_cast<char*>(buf);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

#if defined(__ELF__)
// The dynamic loader maps the program headers' file ranges; a range past the end of
// the file is a SIGBUS inside dlopen (the page exists, its bytes do not). Checks that
// the file is an ELF shared object of this machine's class and byte order whose header
// and every segment lie within its `size` bytes.
Status check_elf(const fs::path& path, int fd, uint64_t size) {
  auto refuse = [&](const std::string& why) {
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("{}: cannot load: {} ({} bytes)", path.string(), why, size));
  };
  ElfW(Ehdr) eh{};
  if (size < sizeof eh || !read_at(fd, &eh, sizeof eh, 0)) {
    if (size >= SELFMAG) {
      unsigned char magic[SELFMAG];
      if (read_at(fd, magic, SELFMAG, 0) && std::memcmp(magic, ELFMAG, SELFMAG) == 0) {
        return refuse("truncated ELF file: its header is incomplete");
      }
    }
    return refuse("not an ELF shared object");
  }
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return refuse("not an ELF shared object");
  constexpr unsigned char k_class = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
  constexpr unsigned char k_data =
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (eh.e_ident[EI_CLASS] != k_class || eh.e_ident[EI_DATA] != k_data) {
    return refuse("an ELF file for another word size or byte order than this host");
  }
  if (eh.e_type != ET_DYN) return refuse("an ELF file that is not a shared object");
  if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 || eh.e_phnum == PN_XNUM) {
    return refuse("malformed ELF program header table");
  }
  const uint64_t table_size = uint64_t{eh.e_phnum} * sizeof(ElfW(Phdr));
  if (eh.e_phoff > size || table_size > size - eh.e_phoff) {
    return refuse("truncated ELF file: its program headers end past the end of the file");
  }
  std::vector<ElfW(Phdr)> headers(eh.e_phnum);
  if (!read_at(fd, headers.data(), table_size, static_cast<off_t>(eh.e_phoff))) {
    return refuse("cannot read its ELF program headers");
  }
  for (const ElfW(Phdr) & ph : headers) {
    if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) {
      return refuse(
          fmt::format("truncated ELF file: a segment ends at byte {} past the end of the file",
                      static_cast<uint64_t>(ph.p_offset) + static_cast<uint64_t>(ph.p_filesz)));
    }
  }
  return Status::ok();
}
#endif

// Opens `path` for the checks before dlopen: a regular file (never a FIFO or device,
// whose open could block or have side effects: stat first, then open non-blocking and
// fstat the descriptor), not modifiable by others, and (on ELF systems) a complete
// shared object.
Status check_plugin_file(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(SL_NOT_FOUND, fmt::format("{}: {}", path.string(), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: refused: {}, not a regular file",
                                                   path.string(), describe_type(st.st_mode)));
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return Status(SL_NOT_FOUND,
                  fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) {
    return Status(SL_NOT_FOUND,
                  fmt::format("{}: cannot stat: {}", path.string(), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {  // replaced between stat and open
    return Status(SL_INVALID_ARGUMENT, fmt::format("{}: refused: {}, not a regular file",
                                                   path.string(), describe_type(st.st_mode)));
  }
  SLUICE_RETURN_IF_ERROR(check_mode_and_owner(path, st));
#if defined(__ELF__)
  SLUICE_RETURN_IF_ERROR(check_elf(path, fd, static_cast<uint64_t>(st.st_size)));
#endif
  return Status::ok();
}

}  // namespace

fs::path default_plugin_dir() {
  // Relative to the running executable, so that an install moved to (or made at) another
  // prefix than the configured one finds its own plugins. The build tree's sluiced
  // (build/host/sluiced) has no ../lib/sluice/plugins: tests name build/plugins-out in
  // SLUICE_PLUGIN_PATH.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return SLUICE_DEFAULT_PLUGIN_DIR;
  return (exe.parent_path() / SLUICE_PLUGIN_DIR_FROM_BINDIR).lexically_normal();
}

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
  return check_mode_and_owner(path, st);
}

Status check_ancestors(const fs::path& dir) {
  std::error_code ec;
  const fs::path real = fs::canonical(dir, ec);
  if (ec) return Status(SL_NOT_FOUND, fmt::format("{}: {}", dir.string(), ec.message()));
  for (fs::path p = real.parent_path();; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      return Status(SL_NOT_FOUND, fmt::format("{}: cannot stat its ancestor {}: {}", dir.string(),
                                              p.string(), std::strerror(errno)));
    }
    if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
      return Status(SL_PERMISSION_DENIED,
                    fmt::format("{}: refused: its ancestor directory {} is owned by uid {}, "
                                "neither root nor this process's user ({}), who could replace it",
                                dir.string(), p.string(), st.st_uid, ::geteuid()));
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
      return Status(
          SL_PERMISSION_DENIED,
          fmt::format("{}: refused: its ancestor directory {} is writable by {} "
                      "(mode {:04o}) and not sticky, so they could replace {}; run "
                      "`chmod go-w {}` (or `chmod +t` it)",
                      dir.string(), p.string(), (st.st_mode & S_IWOTH) ? "others" : "its group",
                      st.st_mode & 07777, dir.string(), p.string()));
    }
    if (p == p.root_path() || p == p.parent_path()) break;
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
  SLUICE_RETURN_IF_ERROR(check_ancestors(canonical.parent_path()));
  SLUICE_RETURN_IF_ERROR(check_plugin_file(canonical));

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
  for (const Status& s : {check_not_tamperable(dir), check_ancestors(dir)}) {
    if (!s.is_ok()) {
      problems.push_back({dir, s.message()});
      return problems;
    }
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
    if (cache_use_ == PluginCacheUse::defer) {
      std::error_code canonical_error;
      const fs::path canonical = fs::canonical(f, canonical_error);
      if (!canonical_error && defer_cached(canonical)) continue;
    }
    if (Status s = load_file(f); !s.is_ok()) {
      problems.push_back({f, s.message()});
    } else if (cache_use_ != PluginCacheUse::none) {
      remember(f);
    }
  }
  return problems;
}

void PluginLoader::use_cache(fs::path path, PluginCacheUse use) {
  cache_path_ = std::move(path);
  cache_use_ = cache_path_.empty() ? PluginCacheUse::none : use;
  if (cache_use_ == PluginCacheUse::none) return;
  cache_ = PluginCache::read(cache_path_);
  // Opens a deferred plugin when a lookup first needs it, with every check of load_file;
  // when the cache was wrong about it, corrects the cache for the next start.
  registry_.set_deferred_opener([&registry = registry_, host = host_, cache_path = cache_path_](
                                    const CachedPlugin& cached) -> Result<CachedPlugin> {
    PluginLoader loader(registry, host);
    SLUICE_RETURN_IF_ERROR(loader.load_file(cached.file));
    struct stat st {};
    const FileIdentity identity =
        ::stat(cached.file.c_str(), &st) == 0 ? FileIdentity::of(st) : FileIdentity{};
    for (const auto& p : registry.plugins()) {
      if (p->file != cached.file) continue;
      CachedPlugin actual = CachedPlugin::describe(*p, identity);
      if (!actual.same_names(cached)) {
        PluginCache fixed = PluginCache::read(cache_path);
        fixed.put(actual);
        (void)fixed.write(cache_path);  // a cache that cannot be written is no error
      }
      return actual;
    }
    return Status(SL_INTERNAL,
                  fmt::format("{}: loaded, but not in the registry", cached.file.string()));
  });
}

bool PluginLoader::defer_cached(const fs::path& file) {
  if (std::find(loaded_files_.begin(), loaded_files_.end(), file) != loaded_files_.end()) {
    return true;  // reached twice (two search entries, or a symlink)
  }
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const CachedPlugin* cached = cache_.find(file, FileIdentity::of(st));
  // A file others could change, or whose names another plugin has, is opened now: the
  // refusal is then the same as without a cache.
  if (!cached || !check_mode_and_owner(file, st).is_ok() || registry_.provides_any_of(*cached)) {
    return false;
  }
  registry_.defer(*cached);
  loaded_files_.push_back(file);
  return true;
}

void PluginLoader::remember(const fs::path& file) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(file, ec);
  struct stat st {};
  if (ec || ::stat(canonical.c_str(), &st) != 0) return;
  for (const auto& p : registry_.plugins()) {
    if (p->file != file) continue;
    CachedPlugin learned = CachedPlugin::describe(*p, FileIdentity::of(st));
    learned.file = canonical;
    const CachedPlugin* known = cache_.find(canonical, learned.identity);
    if (!known || !known->same_names(learned)) {
      cache_.put(std::move(learned));
      cache_changed_ = true;
    }
    return;
  }
}

std::vector<LoadProblem> PluginLoader::load_search_path(const std::vector<fs::path>& dirs) {
  std::vector<LoadProblem> problems;
  std::vector<fs::path> seen;
  std::vector<fs::path> searched;
  for (const auto& dir : dirs) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(dir, ec);
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    searched.push_back(dir);
    if (!fs::is_directory(dir)) {
      problems.push_back({dir, fmt::format("{}: plugin directory does not exist", dir.string())});
      continue;
    }
    auto more = load_directory(dir);
    problems.insert(problems.end(), more.begin(), more.end());
  }
  const fs::path fallback = default_plugin_dir();
  registry_.record_search(std::move(searched), fs::is_directory(fallback) ? fs::path() : fallback);
  if (cache_use_ != PluginCacheUse::none && cache_changed_) {
    cache_.prune();
    // A cache that cannot be written is no error: the next start opens every plugin again.
    if (Status st = cache_.write(cache_path_); !st.is_ok()) {
      spdlog::debug("plugin cache not written: {}", st.message());
    }
    cache_changed_ = false;
  }
  return problems;
}

}  // namespace sluice::host
