// Time-based operators of the core_ops plugin: timed_window, timed_window_unique, buffer,
// rate_limit, delay and latest. All run on the task clock (ctx.now_ns / timer_start), so
// `sluiced test` drives them on a virtual clock; all are stateful and keep absolute
// deadlines in their state, re-arming their timers in start() after a restore().
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace sluice::core_ops {

/// Helpers of the time-based operators (a namespace of their own: other families of
/// core_ops have helpers of similar names).
namespace timed {

/// Reports a queue's length as gauge `queue_depth` of the node (sluice_node_queue_depth on
/// /metrics), only when it changed since the last report.
class DepthGauge {
 public:
  void report(sdk::Context ctx, size_t depth) noexcept {
    if (depth == last_) return;
    last_ = depth;
    ctx.gauge_set("queue_depth", "", static_cast<double>(depth));
  }

 private:
  size_t last_ = SIZE_MAX;
};

/// A message kept by a node across callbacks: owns its value, key and headers.
struct HeldMessage {
  sdk::Value value;
  sdk::Value key;
  sdk::Value headers;
  int64_t timestamp_ns = SL_NO_TIMESTAMP;
  uint64_t key_group = sdk::k_no_key_group;

  /// Retains the parts of `m` (borrowed).
  static HeldMessage of(const sl_message& m);
  /// A view for emit(): borrows from *this.
  [[nodiscard]] sl_message view() const noexcept;
  /// `{ value, key?, headers?, timestamp_ns?, key_group? }` for a snapshot.
  [[nodiscard]] sdk::Value to_state() const;
  /// The inverse of to_state(); `what` names the node type in errors.
  static sdk::Result<HeldMessage> from_state(sdk::ValueRef state, const char* what);
};

/// Window timing shared by timed_window and timed_window_unique: windows of `interval`
/// back to back from start(); `deadline_ns_` (absolute, task clock) is the end of the open
/// window and survives snapshot/restore.
class WindowClock {
 public:
  static constexpr uint64_t k_timer = 1;

  explicit WindowClock(std::chrono::milliseconds interval)
      : interval_ns_(interval.count() * 1'000'000) {}
  /// Arms the timer for the open window (a restored deadline, or now + interval).
  sdk::Status start(sdk::Context ctx);
  /// The window closed: moves the deadline on by one interval (or past now, when the timer
  /// was late) and re-arms.
  sdk::Status advance(sdk::Context ctx);
  [[nodiscard]] int64_t deadline_ns() const noexcept { return deadline_ns_; }
  void restore(int64_t deadline_ns) noexcept { deadline_ns_ = deadline_ns; }

 private:
  int64_t interval_ns_;
  int64_t deadline_ns_ = 0;  // 0: not started
};

}  // namespace timed

/// `timed_window`: every interval, the array of elements that arrived in it.
class TimedWindow final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "timed_window";
  static constexpr const char* k_doc =
      "Every `interval_ms`, emits the array of the elements that arrived during that interval, "
      "in arrival order (streamz timed_window, which emits tuples). Windows are back to back "
      "from the start of the pipeline: the first closes `interval_ms` after start; an element "
      "arriving exactly at a boundary belongs to the next window. As in streamz, an interval "
      "in which nothing arrived emits an empty array; `emit_empty = false` skips those. "
      "Unlike streamz, no empty window is emitted at start (streamz's loop emits once before "
      "its first sleep). At end of input the open window is emitted at once if it holds "
      "elements (`emit_partial`; streamz would emit it at its next tick, which never comes "
      "once the stream ends). Emits bare arrays (no key, headers or event time). Checkpoints "
      "the open window and its deadline.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("interval_ms", SL_PARAM_DURATION, "Length of each window (ms, > 0).").min(1),
      sdk::param("emit_empty", SL_PARAM_BOOL, "true",
                 "Emit an empty array for an interval in which nothing arrived (as streamz)."),
      sdk::param("emit_partial", SL_PARAM_BOOL, "true",
                 "At end of input, emit the open window if it holds elements."),
  };

  TimedWindow(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  /// `{ items = [...], deadline_ns = <end of the open window> }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  sdk::Status emit_window(sdk::Context ctx);

  timed::WindowClock clock_;
  bool emit_empty_;
  bool emit_partial_;
  std::vector<sdk::Value> items_;
};

/// `timed_window_unique`: every interval, the elements of that interval with distinct keys.
class TimedWindowUnique final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "timed_window_unique";
  static constexpr const char* k_doc =
      "Every `interval_ms`, emits the array of the elements that arrived during that interval, "
      "keeping one element per key (streamz timed_window_unique). `key` is a function of the "
      "element (absent: the element itself; streamz's `key = \"a\"` for x[\"a\"] is written "
      "`key = \"get\", key_args = { path = \"a\" }`). `keep = \"first\"` keeps each key's first "
      "element, `\"last\"` its most recent one; either way the array is in the arrival order of "
      "the kept elements (as streamz). Keys compare as sluice values compare (1 == 1.0, but "
      "true != 1, unlike Python). Window timing, empty windows, `emit_empty` and "
      "`emit_partial` are as in timed_window. Checkpoints the open window (keys and elements) "
      "and its deadline.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("interval_ms", SL_PARAM_DURATION, "Length of each window (ms, > 0).").min(1),
      sdk::param("key", SL_PARAM_FUNCTION, nullptr,
                 "The function giving each element's key (absent: the element itself)."),
      sdk::param("keep", SL_PARAM_STRING, R"("first")",
                 "Which element of a repeated key to keep: \"first\" or \"last\".")
          .one_of("first|last"),
      sdk::param("emit_empty", SL_PARAM_BOOL, "true",
                 "Emit an empty array for an interval in which nothing arrived (as streamz)."),
      sdk::param("emit_partial", SL_PARAM_BOOL, "true",
                 "At end of input, emit the open window if it holds elements."),
  };

  TimedWindowUnique(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process_one(sdk::Context ctx, uint32_t input, const sl_message& m) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  /// `{ items = [[key, element], ...], deadline_ns }` (kept elements in order).
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  struct Entry {
    sdk::Value key;
    sdk::Value value;
    bool alive;
  };
  void add(sdk::Value key, sdk::Value value);
  sdk::Status emit_window(sdk::Context ctx);
  [[nodiscard]] size_t alive_count() const noexcept { return index_.size(); }

  timed::WindowClock clock_;
  sdk::Function key_fn_;  // empty: the element is its own key
  bool keep_last_;
  bool emit_empty_;
  bool emit_partial_;
  std::vector<Entry> entries_;   // arrival order; "last" marks replaced entries dead
  sdk::ValueMap<size_t> index_;  // key -> live entry
};

/// `buffer`: decouples its input from its output through a bounded queue drained on a
/// later executor turn.
class Buffer final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "buffer";
  static constexpr const char* k_doc =
      "Lets up to `n` elements pile up between its input and its output (streamz buffer). "
      "sluice delivers depth-first on one thread, so this is its meaning here: an arriving "
      "batch is queued and the call returns at once; the queue is drained (emitted in order, "
      "as one batch, with each message's key, headers and event time) on a later turn of the "
      "task's executor, after the current source poll returns. When `n` or more elements are "
      "queued the node signals back-pressure, which pauses the sources upstream of it until "
      "the drain; a batch is never split, so the queue can exceed `n` by at most one batch. At "
      "end of input what is queued is emitted before the output ends. Checkpoints the queue.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("n", SL_PARAM_INT, "Queue size at which sources are paused (> 0).").min(1),
  };

  Buffer(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status finish(sdk::Context ctx) override;
  /// `{ queue = [message, ...] }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  sdk::Status schedule_drain(sdk::Context ctx);
  sdk::Status drain(sdk::Context ctx);

  size_t n_;
  std::deque<timed::HeldMessage> queue_;
  timed::DepthGauge depth_;
  bool drain_scheduled_ = false;
  bool full_ = false;
  std::vector<sl_message> out_;
};

/// `latest`: the newest element, on the next executor turn; older ones are dropped.
class Latest final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "latest";
  static constexpr const char* k_doc =
      "Drops held-up elements and emits the latest (streamz latest). Here: the node keeps "
      "only the newest element it received and emits it (with its key, headers and event "
      "time) on the next turn of the task's executor, after the current source poll returns; "
      "elements that arrive in the same turn (one batch, or several sources polled in one "
      "round) replace each other, so only the last of them goes out. It holds one element, "
      "so it never signals back-pressure. At end of input a held element is emitted. "
      "Checkpoints the held element.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;

  Latest(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status finish(sdk::Context ctx) override;
  /// `{ held = message }` or `{}`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  sdk::Status schedule(sdk::Context ctx);
  sdk::Status emit_held(sdk::Context ctx);

  std::optional<timed::HeldMessage> held_;
  bool scheduled_ = false;
};

/// `rate_limit`: at most one element per interval, the others queued (bounded).
class RateLimit final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "rate_limit";
  static constexpr const char* k_doc =
      "Lets no two elements through less than `interval_ms` apart (streamz rate_limit): an "
      "element is emitted when it arrives if the previous one went out at least `interval_ms` "
      "earlier, else it waits in a queue, and queued elements go out one per interval, in "
      "order (emission time = max(arrival, previous emission + interval), as streamz). "
      "Messages keep their key, headers and event time. The queue is bounded: at "
      "`max_queued` elements the node signals back-pressure (the sources upstream of it "
      "pause) until it is below that again; a batch is never split, so it can exceed the "
      "bound by one batch. At end of input the queued elements are emitted at once, in order "
      "(the output ends with the input, so they cannot wait). Checkpoints the queue and the "
      "earliest time of the next emission.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("interval_ms", SL_PARAM_DURATION, "Minimum spacing of emissions (ms)."),
      sdk::param("max_queued", SL_PARAM_INT, "1000",
                 "Queued elements at which sources are paused (> 0).")
          .min(1),
  };

  RateLimit(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process_one(sdk::Context ctx, uint32_t input, const sl_message& m) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  /// `{ queue = [message, ...], next_ns = <earliest next emission> }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_timer = 1;
  sdk::Status arm(sdk::Context ctx);
  void update_backpressure(sdk::Context ctx);

  int64_t interval_ns_;
  size_t max_queued_;
  int64_t next_ns_ = INT64_MIN;  // earliest time the next element may go out
  std::deque<timed::HeldMessage> queue_;
  timed::DepthGauge depth_;
  bool full_ = false;
};

/// `delay`: each element emitted `interval_ms` after it arrived.
class Delay final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "delay";
  static constexpr const char* k_doc =
      "Emits each element `interval_ms` after it arrived, in arrival order, with its key, "
      "headers and event time. streamz's delay does not do what its doc says: it emits an "
      "element as soon as it arrives when the previous one went out `interval` ago, and "
      "otherwise spaces elements `interval` apart (a rate limit); sluice delays every element "
      "by exactly `interval_ms` (use rate_limit for spacing). Elements due at the same time "
      "go out as one batch. The queue is bounded: at `max_queued` waiting elements the node "
      "signals back-pressure (the sources upstream of it pause) until it is below that again. "
      "At end of input the waiting elements are emitted at once, in order (the output ends "
      "with the input, so they cannot wait). Checkpoints the waiting elements with their "
      "due times.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr std::array k_params{
      sdk::required("interval_ms", SL_PARAM_DURATION, "How long each element is held (ms)."),
      sdk::param("max_queued", SL_PARAM_INT, "1000",
                 "Waiting elements at which sources are paused (> 0).")
          .min(1),
  };

  Delay(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  /// `{ queue = [{ due_ns, message }, ...] }`.
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  static constexpr uint64_t k_timer = 1;
  struct Waiting {
    int64_t due_ns;
    timed::HeldMessage message;
  };
  sdk::Status arm(sdk::Context ctx);
  sdk::Status emit_until(sdk::Context ctx, int64_t now_ns);
  void update_backpressure(sdk::Context ctx);

  int64_t interval_ns_;
  size_t max_queued_;
  std::deque<Waiting> queue_;
  timed::DepthGauge depth_;
  bool full_ = false;
  std::vector<sl_message> out_;
};

}  // namespace sluice::core_ops
