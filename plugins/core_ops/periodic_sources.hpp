// Sources of the core_ops plugin that watch the outside world: from_periodic (a tick every
// interval), filenames (new files matching a directory or glob) and from_process (the
// stdout lines of a child process).
#pragma once

#include <sluice/sluice.hpp>

#include <sys/types.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sluice::core_ops {

/// `from_periodic`: a tick every interval.
class FromPeriodic final : public sdk::Source {
 public:
  static constexpr const char* k_name = "from_periodic";
  static constexpr const char* k_doc =
      "Emits an element every `interval_ms` (streamz from_periodic, which emits what a Python "
      "callback returns). The first element goes out at start, then one per interval on the "
      "task clock; each carries the time it went out as its event time. The element is "
      "`value` when given, else the tick number (0, 1, 2, ...). With `limit`, the stream ends "
      "after that many elements. A tick that falls due while back-pressure pauses the source "
      "is emitted when it resumes, and the next one follows `interval_ms` later (no burst of "
      "missed ticks, as streamz sleeps after each emission). With several tasks, only task 0 "
      "emits. Checkpoints the tick count and the time of the next tick.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::param("interval_ms", SL_PARAM_DURATION, "100", "Time between elements (ms, > 0).")
          .min(1),
      sdk::param("value", SL_PARAM_ANY, nullptr,
                 "The element to emit on every tick (absent: the tick number, from 0)."),
      sdk::param("limit", SL_PARAM_INT, nullptr,
                 "End the stream after this many elements (absent: never end).")
          .min(0),
  };

  FromPeriodic(const sl_node_init& init, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  /// `{ tick = <elements emitted>, next_ns = <time of the next tick> }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_timer = 1;

  int64_t interval_ns_;
  std::optional<sdk::Value> value_;
  std::optional<int64_t> limit_;
  bool emits_;           // task 0 emits; the other tasks end at once
  int64_t tick_ = 0;     // elements emitted so far
  int64_t next_ns_ = 0;  // 0: not started (the first tick is due at start)
};

/// `filenames`: the path of each file matching a directory or glob, once.
class Filenames final : public sdk::Source {
 public:
  static constexpr const char* k_name = "filenames";
  static constexpr const char* k_doc =
      "Emits the path of each file matching `path` once, as a string (streamz filenames; a "
      "path that is not valid UTF-8 is emitted as bytes, which still name the file). "
      "`path` is a directory (then every entry in it, as `DIR/*`) or a glob pattern (`*`, `?`, "
      "`[...]`, as Python's glob: names starting with a dot are not matched by a wildcard; "
      "subdirectories that match are emitted too). Every `poll_interval_ms` the pattern is "
      "matched again and the new paths are emitted, sorted; a path seen once is never emitted "
      "again, even if the file is deleted and re-created. Whether `path` is a directory is "
      "decided at start, as streamz does at creation. With `watch = false` the source matches "
      "once and ends (for batch jobs). With several tasks, only task 0 emits. Checkpoints the "
      "set of paths already emitted (it grows with every new file, as in streamz).";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("path", SL_PARAM_STRING, "A directory, or a glob pattern over paths.")
          .non_empty(),
      sdk::param("poll_interval_ms", SL_PARAM_DURATION, "100",
                 "How often to look for new files (ms, > 0).")
          .min(1),
      sdk::param("watch", SL_PARAM_BOOL, "true",
                 "Keep looking for new files; false: emit the current matches, then end."),
  };

  Filenames(const sl_node_init& init, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  /// `{ seen = [path, ...] }` (sorted).
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_timer = 1;
  sdk::Status scan();

  std::string path_;
  std::string pattern_;  // set at start
  std::chrono::milliseconds poll_interval_;
  bool watch_;
  bool emits_;
  bool scanned_ = false;         // one scan done (watch = false ends after it)
  int64_t next_scan_ns_ = 0;     // when the next scan is due
  std::set<std::string> seen_;   // emitted
  std::deque<std::string> new_;  // found by the last scan, not emitted yet (sorted)
  std::vector<sdk::Value> out_;
};

/// `from_process`: each line a child process writes to its stdout.
class FromProcess final : public sdk::Source {
 public:
  static constexpr const char* k_name = "from_process";
  static constexpr const char* k_doc =
      "Runs `command` (an argv array: program, then arguments; no shell, the program is "
      "looked up in PATH, and `sluiced validate` checks that it is found there) and emits each "
      "line of its standard output as a string without "
      "the newline (streamz from_process, which emits bytes with it); in a line that is not "
      "valid UTF-8 each ill-formed sequence becomes U+FFFD. Unlike streamz, no "
      "output is lost: everything is read up to end of file, even after the child exited; "
      "a last line without a newline is emitted too (`with_end`, as streamz). When the child "
      "exits with status 0 the stream ends; a non-zero status, or death by a signal, fails "
      "the node after every line was emitted, with the status and the last lines of the "
      "child's stderr in the error (stderr is also logged, line by line, at info level). "
      "`with_stderr = true` merges stderr into the emitted lines (then the error shows the "
      "last output lines). Standard input is /dev/null. Memory is bounded: a reader thread "
      "holds at most about 1 MiB of lines and stops reading while the source is not polled "
      "(back-pressure), which pauses the child once the pipe is full; a line is at most "
      "`max_line_bytes`: a longer one (on stdout or stderr) kills the child (SIGKILL) and "
      "fails the node after the lines before it were emitted. When the pipeline stops before the "
      "child ends, the child gets SIGTERM, then "
      "SIGKILL after 1 s. Not stateful: a child's output cannot be resumed mid-stream, so a "
      "restored pipeline starts the command again. With several tasks, only task 0 runs it.";
  static constexpr std::array k_params{
      sdk::required("command", SL_PARAM_ARRAY,
                    "The program and its arguments, e.g. [\"ping\", \"-c\", \"3\", \"::1\"].")
          .non_empty(),
      sdk::param("with_stderr", SL_PARAM_BOOL, "false",
                 "Emit the child's stderr lines too (merged with stdout)."),
      sdk::param("with_end", SL_PARAM_BOOL, "true",
                 "Emit a last line that has no trailing newline."),
      sdk::param("max_line_bytes", SL_PARAM_INT, "1048576",
                 "Longest line in bytes, without its newline (> 0); a longer one kills the "
                 "child and fails the node.")
          .min(1),
  };

  /// Every item of `command` is a string without NUL; the program is not empty.
  static void validate(const sdk::Config& cfg);
  FromProcess(const sl_node_init& init, const sdk::Config& cfg);
  ~FromProcess() override;
  FromProcess(const FromProcess&) = delete;
  FromProcess& operator=(const FromProcess&) = delete;

  sdk::Status start(sdk::Context ctx) override;
  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  void stop(sdk::Context ctx) override;

 private:
  static constexpr size_t k_max_buffered = size_t{1} << 20;  // bytes of queued lines
  static constexpr size_t k_tail_lines = 10;                 // lines quoted in an error

  /// The reader thread: reads stdout (and stderr), queues lines, reaps the child.
  void read_loop();
  void push_lines(std::vector<std::string>& lines);
  void note_stderr(std::vector<std::string>& lines);
  /// Stops the reader and ends the child (SIGTERM, then SIGKILL); idempotent.
  void shut_down() noexcept;
  [[nodiscard]] std::string describe_exit(int status) const;

  std::vector<std::string> argv_;
  bool with_stderr_;
  bool with_end_;
  size_t max_line_;
  bool runs_;  // task 0 runs the command
  sl_context* ctx_;

  pid_t pid_ = -1;
  int out_fd_ = -1;   // read end of the child's stdout
  int err_fd_ = -1;   // read end of its stderr (-1 when merged)
  int stop_rd_ = -1;  // self-pipe: shut_down() writes to wake the reader
  int stop_wr_ = -1;
  std::thread reader_;

  std::mutex mu_;  // guards everything below
  std::condition_variable room_;
  std::deque<std::string> lines_;
  size_t buffered_ = 0;  // bytes in lines_
  bool want_wake_ = false;
  bool stopping_ = false;
  bool reaped_ = false;
  bool finished_ = false;  // output read to EOF and the child reaped
  int exit_status_ = 0;    // waitpid status
  std::string read_error_;
  std::deque<std::string> tail_;  // last stderr (or merged output) lines
};

}  // namespace sluice::core_ops
