// "committed_lines": a complete C++ sink that takes part in checkpoints, exactly once.
//
// Each element goes to `path` as one JSON line, but only through the checkpoint protocol
// (docs/CHECKPOINTING.md), so that a reader of `path` never sees a line twice, nor a line
// that a restart will replay:
//
//   process             appends to PATH.pending
//   checkpoint_prepare  fsyncs PATH.pending and renames it to PATH.prepared-EPOCH (durable,
//                       not yet visible)
//   snapshot            {"epoch": EPOCH, "length": the length PATH has once EPOCH is
//                       committed}
//   checkpoint_commit   appends every PATH.prepared-E with E <= EPOCH to PATH, fsyncs it and
//                       deletes the prepared file (an aborted epoch's file waits for the
//                       next commit)
//   restart (start)     finishes the commits the crash interrupted, using the length in the
//                       restored state to cut off a half-appended file and anything a later,
//                       unrestored epoch added; drops the rest: the source replays it.
//
// Without [checkpoint] there are no epochs: `finish` (end of input) publishes what came.
// With [runtime] tasks > 1, task N writes PATH.N.
#include <sluice/sluice.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace sluice::sdk;
namespace fs = std::filesystem;

// An open file descriptor, closed with its owner.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

Status write_all(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status(errno, "cannot write " + what);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

// Appends the whole file `from` to `to_fd`.
Status append_file(const fs::path& from, int to_fd, const std::string& to_name) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return errno_status(errno, "cannot open " + from.string());
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status(errno, "cannot read " + from.string());
    if (n == 0) return {};
    SLUICE_SDK_RETURN_IF_ERROR(
        write_all(to_fd, std::string_view(buf.data(), static_cast<size_t>(n)), to_name));
  }
}

// fsync of a directory, so that a rename or unlink in it survives a crash.
Status sync_dir(const fs::path& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.valid() || ::fsync(d.get()) != 0)
    return errno_status(errno, "cannot fsync " + dir.string());
  return {};
}

class CommittedLines final : public Sink {
 public:
  static constexpr const char* k_name = "committed_lines";
  static constexpr const char* k_doc =
      "JSON lines to a file, published on checkpoint commit: exactly once across restarts.";
  static constexpr std::array k_params{
      required("path", SL_PARAM_STRING, "The file to write (task N writes PATH.N when tasks > 1).")
          .non_empty()};
  // No k_flags: overriding snapshot and restore (below) makes the type stateful; the SDK
  // sets SL_NODE_STATEFUL from the overrides (since SDK 1.6).

  // The (const sl_node_init&, const Config&) form, for the task index.
  CommittedLines(const sl_node_init& init, const Config& config)
      : path_(config.get_string("path") +
              (init.task_count > 1 ? "." + std::to_string(init.task_index) : std::string())),
        pending_(path_ + ".pending"),
        dir_(fs::absolute(fs::path(path_)).parent_path()) {}

  // After restore (if any), before the first batch: bring the files to the state the
  // restored checkpoint describes, then open a fresh pending file.
  Status start(Context /*ctx*/) override {
    if (restored_) {
      SLUICE_SDK_RETURN_IF_ERROR(recover());
    } else {
      SLUICE_SDK_RETURN_IF_ERROR(reset_all());
    }
    return open_pending();
  }

  Status process(Context /*ctx*/, uint32_t /*input*/, Batch batch) override {
    std::string lines;
    for (const sl_message& m : batch) {
      const Value line = Value::adopt(host().json_dump(m.value));  // owned
      lines.append(line.as_str()).push_back('\n');
    }
    return write_all(pending_fd_.get(), lines, pending_.string());
  }

  // Durable now: the answer is `true` (no later checkpoint_ready needed).
  Result<bool> checkpoint_prepare(Context /*ctx*/, uint64_t epoch) override {
    SLUICE_SDK_RETURN_IF_ERROR(prepare(epoch));
    return true;
  }

  // Called after checkpoint_prepare answered: the length `path_` has once every prepared
  // epoch is committed.
  Result<Value> snapshot(Context /*ctx*/) override {
    uint64_t length = committed_length_;
    for (const auto& p : prepared_) length += p.size;
    return Value::object({{"epoch", Value::integer(static_cast<int64_t>(last_epoch_))},
                          {"length", Value::integer(static_cast<int64_t>(length))}});
  }

  // After construction, before start: remember the state; start acts on it.
  Status restore(Context /*ctx*/, ValueRef state) override {
    const std::optional<Value> epoch = state.get("epoch");
    const std::optional<Value> length = state.get("length");
    if (!epoch || !epoch->is_int() || !length || !length->is_int()) {
      return invalid_argument("committed_lines: the saved state has no epoch and length");
    }
    restored_ = true;
    last_epoch_ = static_cast<uint64_t>(epoch->as_int());
    restored_length_ = static_cast<uint64_t>(length->as_int());
    return {};
  }

  // The checkpoint holding `epoch` is stored: publish every epoch prepared up to it.
  Status checkpoint_commit(Context /*ctx*/, uint64_t epoch) override { return commit(epoch); }

  // End of input (not a stop): without checkpoints this is the only publication.
  Status finish(Context /*ctx*/) override {
    SLUICE_SDK_RETURN_IF_ERROR(prepare(last_epoch_ + 1));
    return commit(last_epoch_);
  }

 private:
  struct Prepared {
    uint64_t epoch;
    uint64_t size;
  };

  // PATH.pending becomes PATH.prepared-EPOCH, durably; a new PATH.pending is opened.
  Status prepare(uint64_t epoch) {
    if (::fsync(pending_fd_.get()) != 0) {
      return errno_status(errno, "cannot fsync " + pending_.string());
    }
    struct stat st {};
    if (::fstat(pending_fd_.get(), &st) != 0)
      return errno_status(errno, "cannot stat " + pending_.string());
    pending_fd_.reset();
    const fs::path prepared = prepared_path(epoch);
    if (::rename(pending_.c_str(), prepared.c_str()) != 0) {
      return errno_status(errno, "cannot rename " + pending_.string());
    }
    SLUICE_SDK_RETURN_IF_ERROR(sync_dir(dir_));
    prepared_.push_back({epoch, static_cast<uint64_t>(st.st_size)});
    last_epoch_ = epoch;
    return open_pending();
  }

  // Appends every prepared epoch up to `epoch` to PATH, in order.
  Status commit(uint64_t epoch) {
    Fd out(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
    if (!out.valid()) return errno_status(errno, "cannot open " + path_);
    size_t done = 0;
    for (; done < prepared_.size() && prepared_[done].epoch <= epoch; ++done) {
      SLUICE_SDK_RETURN_IF_ERROR(
          append_file(prepared_path(prepared_[done].epoch), out.get(), path_));
    }
    if (done == 0) return {};
    if (::fsync(out.get()) != 0) return errno_status(errno, "cannot fsync " + path_);
    // Only once the appends are durable may the prepared files go: a crash before this
    // point is finished by recover(), which cuts PATH back and appends them again.
    for (size_t i = 0; i < done; ++i) {
      committed_length_ += prepared_[i].size;
      fs::remove(prepared_path(prepared_[i].epoch));
    }
    prepared_.erase(prepared_.begin(), prepared_.begin() + static_cast<std::ptrdiff_t>(done));
    return sync_dir(dir_);
  }

  [[nodiscard]] fs::path prepared_path(uint64_t epoch) const {
    return path_ + ".prepared-" + std::to_string(epoch);
  }

  // PATH.prepared-E files on disk, by epoch.
  [[nodiscard]] std::vector<Prepared> prepared_on_disk() const {
    std::vector<Prepared> out;
    const std::string prefix = fs::path(path_).filename().string() + ".prepared-";
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      uint64_t epoch = 0;
      const char* first = name.data() + prefix.size();
      const char* last = name.data() + name.size();
      auto [end, ec] = std::from_chars(first, last, epoch);
      if (ec != std::errc() || end != last) continue;
      out.push_back({epoch, static_cast<uint64_t>(entry.file_size())});
    }
    std::sort(out.begin(), out.end(),
              [](const Prepared& a, const Prepared& b) { return a.epoch < b.epoch; });
    return out;
  }

  // A fresh start: nothing of an earlier run counts.
  Status reset_all() {
    for (const auto& p : prepared_on_disk()) fs::remove(prepared_path(p.epoch));
    Fd out(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!out.valid()) return errno_status(errno, "cannot create " + path_);
    committed_length_ = 0;
    return {};
  }

  // Restart from a checkpoint whose epoch is last_epoch_ and whose committed length is
  // restored_length_. Prepared files up to that epoch belong to it: the commit may not
  // have happened, or only partly, so PATH is cut back to the length before them and they
  // are appended (again). Later prepared files belong to epochs that were not restored:
  // the source replays their elements.
  Status recover() {
    std::vector<Prepared> keep;
    uint64_t base = restored_length_;
    for (const auto& p : prepared_on_disk()) {
      if (p.epoch <= last_epoch_) {
        keep.push_back(p);
        base -= std::min(base, p.size);
      } else {
        fs::remove(prepared_path(p.epoch));
      }
    }
    Fd out(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (!out.valid()) return errno_status(errno, "cannot open " + path_);
    struct stat st {};
    if (::fstat(out.get(), &st) != 0) return errno_status(errno, "cannot stat " + path_);
    if (static_cast<uint64_t>(st.st_size) < base) {
      return failed_precondition(
          "committed_lines: " + path_ + " is shorter (" + std::to_string(st.st_size) +
          " bytes) than the checkpoint says it was (" + std::to_string(base) + ")");
    }
    if (::ftruncate(out.get(), static_cast<off_t>(base)) != 0) {
      return errno_status(errno, "cannot truncate " + path_);
    }
    committed_length_ = base;
    prepared_ = keep;
    return commit(last_epoch_);
  }

  Status open_pending() {
    pending_fd_ =
        Fd(::open(pending_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
    if (!pending_fd_.valid()) return errno_status(errno, "cannot create " + pending_.string());
    return {};
  }

  std::string path_;
  fs::path pending_;
  fs::path dir_;
  Fd pending_fd_;
  uint64_t committed_length_ = 0;   // bytes of path_ that are published
  std::vector<Prepared> prepared_;  // prepared, not yet committed, by epoch
  uint64_t last_epoch_ = 0;         // the newest prepared (or restored) epoch
  bool restored_ = false;
  uint64_t restored_length_ = 0;
};

}  // namespace

SLUICE_PLUGIN("cpp_committed_sink", "1.0.0",
              "Example plugin in C++: a sink that is exactly once through checkpoint commits.",
              SLUICE_NODE_TYPES(CommittedLines));
