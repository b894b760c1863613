// Sinks of the sinks plugin: print (stdout) and sink_to_textfile.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::sinks {

/// `print`: each element on its own line on stdout.
class Print final : public sdk::Sink {
 public:
  static constexpr const char* k_name = "print";
  static constexpr const char* k_doc =
      "Writes each element to stdout on its own line after `prefix`: strings raw, other values "
      "as compact JSON (streamz sink(print)). Each batch is written and flushed in one call, so "
      "the lines of parallel tasks never interleave within a batch.";
  static constexpr std::array k_params{
      sdk::param("prefix", SL_PARAM_STRING, "\"\"", "Text written before each element."),
  };

  Print(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status finish(sdk::Context ctx) override;

 private:
  std::string prefix_;
  std::string text_;  // the batch's lines (reused)
};

/// `sink_to_textfile`: each element on its own line in a file.
class SinkToTextfile final : public sdk::Sink {
 public:
  static constexpr const char* k_name = "sink_to_textfile";
  static constexpr const char* k_doc =
      "Writes each element to a file on its own line: format \"json\" writes compact JSON, "
      "\"text\" writes strings raw (any other element is an error). The file is created or "
      "truncated at start unless `append`. `{task}` in `path` becomes the task index; it is "
      "required when the graph runs several tasks, so that no two tasks share a file. Every "
      "write, flush, fsync and close error fails the node, naming the path and the reason; "
      "finish flushes and fsyncs the file. Takes part in checkpoints: each checkpoint flushes "
      "and fsyncs the file and records its length; a restart from a checkpoint appends to the "
      "file (at-least-once: lines written after the checkpoint appear again), or with "
      "`exactly_once` first truncates it to the recorded length (docs/CHECKPOINTING.md).";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("path", SL_PARAM_STRING,
                    "The file to write; `{task}` is replaced by the task index.")
          .non_empty(),
      sdk::param("format", SL_PARAM_STRING, "\"json\"",
                 R"("json" (one compact JSON document per line, always valid UTF-8: bytes as )"
                 R"(base64, NaN and infinities as the strings "NaN", "Infinity", "-Infinity") )"
                 R"(or "text" (strings, raw).)")
          .one_of("json|text"),
      sdk::param("append", SL_PARAM_BOOL, "false",
                 "Append to the file instead of truncating it at start."),
      sdk::param("flush", SL_PARAM_STRING, "\"batch\"",
                 "\"batch\" (hand the data to the OS after each batch) or \"finish\" (only "
                 "when the 64 KiB buffer fills and at finish).")
          .one_of("batch|finish"),
      sdk::param("exactly_once", SL_PARAM_BOOL, "false",
                 "With [checkpoint]: on restart, cut the file back to its length at the "
                 "restored checkpoint, so that every element appears exactly once."),
  };

  /// Several tasks need `{task}` in the path (they would overwrite one file). With the
  /// environment checks, each task's file must be one start can open for writing.
  static void validate(const sdk::Config& cfg);
  SinkToTextfile(const sl_node_init& init, const sdk::Config& cfg);
  ~SinkToTextfile() override;
  SinkToTextfile(const SinkToTextfile&) = delete;
  SinkToTextfile& operator=(const SinkToTextfile&) = delete;

  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;
  /// Checkpoints: flush and fsync, then record the durable length.
  sdk::Result<bool> checkpoint_prepare(sdk::Context ctx, uint64_t epoch) override;
  /// `{ length = <bytes durable at the last prepare>, exactly_once = <bool> }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  /// Hands `text` (whole lines) to the file's stdio buffer.
  sdk::Status write(std::string_view text);
  /// Flushes, optionally fsyncs, and closes the file; the first failure wins.
  sdk::Status close_file(bool sync);
  sdk::Status io_error(int err, const char* what) const;
  /// At-least-once restart: truncates a last line without its newline (cut by a crash)
  /// back to the previous newline, never below the restored length.
  sdk::Status cut_partial_line(int fd);

  sdk::Context ctx_;  // for logging from stop() and the destructor
  std::string path_;
  bool json_;
  bool append_;
  bool flush_each_batch_;
  bool exactly_once_;
  std::FILE* file_ = nullptr;
  int64_t durable_length_ = -1;             // at the last checkpoint_prepare; -1: none yet
  std::optional<int64_t> restored_length_;  // from restore(): open without truncating
  std::string text_;                        // the batch's lines (reused)
};

}  // namespace sluice::sinks
