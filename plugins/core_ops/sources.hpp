// Sources of the core_ops plugin: from_iterable (elements from config) and from_textfile
// (lines of a file, optionally followed as it grows).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::core_ops {

/// `from_iterable`: the elements given in config, in order, then the end of the stream.
class FromIterable final : public sdk::Source {
 public:
  static constexpr const char* k_name = "from_iterable";
  static constexpr const char* k_doc =
      "Emits the elements listed in config, in order, then ends (streamz from_iterable). Give "
      "exactly one of `values` (TOML values) or `json` (JSON texts). With several tasks, only "
      "task 0 emits (the others end at once), so each element goes out once. Checkpoints its "
      "position.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::param("values", SL_PARAM_ARRAY, nullptr,
                 "The elements as TOML values: each item of the array is one element."),
      sdk::param("json", SL_PARAM_ARRAY, nullptr,
                 "The elements as JSON texts: an array of strings, each parsed as one value."),
  };

  /// One of `values` and `json`; every `json` item parses.
  static void validate(const sdk::Config& cfg);
  FromIterable(const sl_node_init& init, const sdk::Config& cfg);

  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  /// The position: `{ next = <index of the next element to emit> }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  std::vector<sdk::Value> items_;  // empty in tasks other than 0
  size_t next_ = 0;
};

/// `from_textfile`: the lines of a text file, each a string without its delimiter.
class FromTextfile final : public sdk::Source {
 public:
  static constexpr const char* k_name = "from_textfile";
  static constexpr const char* k_doc =
      "Emits each line of a text file as a string, WITHOUT its delimiter (streamz keeps the "
      "delimiter). Unlike streamz, a last line with no trailing delimiter is emitted when the "
      "file ends and `follow` is off. With `follow`, the source waits at the end of the file "
      "and re-checks it every `poll_interval_ms` (like `tail -f`: it follows the file it "
      "opened, and starts over if that file is truncated); a partial last line waits for its "
      "delimiter. A line is at most `max_line_bytes` long (`on_long_line` says what happens to "
      "a longer one), so memory stays bounded on input without delimiters (`/dev/zero`), and "
      "each poll reads at most 1 MiB, so stops and checkpoints are never held up by a long "
      "read. Lines are strings, and strings are valid UTF-8: `invalid_utf8` says what happens "
      "to a line that is not. With several tasks, only task 0 reads the file (the others end "
      "at once). Checkpoints the byte offset of the next line.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("path", SL_PARAM_STRING, "The file to read.").non_empty(),
      sdk::param("delimiter", SL_PARAM_STRING, R"("\n")",
                 "What ends a line (any non-empty text; not part of the emitted string).")
          .non_empty(),
      sdk::param("from_end", SL_PARAM_BOOL, "false",
                 "Start at the current end of the file (only lines written later are read)."),
      sdk::param("follow", SL_PARAM_BOOL, "false",
                 "At the end of the file, wait for more instead of ending the stream."),
      sdk::param("poll_interval_ms", SL_PARAM_DURATION, "100",
                 "With `follow`: how often to check the file for more data (ms, > 0).")
          .min(1),
      sdk::param("max_line_bytes", SL_PARAM_INT, "1048576",
                 "Longest line in bytes, without its delimiter (> 0); `on_long_line` handles "
                 "longer ones.")
          .min(1),
      sdk::param("on_long_line", SL_PARAM_STRING, R"("fail")",
                 R"("fail": a line longer than `max_line_bytes` fails the source (the error )"
                 R"(names the file and the line's byte offset); "skip": drop it, reading on )"
                 R"(to its delimiter without keeping it, and log (at the 1st, 2nd, 4th... ))"
                 R"(occurrence).)")
          .one_of("fail|skip"),
      sdk::param("invalid_utf8", SL_PARAM_STRING, R"("replace")",
                 R"(A line that is not valid UTF-8: "replace" each ill-formed sequence with )"
                 R"(U+FFFD, as Python's errors="replace" (logged at the 1st, 2nd, 4th... line); )"
                 R"("bytes": emit that line as bytes instead of a string; "skip": drop it )"
                 R"((logged likewise); "fail": fail the source, naming the file and offset.)")
          .one_of("replace|bytes|skip|fail"),
  };

  /// With the environment checks: the file exists and is readable (task 0 opens it at start).
  static void validate(const sdk::Config& cfg);
  FromTextfile(const sl_node_init& init, const sdk::Config& cfg);
  ~FromTextfile() override;
  FromTextfile(const FromTextfile&) = delete;
  FromTextfile& operator=(const FromTextfile&) = delete;

  sdk::Status start(sdk::Context ctx) override;
  sdk::Result<sdk::SourceState> poll(sdk::Context ctx, uint32_t budget) override;
  void stop(sdk::Context ctx) override;
  /// The position: `{ offset = <byte offset of the first line not emitted yet> }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_follow_timer = 1;

  /// One read(2): large enough that the system call and the buffer's upkeep are a small
  /// part of a line's cost, small enough to stay in L2.
  static constexpr size_t k_chunk = size_t{256} * 1024;
  /// Bytes one poll reads at most before it returns (then `more`): a file without
  /// delimiters must not keep the task from its timers, stops and checkpoints.
  static constexpr size_t k_max_read_per_poll = size_t{1024} * 1024;

  enum class LongLine { fail, skip };
  enum class InvalidUtf8 { replace, bytes, skip, fail };

  /// The offset of the next delimiter in `buf` at or after `from`, or npos.
  [[nodiscard]] size_t find_delimiter(std::string_view buf, size_t from) const noexcept;
  /// Reads the next chunk into buf_; returns the number of bytes read (0 at end of file).
  sdk::Result<size_t> read_chunk();
  /// With `follow` at end of file: start over (true) when the file shrank below what was read.
  sdk::Result<bool> restart_if_truncated(sdk::Context ctx);
  /// Queues the line buf_[begin_, end) (its delimiter excluded) in out_, applying
  /// max_line_bytes and invalid_utf8.
  sdk::Status take_line(sdk::Context ctx, size_t end);
  /// The line at begin_ has grown past max_line_bytes with no delimiter yet: fail, or
  /// start skipping it.
  sdk::Status line_too_long(sdk::Context ctx, size_t length_so_far);
  void close_file() noexcept;
  /// File offset of buf_[at].
  [[nodiscard]] int64_t offset_of(size_t at) const noexcept {
    return file_pos_ - static_cast<int64_t>(buf_.size() - at);
  }
  [[nodiscard]] int64_t next_line_offset() const noexcept {
    // While a long line is skipped, a checkpoint records its start: a restore skips it again.
    return skipping_ ? skip_from_ : offset_of(begin_);
  }

  std::string path_;
  std::string delimiter_;
  bool from_end_;
  bool follow_;
  std::chrono::milliseconds poll_interval_;
  bool reads_;                    // task 0 reads; the other tasks end at once
  int64_t restored_offset_ = -1;  // from restore(); wins over from_end
  size_t max_line_;
  LongLine on_long_line_;
  InvalidUtf8 invalid_utf8_;
  bool skipping_ = false;    // dropping a long line up to its delimiter
  int64_t skip_from_ = 0;    // file offset where that line starts
  uint64_t long_lines_ = 0;  // skipped long lines, for the warnings
  uint64_t bad_utf8_ = 0;    // lines replaced or skipped for invalid UTF-8

  int fd_ = -1;
  std::string buf_;              // bytes read and not emitted yet start at begin_
  size_t begin_ = 0;             // start of the next line in buf_
  size_t scan_ = 0;              // where to resume searching for the delimiter
  int64_t file_pos_ = 0;         // file offset of buf_.end()
  std::vector<sdk::Value> out_;  // lines of the current poll (reused)
};

}  // namespace sluice::core_ops
