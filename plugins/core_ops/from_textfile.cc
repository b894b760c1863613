// from_textfile: the lines of a text file, optionally followed as it grows.
#include <sluice/sluice.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "source_support.hpp"
#include "sources.hpp"

namespace sluice::core_ops {

namespace {
// Logs at the 1st, 2nd, 4th, 8th... occurrence: visible, but a file full of bad lines
// cannot flood the log.
void warn_sometimes(Context ctx, uint64_t& counter, const std::string& what) {
  ++counter;
  if ((counter & (counter - 1)) == 0) {
    ctx.log_warn(what + " (" + std::to_string(counter) + " so far)");
  }
}
}  // namespace

void FromTextfile::validate(const Config& cfg) {
  if (!cfg.check_environment()) return;
  const std::string path = cfg.get_string("path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    cfg.fail("path", "cannot read '" + path + "': " + std::strerror(errno) +
                         " (start would fail; files are checked from the working directory)");
  }
  if (S_ISDIR(st.st_mode)) cfg.fail("path", "'" + path + "' is a directory");
  if (::access(path.c_str(), R_OK) != 0) {
    cfg.fail("path", "cannot read '" + path + "': " + std::strerror(errno));
  }
}

FromTextfile::FromTextfile(const sl_node_init& init, const Config& cfg)
    : path_(cfg.get_string("path")),
      delimiter_(cfg.get_string("delimiter")),
      from_end_(cfg.get_bool("from_end")),
      follow_(cfg.get_bool("follow")),
      poll_interval_(cfg.get_duration("poll_interval_ms")),
      reads_(init.task_index == 0),
      max_line_(0),
      on_long_line_(static_cast<LongLine>(cfg.get_choice("on_long_line", {"fail", "skip"}))),
      invalid_utf8_(static_cast<InvalidUtf8>(
          cfg.get_choice("invalid_utf8", {"replace", "bytes", "skip", "fail"}))) {
  const int64_t max_line = cfg.get_int("max_line_bytes");
  require_positive(cfg, "max_line_bytes", max_line);
  max_line_ = static_cast<size_t>(max_line);
  if (path_.empty()) cfg.fail("path", "must not be empty");
  if (delimiter_.empty()) cfg.fail("delimiter", R"(must not be empty ("\n" reads lines))");
  require_positive(cfg, "poll_interval_ms", poll_interval_.count());
}

FromTextfile::~FromTextfile() { close_file(); }

void FromTextfile::close_file() noexcept {
  if (fd_ >= 0) ::close(fd_);  // read-only: nothing to lose on close
  fd_ = -1;
}

Status FromTextfile::start(Context /*ctx*/) {
  if (!reads_) return {};  // one file, no partitions: task 0 reads it
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return sdk::errno_status(errno, "from_textfile: cannot open '" + path_ + "'");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    return sdk::errno_status(errno, "from_textfile: cannot stat '" + path_ + "'");
  }
  if (S_ISDIR(st.st_mode)) {
    return sdk::invalid_argument("from_textfile: '" + path_ + "' is a directory, not a file");
  }
  off_t start_at = -1;
  if (restored_offset_ >= 0) {
    if (S_ISREG(st.st_mode) && restored_offset_ > st.st_size && !follow_) {
      return sdk::failed_precondition("from_textfile: the checkpoint is at byte " +
                                      std::to_string(restored_offset_) + " of '" + path_ +
                                      "', which now has only " + std::to_string(st.st_size) +
                                      " bytes (truncated or replaced since)");
    }
    start_at = ::lseek(fd_, restored_offset_, SEEK_SET);
  } else if (from_end_) {
    start_at = ::lseek(fd_, 0, SEEK_END);
  } else {
    return {};
  }
  if (start_at < 0) {
    return sdk::errno_status(errno, "from_textfile: cannot seek in '" + path_ + "'");
  }
  file_pos_ = start_at;
  return {};
}

size_t FromTextfile::find_delimiter(std::string_view buf, size_t from) const noexcept {
  if (delimiter_.size() == 1) {  // lines: memchr, which scans 16-32 bytes per step
    if (from >= buf.size()) return std::string_view::npos;
    const void* at = std::memchr(buf.data() + from, delimiter_[0], buf.size() - from);
    return at == nullptr ? std::string_view::npos
                         : static_cast<size_t>(static_cast<const char*>(at) - buf.data());
  }
  return buf.find(delimiter_, from);
}

Result<size_t> FromTextfile::read_chunk() {
  if (begin_ > 0) {  // drop what was emitted; keeps the buffer at one partial line + a chunk
    buf_.erase(0, begin_);
    scan_ -= begin_;
    begin_ = 0;
  }
  const size_t old_size = buf_.size();
  buf_.resize(old_size + k_chunk);
  ssize_t n = 0;
  do {
    n = ::read(fd_, buf_.data() + old_size, k_chunk);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int err = errno;
    buf_.resize(old_size);
    return sdk::errno_status(err, "from_textfile: cannot read '" + path_ + "'");
  }
  buf_.resize(old_size + static_cast<size_t>(n));
  file_pos_ += n;
  return static_cast<size_t>(n);
}

Result<bool> FromTextfile::restart_if_truncated(Context ctx) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    return sdk::errno_status(errno, "from_textfile: cannot stat '" + path_ + "'");
  }
  if (!S_ISREG(st.st_mode) || st.st_size >= file_pos_) return false;
  ctx.log_warn("from_textfile: '" + path_ + "' shrank to " + std::to_string(st.st_size) +
               " bytes after " + std::to_string(file_pos_) +
               " were read; reading it from the start");
  if (::lseek(fd_, 0, SEEK_SET) < 0) {
    return sdk::errno_status(errno, "from_textfile: cannot seek in '" + path_ + "'");
  }
  buf_.clear();
  begin_ = scan_ = 0;
  file_pos_ = 0;
  skipping_ = false;
  return true;
}

Status FromTextfile::line_too_long(Context ctx, size_t length_so_far) {
  const std::string where =
      "the line at byte " + std::to_string(offset_of(begin_)) + " of '" + path_ + "'";
  if (on_long_line_ == LongLine::fail) {
    return sdk::out_of_range("from_textfile: " + where + " is longer than max_line_bytes (" +
                             std::to_string(max_line_) + "): " + std::to_string(length_so_far) +
                             " bytes or more (raise max_line_bytes, or set on_long_line = "
                             "\"skip\")");
  }
  warn_sometimes(ctx, long_lines_,
                 "from_textfile: skipped " + where + ", longer than max_line_bytes (" +
                     std::to_string(max_line_) + ")");
  return {};
}

Status FromTextfile::take_line(Context ctx, size_t end) {
  if (skipping_) {  // the end of a long line being skipped
    skipping_ = false;
    return {};
  }
  const std::string_view line = std::string_view(buf_).substr(begin_, end - begin_);
  if (line.size() > max_line_) return line_too_long(ctx, line.size());
  if (sdk::valid_utf8(line)) {
    out_.push_back(Value::string(line));
    return {};
  }
  const std::string where = "the line at byte " + std::to_string(offset_of(begin_)) + " of '" +
                            path_ + "' is not valid UTF-8";
  switch (invalid_utf8_) {
    case InvalidUtf8::replace: {
      std::string fixed;
      fixed.reserve(line.size() + 16);
      sdk::append_utf8_replacing(fixed, line);
      out_.push_back(Value::string(fixed));
      warn_sometimes(ctx, bad_utf8_, "from_textfile: " + where + ": replaced with U+FFFD");
      return {};
    }
    case InvalidUtf8::bytes: out_.push_back(Value::bytes(line)); return {};
    case InvalidUtf8::skip:
      warn_sometimes(ctx, bad_utf8_, "from_textfile: " + where + ": skipped");
      return {};
    case InvalidUtf8::fail:
      return sdk::invalid_argument("from_textfile: " + where +
                                   " (invalid_utf8 = \"fail\"; \"replace\", \"bytes\" or "
                                   "\"skip\" would go on)");
  }
  return {};
}

Result<SourceState> FromTextfile::poll(Context ctx, uint32_t budget) {
  if (!reads_) return SourceState::done;
  if (fd_ < 0) return sdk::failed_precondition("from_textfile: polled while the file is closed");
  const size_t limit = std::max<uint32_t>(budget, 1);
  bool at_eof = false;
  size_t read_now = 0;
  out_.clear();
  // The lines taken before a failure still go out first: they precede it in the file.
  auto failed = [&](Status error) -> Status {
    if (!out_.empty()) static_cast<void>(ctx.emit_values(out_));
    out_.clear();
    return error;
  };
  while (out_.size() < limit) {
    const std::string_view buf(buf_);
    const size_t pos = find_delimiter(buf, scan_);
    if (pos != std::string_view::npos) {
      if (Status st = take_line(ctx, pos); !st.is_ok()) return failed(std::move(st));
      begin_ = scan_ = pos + delimiter_.size();
      continue;
    }
    // No whole line left; a delimiter may still begin in the last size-1 bytes.
    scan_ = std::max(begin_, buf.size() - std::min(buf.size(), delimiter_.size() - 1));
    // Bytes before scan_ belong to the line for sure: bound it before reading more.
    if (!skipping_ && scan_ - begin_ > max_line_) {
      if (Status st = line_too_long(ctx, scan_ - begin_); !st.is_ok()) {
        return failed(std::move(st));
      }
      skipping_ = true;
      skip_from_ = offset_of(begin_);
    }
    if (skipping_) begin_ = scan_;               // keep only what may start the delimiter
    if (read_now >= k_max_read_per_poll) break;  // the rest in the next poll
    SLUICE_SDK_ASSIGN_OR_RETURN(const size_t n, read_chunk());
    if (n == 0) {
      at_eof = true;
      break;
    }
    read_now += n;
  }

  SourceState state = SourceState::more;
  if (at_eof && !follow_) {
    if (skipping_) {  // the long line ends with the file
      skipping_ = false;
      begin_ = scan_ = buf_.size();
    } else if (begin_ < buf_.size() && out_.size() < limit) {  // a last line without delimiter
      if (Status st = take_line(ctx, buf_.size()); !st.is_ok()) return failed(std::move(st));
      begin_ = scan_ = buf_.size();
    }
    if (begin_ == buf_.size()) state = SourceState::done;
  } else if (at_eof) {
    SLUICE_SDK_ASSIGN_OR_RETURN(const bool restarted, restart_if_truncated(ctx));
    if (!restarted) state = SourceState::idle;
  }

  const Status emitted = out_.empty() ? Status() : ctx.emit_values(out_);
  out_.clear();
  SLUICE_SDK_RETURN_IF_ERROR(emitted);
  if (state == SourceState::done) close_file();
  if (state == SourceState::idle) {
    // Polled again when the timer fires: never an OS sleep on the executor.
    SLUICE_SDK_RETURN_IF_ERROR(ctx.timer_start(k_follow_timer, poll_interval_));
  }
  return state;
}

void FromTextfile::stop(Context ctx) {
  ctx.timer_cancel(k_follow_timer);
  close_file();
}

Result<Value> FromTextfile::snapshot(Context /*ctx*/) {
  return Value::object({{"offset", Value::integer(next_line_offset())}});
}

Status FromTextfile::restore(Context /*ctx*/, ValueRef state) {
  std::optional<Value> offset = state.get("offset");
  if (!offset || !offset->is_int() || offset->as_int() < 0) {
    return sdk::invalid_argument("from_textfile: checkpoint state has no valid 'offset': " +
                                 state.to_json());
  }
  restored_offset_ = offset->as_int();
  return {};
}

}  // namespace sluice::core_ops
