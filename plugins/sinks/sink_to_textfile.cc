// sink_to_textfile: elements to a file, one per line; every I/O error is reported.
#include <sluice/sluice.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>

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
std::string task_path(const Config& cfg, const sl_node_init& init) {
  std::string path = cfg.get_string("path");
  if (path.empty()) cfg.fail("path", "must not be empty");
  bool replaced = false;
  for (size_t at = path.find(k_task_placeholder); at != std::string::npos;
       at = path.find(k_task_placeholder, at)) {
    const std::string index = std::to_string(init.task_index);
    path.replace(at, k_task_placeholder.size(), index);
    at += index.size();
    replaced = true;
  }
  if (!replaced && init.task_count > 1) {
    cfg.fail("path", "must contain {task} when the graph runs " + std::to_string(init.task_count) +
                         " tasks, so that each task writes its own file (got \"" + path + "\")");
  }
  return path;
}

}  // namespace

SinkToTextfile::SinkToTextfile(const sl_node_init& init) : ctx_(init.ctx) {
  const Config cfg(init);
  path_ = task_path(cfg, init);
  json_ = cfg.get_choice("format", {"json", "text"}) == 0;
  append_ = cfg.get_bool("append");
  flush_each_batch_ = cfg.get_choice("flush", {"batch", "finish"}) == 0;
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

Status SinkToTextfile::start(Context /*ctx*/) {
  const int fd =
      ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append_ ? O_APPEND : O_TRUNC), 0666);
  if (fd < 0) return io_error(errno, "open");
  file_ = ::fdopen(fd, append_ ? "a" : "w");
  if (file_ == nullptr) {
    const int err = errno;
    ::close(fd);
    return io_error(err, "open");
  }
  if (std::setvbuf(file_, nullptr, _IOFBF, k_buffer_size) != 0) return io_error(errno, "buffer");
  return {};
}

Status SinkToTextfile::write(std::string_view text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() ||
      std::fputc('\n', file_) == EOF) {
    return io_error(errno, "write to");
  }
  return {};
}

Status SinkToTextfile::process(Context /*ctx*/, uint32_t /*input*/, Batch batch) {
  if (file_ == nullptr) {
    return sdk::failed_precondition("sink_to_textfile: '" + path_ + "' is not open");
  }
  for (const sl_message& m : batch) {
    const ValueRef v(m.value);
    if (json_) {
      const Value text = v.json_dump();
      SLUICE_SDK_RETURN_IF_ERROR(write(text.as_str()));
    } else if (v.is_string()) {
      SLUICE_SDK_RETURN_IF_ERROR(write(v.as_str()));
    } else {
      return sdk::invalid_argument("sink_to_textfile: format \"text\" writes strings only, got " +
                                   std::string(v.kind_name()) + " (use format = \"json\")");
    }
  }
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
  }
  if (std::fclose(file) != 0 && st.is_ok()) st = io_error(errno, "close");
  return st;
}

Status SinkToTextfile::finish(Context /*ctx*/) { return close_file(true); }

void SinkToTextfile::stop(Context ctx) {
  const Status st = close_file(false);
  if (!st.is_ok()) ctx.log_error(st.message() + " (data written since the last flush is lost)");
}

}  // namespace sluice::sinks
