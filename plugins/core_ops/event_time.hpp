// The event_time operator of the core_ops plugin: sets each message's event time (from a
// field, a function, or the time it already has) and makes the watermarks that event-time
// operators downstream (window) close on, per input partition (key group, ABI 1.3), with
// idle partitions and far-future elements handled (docs/EVENT_TIME.md).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "functions.hpp"

namespace sluice::core_ops {

/// `event_time`: stamps messages with their event time and emits the watermark
/// W = min over active partitions of (max event time seen there - max_out_of_orderness).
class EventTime final : public sdk::Operator {
 public:
  /// The largest duration in ms whose ns fit in an int64 (about 292 years).
  static constexpr int64_t k_max_duration_ms = INT64_MAX / 1'000'000;
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE | SL_NODE_WATERMARKS;
  static constexpr const char* k_name = "event_time";
  static constexpr const char* k_doc =
      "Sets each message's event time and makes the watermark that event-time operators "
      "downstream (window) close on (docs/EVENT_TIME.md). The time is read from the value: at "
      "`path` (as the get function reads it), or computed by `function` (with `args`, or "
      "lua = \"x.ts\"); either must give an int of milliseconds since the epoch or an RFC "
      "3339 string (\"2026-12-01T10:00:00Z\", \"2026-12-01T11:00:00.250+01:00\"). Anything "
      "else (a missing field, null, a float, a date that does not parse or lies outside the "
      "years 1678 to 2262) is an error of that message, handled by the node's on_error (use "
      "on_error = \"dead_letter\" to keep such messages). With neither, a message keeps the "
      "event time its source gave it (from_kafka: the record timestamp), and one without gets "
      "the time it was read. Messages go on unchanged but for that time (key, headers and key "
      "group kept). After each batch the node emits its watermark W: per input partition (the "
      "key group, that is the Kafka partition; one for other sources) the largest event time "
      "seen minus `max_out_of_orderness_ms`, and W the minimum of that over the partitions "
      "that are active; a partition not seen yet does not hold W back. With `idle_timeout_ms`, "
      "a partition that got nothing for that long (processing time) stops holding W back "
      "until its next message, so a quiet partition does not keep windows open. With "
      "`max_future_ms`, a message whose event time is more than that ahead of the processing "
      "clock goes unchanged to the side output \"ID.late\" (read it with inputs = "
      "[\"ID.late\"]) and does not move W. W never goes down, so a message behind it may be "
      "late for the windows downstream. State: per key "
      "group, the largest event time seen, and the last watermark; a keyed node type, so a "
      "partition's progress moves with it (docs/SCALING.md).";
  static constexpr std::array k_params{
      sdk::param("path", SL_PARAM_ANY, nullptr,
                 "Read the event time at this path of the value, as the get function does: a "
                 "key, an index, or an array of them (path = [\"meta\", \"ts\"]). Not with "
                 "`function`."),
      sdk::param("function", SL_PARAM_FUNCTION, nullptr,
                 "Compute the event time from the value, e.g. function = \"get\", args = { "
                 "path = \"ts\" }, or lua = \"x.ts * 1000\". Not with `path`.")
          .one_of("map"),
      sdk::param("max_out_of_orderness_ms", SL_PARAM_DURATION, "0",
                 "How far behind the largest event time of its partition a message may be "
                 "and still not be late: W lags that far behind.")
          .min(0),
      sdk::param("idle_timeout_ms", SL_PARAM_DURATION, nullptr,
                 "A partition that got no message for this long (processing time) no longer "
                 "holds the watermark back, until its next message. Absent: a partition holds "
                 "it back for ever.")
          .min(1),
      sdk::param("max_future_ms", SL_PARAM_DURATION, nullptr,
                 "A message whose event time is more than this ahead of the processing clock "
                 "goes to \"ID.late\" instead and does not move the watermark. Absent: every "
                 "message counts.")
          .min(1),
  };
  static constexpr std::array k_side_outputs{"late"};

  /// The cross-key rule: `path` and `function` exclude each other.
  static void validate(const sdk::Config& cfg);
  EventTime(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  /// The input's watermarks (from an event_time upstream) are replaced by this node's own:
  /// overridden so that the host does not forward them.
  sdk::Status on_watermark(sdk::Context ctx, int64_t watermark_ns) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;
  /// Key group `group` came to this task: its partition's progress replaced by `state`
  /// (one entry of the snapshot's "groups"), forgotten when null. W is recomputed from
  /// what is held at the next batch or idle timer (nothing is emitted from here).
  sdk::Status restore_group(sdk::Context ctx, uint32_t group, sdk::ValueRef state) override;
  /// Key group `group` moved away: it no longer holds W back.
  sdk::Status drop_group(sdk::Context ctx, uint32_t group) override;

 private:
  /// One input partition (key group): the largest event time seen there and when (task
  /// clock) it last got a message.
  struct Partition {
    uint64_t group = 0;
    int64_t max_ns = 0;
    int64_t seen_ns = 0;
    bool active = true;
  };

  /// The partition of `key_group`, created (active, nothing seen) when new. The last one
  /// found is cached: a batch from a partitioned source is usually one partition.
  Partition& partition(uint64_t key_group);
  /// The event time in ns of a value of the path or the function: an int of ms or an RFC
  /// 3339 string; an error naming the value otherwise.
  [[nodiscard]] sdk::Result<int64_t> time_of(sdk::ValueRef t) const;
  /// Marks the partitions idle at `now_ns`, emits W when it rose (or once after a restore)
  /// and arms the idle timer for the next partition that would go idle.
  sdk::Status advance(sdk::Context ctx, int64_t now_ns);
  /// Arms the idle timer for the earliest moment an active partition goes idle, unless it
  /// is armed or nothing is active.
  sdk::Status arm_idle_timer(sdk::Context ctx, int64_t now_ns);
  /// The partition of key group `group` (named `name` in errors) from one group's table of
  /// a snapshot ({"max_ns": int[, "seen_ns": int, "active": bool]}), restored at `now_ns`;
  /// throws on a bad one.
  Partition parse_group(uint64_t group, std::string_view name, sdk::ValueRef table,
                        int64_t now_ns) const;

  std::optional<Path> path_;
  std::string path_json_;  // the path as JSON, for errors
  std::string path_text_;  // "the event time at path ..." / "... the function gave"
  sdk::Function fn_;
  int64_t out_of_orderness_ns_ = 0;
  int64_t idle_ns_ = 0;           // 0: no idle timeout
  int64_t future_ns_ = 0;         // 0: no max_future
  std::vector<Partition> parts_;  // sorted by group: few, so a flat vector
  size_t last_ = 0;               // index of the cached partition in parts_, if valid
  bool last_valid_ = false;
  int64_t emitted_ns_ = SL_NO_WATERMARK;  // the last watermark emitted (or restored)
  bool reemit_ = false;                   // after a restore: emit W even if it did not rise
  bool timer_armed_ = false;
  std::vector<sl_value> in_;  // per-batch scratch, reused
  std::vector<sdk::Value> times_;
  std::vector<sl_message> messages_;
  std::vector<sl_message> late_;
};

}  // namespace sluice::core_ops
