// Sources of the core_ops plugin: from_iterable (elements from config) and from_textfile
// (lines of a file, optionally followed as it grows).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
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
  explicit FromIterable(const sl_node_init& init);

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
      "delimiter. With several tasks, only task 0 reads the file (the others end at once). "
      "Checkpoints the byte offset of the next line.";
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
  };

  explicit FromTextfile(const sl_node_init& init);
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

  FromTextfile(const sl_node_init& init, const sdk::Config& cfg);
  static constexpr size_t k_chunk = size_t{64} * 1024;

  /// Reads the next chunk into buf_; returns the number of bytes read (0 at end of file).
  sdk::Result<size_t> read_chunk();
  /// With `follow` at end of file: start over (true) when the file shrank below what was read.
  sdk::Result<bool> restart_if_truncated(sdk::Context ctx);
  void close_file() noexcept;
  [[nodiscard]] int64_t next_line_offset() const noexcept {
    return file_pos_ - static_cast<int64_t>(buf_.size() - begin_);
  }

  std::string path_;
  std::string delimiter_;
  bool from_end_;
  bool follow_;
  std::chrono::milliseconds poll_interval_;
  bool reads_;                    // task 0 reads; the other tasks end at once
  int64_t restored_offset_ = -1;  // from restore(); wins over from_end

  int fd_ = -1;
  std::string buf_;              // bytes read and not emitted yet start at begin_
  size_t begin_ = 0;             // start of the next line in buf_
  size_t scan_ = 0;              // where to resume searching for the delimiter
  int64_t file_pos_ = 0;         // file offset of buf_.end()
  std::vector<sdk::Value> out_;  // lines of the current poll (reused)
};

}  // namespace sluice::core_ops
