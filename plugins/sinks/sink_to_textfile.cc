// sink_to_textfile: elements to a file, one per line; every I/O error is reported.
#include <sluice/sluice.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

#include "line_text.hpp"
#include "sinks.hpp"

namespace sluice::sinks {

using sdk::Batch;
using sdk::Config;
using sdk::Context;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

constexpr std::string_view k_task_placeholder = "{task}";
constexpr size_t k_buffer_size = size_t{64} * 1024;

/// `path` with every "{task}" replaced by `task_index`; throws through cfg when the graph
/// runs several tasks and the path has no placeholder (they would overwrite one file).
std::string task_path(const Config& cfg, uint32_t task_index, uint32_t task_count) {
  std::string path = cfg.get_string("path");
  if (path.empty()) cfg.fail("path", "must not be empty");
  bool replaced = false;
  for (size_t at = path.find(k_task_placeholder); at != std::string::npos;
       at = path.find(k_task_placeholder, at)) {
    const std::string index = std::to_string(task_index);
    path.replace(at, k_task_placeholder.size(), index);
    at += index.size();
    replaced = true;
  }
  if (!replaced && task_count > 1) {
    cfg.fail("path", "must contain {task} when the graph runs " + std::to_string(task_count) +
                         " tasks, so that each task writes its own file (got \"" + path + "\")");
  }
  return path;
}

}  // namespace

void SinkToTextfile::validate(const Config& cfg) {
  for (uint32_t task = 0; task < std::max<uint32_t>(cfg.task_count(), 1); ++task) {
    const std::string path = task_path(cfg, task, cfg.task_count());
    if (!cfg.check_environment()) continue;
    // What start's open(O_WRONLY | O_CREAT) needs: a writable directory (search included),
    // and a writable file when it exists.
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      cfg.fail("path", "the directory '" + dir + "' does not exist (start would fail to open '" +
                           path + "')");
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
      cfg.fail("path", "the directory '" + dir +
                           "' is not writable for this user (start would "
                           "fail to open '" +
                           path + "')");
    }
    if (::stat(path.c_str(), &st) == 0 &&
        (S_ISDIR(st.st_mode) || ::access(path.c_str(), W_OK) != 0)) {
      cfg.fail("path", "'" + path + "' exists and is " +
                           (S_ISDIR(st.st_mode) ? "a directory" : "not writable for this user"));
    }
  }
}

SinkToTextfile::SinkToTextfile(const sl_node_init& init, const Config& cfg) : ctx_(init.ctx) {
  path_ = task_path(cfg, init.task_index, init.task_count);
  json_ = cfg.get_choice("format", {"json", "text"}) == 0;
  append_ = cfg.get_bool("append");
  flush_each_batch_ = cfg.get_choice("flush", {"batch", "finish"}) == 0;
  exactly_once_ = cfg.get_bool("exactly_once");
}

SinkToTextfile::~SinkToTextfile() {
  if (file_ == nullptr) return;
  const Status st = close_file(false);
  if (!st.is_ok()) ctx_.log_error(st.message() + " (data written since the last flush is lost)");
}

Status SinkToTextfile::io_error(int err, const char* what) const {
  return sdk::errno_status(err,
                           std::string("sink_to_textfile: cannot ") + what + " '" + path_ + "'");
}

Status SinkToTextfile::start(Context ctx) {
  // Restarted from a checkpoint: never truncate (the lines before the checkpoint
  // are output already delivered); with exactly_once, cut what came after it.
  const bool keep = append_ || restored_length_.has_value();
  // Read access too after a restore: an at-least-once restart looks for a cut line.
  const int fd = ::open(
      path_.c_str(),
      (restored_length_ ? O_RDWR : O_WRONLY) | O_CREAT | O_CLOEXEC | (keep ? O_APPEND : O_TRUNC),
      0666);
  if (fd < 0) return io_error(errno, "open");
  if (restored_length_ && *restored_length_ >= 0 && exactly_once_) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return io_error(err, "stat");
    }
    if (st.st_size < *restored_length_) {
      ::close(fd);
      return sdk::Status(SL_DATA_LOSS,
                         "sink_to_textfile: '" + path_ + "' holds " + std::to_string(st.st_size) +
                             " bytes, less than the " + std::to_string(*restored_length_) +
                             " the restored checkpoint recorded: it was truncated or replaced "
                             "outside sluice");
    }
    if (st.st_size > *restored_length_) {
      if (::ftruncate(fd, *restored_length_) != 0 || ::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        return io_error(err, "truncate");
      }
      ctx.log_info("exactly_once: cut '" + path_ + "' back to " +
                   std::to_string(*restored_length_) + " bytes (" +
                   std::to_string(st.st_size - *restored_length_) +
                   " bytes were written after the restored checkpoint)");
    }
  }
  if (restored_length_ && !exactly_once_) {
    // At-least-once: keep what came after the checkpoint, but not a line the
    // crash cut in half (it would run into the next one).
    if (Status st = cut_partial_line(fd); !st.is_ok()) {
      ::close(fd);
      return st;
    }
  }
  file_ = ::fdopen(fd, keep ? "a" : "w");
  if (file_ == nullptr) {
    const int err = errno;
    ::close(fd);
    return io_error(err, "open");
  }
  if (std::setvbuf(file_, nullptr, _IOFBF, k_buffer_size) != 0) return io_error(errno, "buffer");
  return {};
}

Status SinkToTextfile::write(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    return io_error(errno, "write to");
  }
  return {};
}

Status SinkToTextfile::process(Context /*ctx*/, uint32_t /*input*/, Batch batch) {
  if (file_ == nullptr) {
    return sdk::failed_precondition("sink_to_textfile: '" + path_ + "' is not open");
  }
  // The batch's lines in one buffer, handed to stdio in one call.
  text_.clear();
  for (const sl_message& m : batch) {
    const ValueRef v(m.value);
    if (json_) {
      append_json(text_, v);
    } else if (v.is_string()) {
      text_.append(v.as_str());
    } else {
      // The lines before it are written: they precede the bad element in the stream.
      SLUICE_SDK_RETURN_IF_ERROR(write(text_));
      return sdk::invalid_argument("sink_to_textfile: format \"text\" writes strings only, got " +
                                   std::string(v.kind_name()) + " (use format = \"json\")");
    }
    text_.push_back('\n');
  }
  SLUICE_SDK_RETURN_IF_ERROR(write(text_));
  if (flush_each_batch_ && std::fflush(file_) != 0) return io_error(errno, "write to");
  return {};
}

Status SinkToTextfile::close_file(bool sync) {
  std::FILE* file = std::exchange(file_, nullptr);
  if (file == nullptr) return {};
  Status st;
  if (std::fflush(file) != 0) {
    st = io_error(errno, "write to");
  } else if (sync && ::fsync(::fileno(file)) != 0 && errno != EINVAL && errno != EROFS) {
    st = io_error(errno, "fsync");  // EINVAL/EROFS: a pipe or device that has nothing to sync
  } else if (sync) {
    struct stat info {};
    if (::fstat(::fileno(file), &info) == 0) durable_length_ = info.st_size;  // all of it
  }
  if (std::fclose(file) != 0 && st.is_ok()) st = io_error(errno, "close");
  return st;
}

Status SinkToTextfile::finish(Context /*ctx*/) { return close_file(true); }

Status SinkToTextfile::cut_partial_line(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(errno, "stat");
  const int64_t floor = std::max<int64_t>(*restored_length_, 0);
  int64_t end = st.st_size;
  if (end <= floor) return {};
  // Scan back for the last newline after the recorded length.
  char buf[4096];
  int64_t keep = floor;
  for (int64_t at = end; at > floor;) {
    const int64_t from = std::max<int64_t>(floor, at - static_cast<int64_t>(sizeof buf));
    const ssize_t n = ::pread(fd, buf, static_cast<size_t>(at - from), from);
    if (n < 0) return io_error(errno, "read");
    if (n == 0) break;
    bool found = false;
    for (ssize_t i = n - 1; i >= 0; --i) {
      if (buf[i] == '\n') {
        keep = from + i + 1;
        found = true;
        break;
      }
    }
    if (found) break;
    at = from;
  }
  if (keep < end && ::ftruncate(fd, keep) != 0) return io_error(errno, "truncate");
  return {};
}

sdk::Result<bool> SinkToTextfile::checkpoint_prepare(Context /*ctx*/, uint64_t /*epoch*/) {
  if (file_ == nullptr) return true;  // finished (fsynced) or never started: nothing pending
  if (std::fflush(file_) != 0) return io_error(errno, "write to");
  const int fd = ::fileno(file_);
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) return io_error(errno, "fsync");
  struct stat st {};
  if (::fstat(fd, &st) != 0) return io_error(errno, "stat");
  durable_length_ = st.st_size;
  return true;
}

sdk::Result<Value> SinkToTextfile::snapshot(Context /*ctx*/) {
  const int64_t length = durable_length_ >= 0 ? durable_length_ : restored_length_.value_or(-1);
  return Value::object(
      {{"length", Value::integer(length)}, {"exactly_once", Value::boolean(exactly_once_)}});
}

Status SinkToTextfile::restore(Context ctx, ValueRef state) {
  const std::optional<Value> length = state.is_object() ? state.get("length") : std::nullopt;
  if (!length || !length->is_int() || length->as_int() < 0) {
    ctx.log_warn("checkpoint state of '" + path_ +
                 "' has no length (taken before its first write): appending");
    restored_length_ = -1;
    return {};
  }
  restored_length_ = length->as_int();
  return {};
}

void SinkToTextfile::stop(Context ctx) {
  const Status st = close_file(false);
  if (!st.is_ok()) ctx.log_error(st.message() + " (data written since the last flush is lost)");
}

}  // namespace sluice::sinks
