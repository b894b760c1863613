#include "checkpoint/fs_store.hpp"

#include "value/value.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <system_error>

namespace sluice::host::checkpoint {
namespace {

constexpr std::string_view k_prefix = "epoch-";
constexpr std::string_view k_suffix = ".ckpt";
constexpr std::string_view k_committed_suffix = ".committed";

// Several processes may share the directory (the members of one pipeline, docs/SCALING.md):
// each writes its temporary files under a tag of its own, and open removes only temporary
// files left long ago (by a crash), never one another process is writing now.
constexpr auto k_stale_tmp_age = std::chrono::hours(1);

struct FsStore {
  sl_context* ctx;
  const sl_host_api* host;
  std::filesystem::path dir;
  std::string tmp_tag;  // "<pid>.<random>": this store's temporary files
};

sl_status fail(FsStore* s, sl_status st, const std::string& msg) {
  s->host->set_error(s->ctx, msg.data(), msg.size());
  return st;
}

sl_status errno_fail(FsStore* s, int err, std::string_view what, const std::filesystem::path& p) {
  sl_status st = err == ENOSPC || err == EDQUOT || err == EFBIG  ? SL_RESOURCE_EXHAUSTED
                 : err == EACCES || err == EPERM || err == EROFS ? SL_PERMISSION_DENIED
                 : err == ENOENT                                 ? SL_NOT_FOUND
                                                                 : SL_INTERNAL;
  return fail(s, st, fmt::format("cannot {} '{}': {}", what, p.string(), std::strerror(err)));
}

std::string committed_file(uint64_t epoch) {
  return fmt::format("{}{:020}{}", k_prefix, epoch, k_committed_suffix);
}

sl_status fsync_dir(FsStore* s) {
  int fd = ::open(s->dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_fail(s, errno, "open directory", s->dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return errno_fail(s, err, "fsync directory", s->dir);
  return SL_OK;
}

// Writes `size` bytes to a new file at `path` via a temporary file, fsync and rename.
sl_status write_atomically(FsStore* s, const std::filesystem::path& path, const void* data,
                           size_t size) {
  // fmt, not `"." + name + ".tmp"`: GCC 12 at -O3 reports a false -Wrestrict on that
  // std::string concatenation.
  std::filesystem::path tmp =
      s->dir / fmt::format(".{}.{}.tmp", path.filename().string(), s->tmp_tag);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_fail(s, errno, "create", tmp);
  auto abandon = [&](int err, std::string_view what) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return errno_fail(s, err, what, tmp);
  };
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return abandon(errno, "write");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return abandon(errno, "fsync");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return errno_fail(s, err, "close", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return errno_fail(s, err, "rename into place", path);
  }
  return fsync_dir(s);
}

sl_status fs_open(const sl_store_init* init, void** out_self) {
  *out_self = nullptr;
  auto* s = new FsStore{
      init->ctx, init->host, {}, fmt::format("{}.{:08x}", ::getpid(), std::random_device{}())};
  sl_value dir = sl_null();
  std::string_view pipeline(init->pipeline.data, init->pipeline.size);
  if (init->host->object_get(init->config, "dir", 3, &dir) && dir.kind == SL_KIND_STRING) {
    sl_str d = init->host->value_str(dir);
    s->dir = std::string(d.data, d.size);
  } else {
    s->dir = default_fs_dir(pipeline);
  }
  for (const auto& part : s->dir) {
    if (part == "..") {
      sl_status st = fail(s, SL_INVALID_ARGUMENT,
                          fmt::format("dir '{}' must not contain '..'", s->dir.string()));
      delete s;
      return st;
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(s->dir, ec);
  if (ec || !std::filesystem::is_directory(s->dir)) {
    sl_status st = fail(s, SL_PERMISSION_DENIED,
                        fmt::format("cannot create the checkpoint directory '{}': {}",
                                    s->dir.string(), ec ? ec.message() : "not a directory"));
    delete s;
    return st;
  }
  // A crash during write leaves a temporary file behind: never a checkpoint, so drop it
  // once it is old enough not to be another process's write in progress.
  const auto now = std::filesystem::file_time_type::clock::now();
  for (const auto& entry : std::filesystem::directory_iterator(s->dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(".epoch-") || !name.ends_with(".tmp")) continue;
    const auto written = std::filesystem::last_write_time(entry.path(), ec);
    if (!ec && now - written >= k_stale_tmp_age) std::filesystem::remove(entry.path(), ec);
  }
  *out_self = s;
  return SL_OK;
}

void fs_close(void* self) { delete static_cast<FsStore*>(self); }

sl_status fs_write(void* self, uint64_t epoch, const void* data, size_t size) {
  auto* s = static_cast<FsStore*>(self);
  // A rewritten epoch starts uncommitted.
  ::unlink((s->dir / committed_file(epoch)).c_str());
  return write_atomically(s, s->dir / fs_epoch_file(epoch), data, size);
}

sl_status fs_mark_committed(void* self, uint64_t epoch) {
  auto* s = static_cast<FsStore*>(self);
  return write_atomically(s, s->dir / committed_file(epoch), "", 0);
}

sl_status fs_read(void* self, uint64_t epoch, sl_value* out) {
  auto* s = static_cast<FsStore*>(self);
  *out = sl_null();
  std::filesystem::path path = s->dir / fs_epoch_file(epoch);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_fail(s, errno, "open", path);
  // One buffer of the file's size, read into directly and handed over without a copy
  // (bytes_wrap; freed with the value): a checkpoint can be tens of MB.
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return errno_fail(s, err, "stat", path);
  }
  size_t capacity = static_cast<size_t>(st.st_size) + 1;  // +1: sees a file that grew
  auto* data = static_cast<char*>(std::malloc(capacity));
  size_t size = 0;
  while (data) {
    if (size == capacity) {
      capacity *= 2;
      auto* bigger = static_cast<char*>(std::realloc(data, capacity));
      if (!bigger) break;
      data = bigger;
    }
    ssize_t n = ::read(fd, data + size, capacity - size);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      std::free(data);
      return errno_fail(s, err, "read", path);
    }
    if (n == 0) {
      ::close(fd);
      *out = bytes_wrap(data, size, std::free, data);
      return SL_OK;
    }
    size += static_cast<size_t>(n);
  }
  ::close(fd);
  std::free(data);
  return errno_fail(s, ENOMEM, "read", path);
}

sl_status fs_list(void* self, sl_epoch_list_fn fn, void* arg) {
  auto* s = static_cast<FsStore*>(self);
  std::error_code ec;
  std::filesystem::directory_iterator it(s->dir, ec);
  if (ec) return errno_fail(s, ec.value(), "list", s->dir);
  for (const auto& entry : it) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(k_prefix) || !name.ends_with(k_suffix)) continue;
    std::string digits =
        name.substr(k_prefix.size(), name.size() - k_prefix.size() - k_suffix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    sl_epoch_info info{};
    info.struct_size = sizeof info;
    info.epoch = std::strtoull(digits.c_str(), nullptr, 10);
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) == 0) {
      info.size = static_cast<uint64_t>(st.st_size);
      info.time_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    }
    info.committed = std::filesystem::exists(s->dir / committed_file(info.epoch), ec) ? 1 : 0;
    fn(arg, &info);
  }
  return SL_OK;
}

sl_status fs_remove(void* self, uint64_t epoch) {
  auto* s = static_cast<FsStore*>(self);
  for (const std::string& name : {fs_epoch_file(epoch), committed_file(epoch)}) {
    std::filesystem::path p = s->dir / name;
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) return errno_fail(s, errno, "remove", p);
  }
  return SL_OK;
}

constexpr std::array k_params{
    sl_param{sizeof(sl_param), "dir", SL_PARAM_STRING, 0, nullptr,
             "Directory of the checkpoint files (created if missing; no '..'). Default: "
             "$STATE_DIRECTORY/<name> under systemd, else ./<name>.checkpoints.",
             0, 0, 0.0, 0.0, nullptr},
};

const sl_checkpoint_store k_fs_store = [] {
  sl_checkpoint_store s{};
  s.struct_size = sizeof s;
  s.name = "fs";
  s.doc =
      "Built-in filesystem store: one file per epoch in `dir`, written to a temporary file, "
      "fsynced, renamed into place and the directory fsynced.";
  s.params = k_params.data();
  s.param_count = static_cast<uint32_t>(k_params.size());
  s.open = fs_open;
  s.close = fs_close;
  s.write = fs_write;
  s.mark_committed = fs_mark_committed;
  s.read = fs_read;
  s.list = fs_list;
  s.remove = fs_remove;
  return s;
}();

}  // namespace

const sl_checkpoint_store* fs_store_descriptor() { return &k_fs_store; }

std::filesystem::path default_fs_dir(std::string_view pipeline) {
  const char* state = std::getenv("STATE_DIRECTORY");
  if (state && *state) {
    // systemd may pass several directories separated by ':'; the first is ours.
    std::string first(state);
    first = first.substr(0, first.find(':'));
    return std::filesystem::path(first) / std::string(pipeline);
  }
  return std::filesystem::path(".") / (std::string(pipeline) + ".checkpoints");
}

std::string fs_epoch_file(uint64_t epoch) {
  return fmt::format("{}{:020}{}", k_prefix, epoch, k_suffix);
}

}  // namespace sluice::host::checkpoint
