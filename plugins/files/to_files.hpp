// to_files: elements as lines in files that roll and partition, exactly once through part
// files published by rename at checkpoint commit (Flink's FileSink).
//
// Each element goes to the bucket its `path` template renders (by key, by processing or
// event time) under `dir`. A bucket's lines go to a hidden in-progress part file
// ".NAME.PREFIX-TASK-RUN-N.EXT.inprogress" next to its final name
// "NAME.PREFIX-TASK-RUN-N.EXT": RUN is random per start, so no two runs or tasks ever pick
// the same name. A part file is finished (flushed, fsynced, closed) when it reaches
// roll_bytes, when it is older than roll_interval_ms, when its processing-time bucket has
// passed, when it is the least recently used one past max_open_files, and at every
// checkpoint. A finished file is published (renamed to its final name, the directory
// fsynced): without checkpoints at once (at-least-once), with checkpoints only at the commit
// of the checkpoint that covers it, so a published file is always complete and every
// element is in exactly one published file after any crash (to_files_checkpoint.cc).
#pragma once

#include <sluice/sluice.hpp>

#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "part_file.hpp"
#include "path_template.hpp"

namespace sluice::files {

/// `to_files`: each element one line, in rolling part files under `dir`.
class ToFiles final : public sdk::Sink {
 public:
  static constexpr const char* k_name = "to_files";
  static constexpr const char* k_doc =
      "Writes each element as one line (compact JSON, or strings raw with format \"text\") "
      "into files under `dir`, partitioned by the `path` template: `{key}` (the message key, "
      "or the field named by `key`, percent-encoded into one path segment so no key can leave "
      "`dir`), `{task}`, and strftime fields of the processing or event time (UTC). Each "
      "bucket is written to a hidden in-progress part file and published by rename as "
      "NAME.PREFIX-TASK-RUN-N.EXT (RUN is random per start: names never collide across "
      "restarts and tasks). Part files roll at roll_bytes, after roll_interval_ms, when their "
      "processing-time bucket has passed, when more than max_open_files are open (the least "
      "recently used closes) and at every checkpoint; with compression \"gzip\" each "
      "published file is one complete gzip stream. Without checkpoints a rolled file is "
      "published at once (at-least-once). With a [checkpoint] table, files are published "
      "only at the commit of the checkpoint that covers them, and a restart publishes what "
      "the restored checkpoint covers and deletes the in-progress files of epochs no "
      "checkpoint holds (their elements are replayed): every element is in exactly one "
      "published file, and no published file is half-written. See docs/CONNECTORS.md.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("dir", SL_PARAM_STRING,
                    "The base directory (created at start). Every file is written inside it.")
          .non_empty(),
      sdk::required("path", SL_PARAM_STRING,
                    "The bucket template, relative to `dir`, e.g. \"{key}/%Y-%m-%d-%H.jsonl\": "
                    "literal text, {key}, {task} and the strftime fields %Y %y %m %d %H %M %S "
                    "%j %G %V %U %W %u %w (%% for '%'). No absolute path, no \".\" or \"..\" "
                    "segment, no segment starting with '.'. The extension (\".jsonl\") stays "
                    "last in the part files' names.")
          .non_empty(),
      sdk::param("key", SL_PARAM_STRING, nullptr,
                 "What {key} renders: \"@key\" (the message key, the default) or the name of a "
                 "field of the element. Strings as they are, other values as JSON text, a "
                 "missing or null key as \"__null__\"."),
      sdk::param("time", SL_PARAM_STRING, "\"processing\"",
                 "The time of the strftime fields: \"processing\" (the task clock when the "
                 "element arrives) or \"event\" (the element's event timestamp; an element "
                 "without one is an error of that element). Always UTC.")
          .one_of("processing|event"),
      sdk::param("format", SL_PARAM_STRING, "\"json\"",
                 "\"json\" (one compact JSON document per line) or \"text\" (strings, raw; any "
                 "other element is an error of that element).")
          .one_of("json|text"),
      sdk::param("compression", SL_PARAM_STRING, "\"none\"",
                 "\"none\" or \"gzip\" (zlib; \".gz\" is added to the names unless the "
                 "template ends with it).")
          .one_of("none|gzip"),
      sdk::param("compression_level", SL_PARAM_INT, "6", "zlib level for gzip, 1 (fast) to 9.")
          .range(1, 9),
      sdk::param("roll_bytes", SL_PARAM_INT, "134217728",
                 "A part file is finished once this many bytes of lines went into it (with gzip: "
                 "before compression, so the bound does not depend on zlib's buffering).")
          .min(1),
      sdk::param("roll_interval_ms", SL_PARAM_DURATION, "0",
                 "A part file is finished this long after it was opened (checked every "
                 "interval / 4, at least every 10 ms). 0: no time limit.")
          .range(0, INT64_MAX / 1'000'000),
      sdk::param("max_open_files", SL_PARAM_INT, "64",
                 "Bound on open part files: opening one more finishes the least recently "
                 "written one.")
          .range(1, 65536),
      sdk::param("part_prefix", SL_PARAM_STRING, nullptr,
                 "PREFIX in the part files' names (letters, digits, '_'; default: the node id "
                 "with other characters as '_'). A restart deletes in-progress files of its "
                 "own prefix and task only: several sluiced processes writing into one `dir` "
                 "need one prefix each."),
  };

  /// The template, the cross-key rules and (environment checks) a writable `dir`.
  static void validate(const sdk::Config& cfg);
  ToFiles(const sl_node_init& init, const sdk::Config& cfg);

  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  void stop(sdk::Context ctx) override;

  // Checkpoints (to_files_checkpoint.cc).
  sdk::Result<bool> checkpoint_prepare(sdk::Context ctx, uint64_t epoch) override;
  sdk::Status checkpoint_commit(sdk::Context ctx, uint64_t epoch) override;
  /// {"parts": [[in-progress, final], ...]}: the finished files no commit published yet
  /// (paths relative to `dir`); a restart publishes them.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_roll_timer = 1;

  /// A finished or open part file: its paths relative to dir_.
  struct Part {
    std::string in_progress;
    std::string final_name;
  };
  /// An open bucket: its part file and what decides when it rolls.
  struct Bucket {
    PartFile file;
    Part part;
    std::string time_text;  // the processing-time fields it was opened for
    int64_t opened_ns;
    uint64_t last_used;
  };

  /// Where an element goes: its bucket's path (without extension) and time fields.
  struct BucketName {
    std::string path;
    std::string time_text;
  };
  /// The bucket of `m`; an error of the element when it has no event time (time =
  /// "event") or its key is too long.
  sdk::Result<BucketName> bucket_of(sdk::Context ctx, const sl_message& m);
  /// The open bucket for `path`, opening a part file (and closing the least recently used
  /// one past max_open_files).
  sdk::Result<Bucket*> open_bucket(sdk::Context ctx, const std::string& path,
                                   const std::string& time_text);
  /// Finishes the bucket's part file and hands it on: published at once without
  /// checkpoints, kept for the next checkpoint's commit with them.
  sdk::Status close_bucket(sdk::Context ctx, const std::string& path);
  /// Closes every open bucket for which `pred` holds, in path order.
  sdk::Status close_buckets(sdk::Context ctx, const std::function<bool(const Bucket&)>& pred);
  /// Renames the part to its final name and fsyncs its directory.
  sdk::Status publish(sdk::Context ctx, const Part& part);
  /// At start: publishes the restored parts, then deletes (with checkpoints) or reports
  /// (without) the in-progress files of this prefix and task that no checkpoint covers.
  sdk::Status recover(sdk::Context ctx);
  /// True when `name` (a file name) is an in-progress part of this prefix and task.
  [[nodiscard]] bool own_in_progress(std::string_view name) const;
  void publish_metrics(sdk::Context ctx) const;
  [[nodiscard]] std::string absolute(const std::string& rel) const { return dir_ + "/" + rel; }

  // Config.
  std::string dir_;
  PathTemplate template_;
  std::optional<std::string> key_field_;  // absent: the message key
  bool event_time_;
  bool json_;
  bool gzip_;
  int level_;
  uint64_t roll_bytes_;
  int64_t roll_interval_ns_;
  size_t max_open_;
  std::string prefix_;
  uint32_t task_;
  bool checkpointing_;
  std::string extension_;  // the template's, plus ".gz" with gzip

  // Runtime.
  std::string run_;  // random per start: part names never repeat across runs
  uint64_t next_part_ = 0;
  uint64_t use_clock_ = 0;
  std::unordered_map<std::string, Bucket> buckets_;
  int64_t tm_second_ = INT64_MIN;  // the second tm_ holds
  std::tm tm_{};
  std::string last_time_text_;  // of the newest processing-time bucket
  std::string line_;            // reused
  std::vector<Part> finished_;  // finished since the last prepare (with checkpoints)
  std::map<uint64_t, std::vector<Part>> prepared_;  // by epoch, waiting for a commit
  std::vector<Part> restored_;                      // from restore(): publish at start

  // Metrics.
  uint64_t records_total_ = 0;
  uint64_t files_committed_ = 0;
  uint64_t bytes_committed_ = 0;
  uint64_t bytes_written_ = 0;
};

}  // namespace sluice::files
