// from_process: the stdout lines of a child process, read by a helper thread.
//
// Threading: the reader thread only reads pipes, queues lines (bounded) and reaps the child;
// it calls nothing of the host but wake() and log(), which are thread-safe. Values are made
// and emitted in poll(), on the executor. Every shared field is guarded by mu_.
#include <sluice/sluice.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "periodic_sources.hpp"
#include "source_support.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawn's envp

namespace sluice::core_ops {

namespace {

std::vector<std::string> argv_of(const Config& cfg) {
  const Value command = cfg.get_array("command");
  if (command.size() == 0) {
    cfg.fail("command", "must not be empty: give the program, then its arguments");
  }
  std::vector<std::string> argv;
  for (size_t i = 0; i < command.size(); ++i) {
    const Value item = command[i];
    if (!item.is_string()) {
      cfg.fail("command", "item " + std::to_string(i) + " must be a string (got " +
                              std::string(item.kind_name()) + ")");
    }
    if (item.as_str().find('\0') != std::string_view::npos) {
      cfg.fail("command", "item " + std::to_string(i) + " contains a NUL character");
    }
    argv.emplace_back(item.as_str());
  }
  if (argv[0].empty()) cfg.fail("command", "item 0 (the program) must not be empty");
  return argv;
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Why posix_spawnp could not run `program` (empty: it could): a name with a '/' is used as
// given, any other is looked up in PATH (glibc's default when PATH is unset).
std::string program_problem(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return executable_file(program) ? std::string() : "not an executable file";
  }
  const char* env_path = std::getenv("PATH");
  const std::string path = env_path != nullptr ? env_path : "/bin:/usr/bin";
  size_t begin = 0;
  while (begin <= path.size()) {
    const size_t end = std::min(path.find(':', begin), path.size());
    const std::string dir = end == begin ? "." : path.substr(begin, end - begin);
    if (executable_file(dir + "/" + program)) return {};
    begin = end + 1;
  }
  return "not found on PATH (" + path + ")";
}

}  // namespace

void FromProcess::validate(const Config& cfg) {
  const std::vector<std::string> argv = argv_of(cfg);
  // Checked with this process's PATH: a service's may differ (systemd's Environment=).
  if (!cfg.check_environment()) return;
  if (std::string problem = program_problem(argv[0]); !problem.empty()) {
    cfg.fail("command", "cannot run '" + argv[0] + "': " + problem + " (start would fail)");
  }
}

namespace {

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

/// Splits `data` into complete lines (appended to `lines`, without '\n'); the unterminated
/// rest stays in `partial`.
void split_lines(std::string& partial, std::string_view data, std::vector<std::string>& lines) {
  size_t begin = 0;
  for (size_t nl = data.find('\n'); nl != std::string_view::npos; nl = data.find('\n', begin)) {
    if (partial.empty()) {
      lines.emplace_back(data.substr(begin, nl - begin));
    } else {
      partial.append(data.substr(begin, nl - begin));
      lines.push_back(std::move(partial));
      partial.clear();
    }
    begin = nl + 1;
  }
  partial.append(data.substr(begin));
}

/// Bytes a queued line counts for (the per-line overhead bounds floods of empty lines).
size_t line_cost(const std::string& line) { return line.size() + 32; }

}  // namespace

FromProcess::FromProcess(const sl_node_init& init, const Config& cfg)
    : argv_(argv_of(cfg)),
      with_stderr_(cfg.get_bool("with_stderr")),
      with_end_(cfg.get_bool("with_end")),
      max_line_(0),
      runs_(init.task_index == 0),  // one child, no partitions: task 0 runs it
      ctx_(init.ctx) {
  const int64_t max_line = cfg.get_int("max_line_bytes");
  require_positive(cfg, "max_line_bytes", max_line);
  max_line_ = static_cast<size_t>(max_line);
}

FromProcess::~FromProcess() { shut_down(); }

Status FromProcess::start(Context /*ctx*/) {
  if (!runs_) return {};
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  int stop[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {out, err, stop}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  };
  if (::pipe2(out, O_CLOEXEC) != 0 || (!with_stderr_ && ::pipe2(err, O_CLOEXEC) != 0) ||
      ::pipe2(stop, O_CLOEXEC) != 0) {
    const int e = errno;
    close_all();
    return sdk::errno_status(e, "from_process: cannot create a pipe");
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  ::posix_spawn_file_actions_adddup2(&actions, with_stderr_ ? out[1] : err[1], 2);
  // Only stdin, stdout and stderr: the daemon's other files (sinks, sockets) are not the
  // child's business, even those opened without O_CLOEXEC.
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  // The daemon blocks or handles signals for itself (SIGTERM, SIGINT, SIGPIPE): the child
  // starts with none blocked and every handler at its default, as a shell would start it.
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  argv.reserve(argv_.size() + 1);
  for (std::string& a : argv_) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  // posix_spawnp looks the program up in PATH and runs it directly: no shell is involved.
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  close_fd(out[1]);
  close_fd(err[1]);
  if (rc != 0) {
    close_all();
    return sdk::errno_status(rc, "from_process: cannot run '" + argv_[0] + "'");
  }
  pid_ = pid;
  out_fd_ = out[0];
  err_fd_ = err[0];
  stop_rd_ = stop[0];
  stop_wr_ = stop[1];
  reader_ = std::thread([this] { read_loop(); });
  return {};
}

void FromProcess::push_lines(std::vector<std::string>& lines) {
  if (lines.empty()) return;
  bool wake = false;
  {
    const std::lock_guard lock(mu_);
    for (std::string& l : lines) {
      if (with_stderr_) {  // the merged output's tail is what an error quotes
        tail_.push_back(l);
        if (tail_.size() > k_tail_lines) tail_.pop_front();
      }
      buffered_ += line_cost(l);
      lines_.push_back(std::move(l));
    }
    wake = std::exchange(want_wake_, false);
  }
  lines.clear();
  if (wake) Context(ctx_).wake();
}

void FromProcess::note_stderr(std::vector<std::string>& lines) {
  const Context ctx(ctx_);
  for (std::string& l : lines) {
    ctx.log_info("stderr: " + l);
    const std::lock_guard lock(mu_);
    tail_.push_back(std::move(l));
    if (tail_.size() > k_tail_lines) tail_.pop_front();
  }
  lines.clear();
}

void FromProcess::read_loop() {
  std::string out_partial;
  std::string err_partial;
  std::vector<std::string> lines;
  std::vector<char> buf(size_t{64} * 1024);
  bool out_open = true;
  bool err_open = err_fd_ >= 0;
  std::string failure;

  while (out_open || err_open) {
    {
      std::unique_lock lock(mu_);
      // Bounded memory: stop reading while the queue is full; the child then blocks on a
      // full pipe until poll() makes room.
      room_.wait(lock, [&] { return stopping_ || buffered_ < k_max_buffered; });
      if (stopping_) return;
    }
    pollfd fds[3] = {{stop_rd_, POLLIN, 0},
                     {out_open ? out_fd_ : -1, POLLIN, 0},
                     {err_open ? err_fd_ : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      failure = "poll failed: " + std::string(std::strerror(errno));
      break;
    }
    if (fds[0].revents != 0) return;  // shut_down()
    auto read_some = [&](int fd, bool& open, std::string& partial, bool is_stdout) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) return;
        failure = "cannot read the child's output: " + std::string(std::strerror(errno));
        open = false;
        return;
      }
      if (n == 0) {
        open = false;
        if ((with_end_ || !is_stdout) && !partial.empty()) lines.push_back(std::move(partial));
        partial.clear();
      } else {
        split_lines(partial, std::string_view(buf.data(), static_cast<size_t>(n)), lines);
        if (partial.size() > max_line_) {
          // Memory stays bounded: a line without end is not buffered on. The child is
          // not reaped yet (only this thread reaps it), so pid_ is still its pid.
          failure = "the command wrote a line longer than max_line_bytes (" +
                    std::to_string(max_line_) + ") to its " + (is_stdout ? "stdout" : "stderr") +
                    ": killed it (SIGKILL)";
          ::kill(pid_, SIGKILL);
          open = false;
          partial.clear();
        }
      }
      if (is_stdout) {
        push_lines(lines);
      } else {
        note_stderr(lines);
      }
    };
    if (out_open && fds[1].revents != 0) read_some(out_fd_, out_open, out_partial, true);
    if (err_open && fds[2].revents != 0) read_some(err_fd_, err_open, err_partial, false);
    if (!failure.empty()) break;
  }

  // Everything was read. Wait for the exit without reaping first (WNOWAIT), so that a pid
  // shut_down() signals under mu_ is never one the system has already reused.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  bool wake = false;
  {
    const std::lock_guard lock(mu_);
    int status = 0;
    if (!reaped_ && ::waitpid(pid_, &status, 0) == pid_) exit_status_ = status;
    reaped_ = true;
    read_error_ = failure;
    finished_ = true;
    wake = std::exchange(want_wake_, false);
  }
  if (wake) Context(ctx_).wake();
}

std::string FromProcess::describe_exit(int status) const {
  std::string what = "command '" + argv_[0] + "'";
  if (WIFEXITED(status)) return what + " exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = ::sigabbrev_np(WTERMSIG(status));
    return what + " was killed by signal " + std::to_string(WTERMSIG(status)) +
           (name != nullptr ? " (SIG" + std::string(name) + ")" : std::string());
  }
  return what + " ended with wait status " + std::to_string(status);
}

Result<SourceState> FromProcess::poll(Context ctx, uint32_t budget) {
  if (!runs_) return SourceState::done;
  std::vector<std::string> taken;
  bool finished = false;
  bool more = false;
  int status = 0;
  std::string read_error;
  std::string tail;
  {
    const std::lock_guard lock(mu_);
    const size_t n = std::min<size_t>(std::max<uint32_t>(budget, 1), lines_.size());
    taken.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      buffered_ -= line_cost(lines_.front());
      taken.push_back(std::move(lines_.front()));
      lines_.pop_front();
    }
    more = !lines_.empty();
    finished = finished_ && !more;
    if (!finished && !more) want_wake_ = true;  // the reader wakes us when it queues more
    if (finished) {
      status = exit_status_;
      read_error = read_error_;
      for (const std::string& l : tail_) tail += "\n  " + l;
    }
  }
  if (!taken.empty()) room_.notify_one();  // room again: the reader may go on

  std::vector<Value> values;
  values.reserve(taken.size());
  for (const std::string& l : taken) {
    if (sdk::valid_utf8(l)) {
      values.push_back(Value::string(l));
    } else {  // strings are valid UTF-8
      std::string fixed;
      sdk::append_utf8_replacing(fixed, l);
      values.push_back(Value::string(fixed));
    }
  }
  if (!values.empty()) SLUICE_SDK_RETURN_IF_ERROR(ctx.emit_values(values));
  if (more) return SourceState::more;
  if (!finished) return SourceState::idle;
  shut_down();  // the child is reaped: join the reader and close the pipes now

  if (!read_error.empty()) return sdk::internal_error("from_process: " + read_error);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return SourceState::done;
  std::string msg = "from_process: " + describe_exit(status);
  if (tail.empty()) {
    msg += with_stderr_ ? "; it wrote no output" : "; it wrote nothing to stderr";
  } else {
    msg += with_stderr_ ? "; its last output lines:" : "; the end of its stderr:";
    msg += tail;
  }
  return Status(SL_UNKNOWN, msg);
}

void FromProcess::stop(Context /*ctx*/) { shut_down(); }

void FromProcess::shut_down() noexcept {
  if (pid_ < 0) return;
  {
    const std::lock_guard lock(mu_);
    stopping_ = true;
    if (!reaped_) ::kill(pid_, SIGTERM);
  }
  room_.notify_all();
  if (stop_wr_ >= 0) {
    const char byte = 1;
    static_cast<void>(::write(stop_wr_, &byte, 1));
  }
  // Give the child a second to exit on SIGTERM, then kill it.
  bool exited = false;
  for (int i = 0; i < 100 && !exited; ++i) {
    siginfo_t info{};
    const int rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    exited = rc < 0 || info.si_pid == pid_;  // ECHILD: the reader reaped it already
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    const std::lock_guard lock(mu_);
    if (!reaped_) ::kill(pid_, SIGKILL);
  }
  if (reader_.joinable()) reader_.join();
  {
    const std::lock_guard lock(mu_);
    if (!reaped_) {
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
    }
  }
  pid_ = -1;
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(stop_rd_);
  close_fd(stop_wr_);
}

}  // namespace sluice::core_ops
