// The event-time windows of the core_ops plugin (docs/EVENT_TIME.md): `window` keeps
// tumbling, hopping or session windows per message key, fires them when the input
// watermark passes their end (sl_node_type.on_watermark, ABI 1.5), re-fires them for
// elements within the allowed lateness, and sends what comes too late to its side output
// "late". Its state is kept per key group, as aggregate's (keyed.hpp).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keyed_state.hpp"

namespace sluice::core_ops {

/// `window`: per key, the reduction of the elements of each event-time window.
class EventWindow final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
  static constexpr const char* k_name = "window";
  static constexpr int32_t k_max_inputs = SL_INPUTS_UNLIMITED;
  static constexpr std::array k_side_outputs{"late"};
  /// Durations above this (100 years) are refused: window bounds stay far from overflow.
  static constexpr int64_t k_max_ms = int64_t{100} * 365 * 86'400'000;
  /// The most hopping windows one element can belong to (size_ms / slide_ms, rounded up).
  static constexpr int64_t k_max_windows_per_element = 1000;
  static constexpr const char* k_doc =
      "Event-time windows per message key (after event_time, which stamps each message's "
      "event time and makes the watermark): each element goes into the windows its event "
      "time t (ms) falls in, and each window holds function(acc, x) of its elements, "
      "starting from `start` (without `start` its first element is its value, so count "
      "needs start = 0). kind = \"tumbling\": windows [s, s + size_ms) back to back, s = "
      "offset_ms + a multiple of size_ms; \"hopping\": windows of size_ms starting every slide_ms "
      "(an "
      "element is in up to size_ms / slide_ms of them; slide_ms may not exceed size_ms, whose "
      "gaps would drop elements); \"session\": [t, "
      "t + gap_ms) per element, merged with every session of its key it overlaps or touches "
      "(an element can bridge two sessions; a session keeps its elements, and a merge folds "
      "them again in arrival order). A window fires when the watermark reaches its end: it "
      "emits {\"key\": key, \"start\": start_ms, \"end\": end_ms, \"value\": acc} with the "
      "key as message key and end - 1 ms as event time, in order of end, then start, then "
      "creation. With allowed_lateness_ms, a fired window stays until the watermark reaches "
      "end + allowed_lateness_ms, and each element that still arrives for it emits it again "
      "with the new value; emit = \"update\" also emits a window after each element. An "
      "element whose windows are all closed for good (watermark >= end + "
      "allowed_lateness_ms) goes unchanged to the side output \"ID.late\" (read it as an "
      "input of another node; unread, it is counted and dropped). A message without event "
      "time is an error of that message (on_error applies). Keys compare as aggregate's; "
      "messages without a key share one window set (per key group, as every key). End of "
      "input fires every window. State: per key group (as aggregate), the open windows (key, "
      "bounds, value, whether fired; a session's elements), and the watermark, so that a "
      "restart from a checkpoint takes the windows up where they were and what was late "
      "stays late.";
  static constexpr std::array k_params{
      sdk::required("kind", SL_PARAM_STRING,
                    "\"tumbling\" (size_ms, offset_ms), \"hopping\" (size_ms, slide_ms, "
                    "offset_ms) or \"session\" (gap_ms).")
          .one_of("tumbling|hopping|session"),
      sdk::param("size_ms", SL_PARAM_DURATION, nullptr,
                 "Tumbling and hopping: the length of a window; required for them.")
          .range(1, k_max_ms),
      sdk::param("slide_ms", SL_PARAM_DURATION, nullptr,
                 "Hopping: a window starts every slide_ms; required for it. size_ms / "
                 "slide_ms is at most 1000.")
          .range(1, k_max_ms),
      sdk::param("offset_ms", SL_PARAM_DURATION, nullptr,
                 "Tumbling and hopping: windows start at offset_ms plus a multiple of size_ms "
                 "(tumbling) or slide_ms (hopping), and offset_ms must be less than that; "
                 "absent: 0 (windows aligned to the epoch).")
          .range(0, k_max_ms),
      sdk::param("gap_ms", SL_PARAM_DURATION, nullptr,
                 "Session: a session ends gap_ms after its last element; required for it.")
          .range(1, k_max_ms),
      sdk::required("function", SL_PARAM_FUNCTION,
                    R"(The reducer, called (acc, x), e.g. "count", "sum" or lua = "acc + x".)"),
      sdk::param("start", SL_PARAM_ANY, nullptr,
                 "Each window's initial value; absent: a window's first element is its "
                 "value."),
      sdk::param("allowed_lateness_ms", SL_PARAM_DURATION, "0",
                 "How long after its end (in watermark time) a fired window still takes "
                 "elements, emitting its new value for each.")
          .range(0, k_max_ms),
      sdk::param("emit", SL_PARAM_STRING, "\"final\"",
                 "\"final\": a window goes out when it fires (and again for each element "
                 "within the allowed lateness); \"update\": also after every element.")
          .one_of("final|update"),
  };

  /// The cross-key rules: which keys each kind needs and takes, offset below the period,
  /// the number of hopping windows of an element, count with a start.
  static void validate(const sdk::Config& cfg);
  EventWindow(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_watermark(sdk::Context ctx, int64_t watermark_ns) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;
  /// Key group `group` came to this task: its windows replaced by `state` (one entry of the
  /// snapshot's "groups"), none when null.
  sdk::Status restore_group(sdk::Context ctx, uint32_t group, sdk::ValueRef state) override;
  /// Key group `group` moved away: its windows forgotten.
  sdk::Status drop_group(sdk::Context ctx, uint32_t group) override;

 private:
  enum class Kind : uint8_t { tumbling, hopping, session };
  /// A session's element, with its place in the arrival order (of the node).
  struct Element {
    sdk::Value value;
    uint64_t order = 0;
  };
  /// A key's windows: slot numbers, by start (sessions: disjoint and not touching).
  using KeyWindows = std::vector<uint32_t>;
  using Group = sdk::ValueMap<KeyWindows>;
  /// One open window [start, end) (ms) of a key in a key group. Slots are reused: seq 0
  /// marks a free one, and entries of the firing index name a slot with its seq.
  struct Slot {
    uint64_t seq = 0;  // creation order (unique in the node): ties of the firing order
    int64_t start = 0;
    int64_t end = 0;
    sdk::Value key;
    sdk::Value acc;
    uint64_t group = 0;
    KeyWindows* owner = nullptr;  // the key's list (a node of its group's map: stable)
    bool fired = false;
    std::vector<Element> elements;  // sessions only
  };
  /// An entry of the firing index: slot `slot` (if still `seq`) is due at `due_ns`, to
  /// fire (its end) or to be dropped (its end + allowed lateness). Sessions grow, so an
  /// entry may name an older end or start than its window's: a fire entry with an older
  /// end is pushed again at the window's end when it comes up; one with another start is
  /// stale (a start that moves gets a new entry).
  struct Due {
    int64_t due_ns;
    int64_t end;
    int64_t start;
    uint64_t seq;
    uint32_t slot;
    bool drop;
  };
  /// A window read from a snapshot, before it is installed.
  struct Parsed {
    sdk::Value key;
    int64_t start;
    int64_t end;
    sdk::Value acc;
    bool fired;
    uint64_t seq;
    std::vector<Element> elements;
  };

  /// The group of `key_group`, created when new (the last one is cached).
  Group& group(uint64_t key_group);
  /// Tumbling and hopping: `m` (event time t ms) into its windows; late when all are closed.
  sdk::Status add_fixed(const sl_message& m, int64_t t);
  /// Session: `m` into the session of its key it extends, bridges or starts.
  sdk::Status add_session(const sl_message& m, int64_t t);
  /// A new window in `kw` (at its place by start) of `key`, in group `group`.
  uint32_t open(uint64_t group, const sdk::Value& key, KeyWindows& kw, int64_t start, int64_t end,
                sdk::Value acc);
  /// What an element that changed window `slot` makes it emit: its value when it has fired
  /// already (within the allowed lateness) or with emit = "update".
  void changed(uint32_t slot);
  /// Forgets window `slot`: out of its key's list (and the key out of its group when it was
  /// the last), slot freed.
  void close(uint32_t slot);
  /// Frees `slot` without touching its key's list.
  void release(uint32_t slot);
  void push_due(uint32_t slot, bool drop);
  /// Rebuilds the firing index from the live windows when mostly stale entries remain.
  void compact();
  /// Appends window `slot`'s output message to out_.
  void output(uint32_t slot);
  /// Emits out_ then late_ (one call each), and clears them.
  sdk::Status flush(sdk::Context ctx);
  /// True when a window ending at end_ms takes no element any more.
  [[nodiscard]] bool closed_for_good(int64_t end_ms) const;
  /// One group's table of a snapshot; throws on a bad one.
  std::vector<Parsed> parse_group(std::string_view name, sdk::ValueRef table) const;
  /// Installs parsed windows into group `id` (empty before), with their seqs when
  /// `keep_seqs`, else new ones in their order; their firing entries are pushed.
  void install(uint64_t id, std::vector<Parsed>&& windows, bool keep_seqs);
  /// Frees every window of group `id` and forgets the group.
  void forget_group(uint64_t id);

  Kind kind_ = Kind::tumbling;
  int64_t size_ = 0;    // ms; tumbling: the period
  int64_t slide_ = 0;   // ms; tumbling: size_
  int64_t offset_ = 0;  // ms, below slide_
  int64_t gap_ = 0;     // ms
  int64_t lateness_ns_ = 0;
  bool update_ = false;
  Reducer reducer_;

  int64_t watermark_ = SL_NO_WATERMARK;         // the input watermark (ns)
  int64_t finite_watermark_ = SL_NO_WATERMARK;  // the last before the end: the snapshot's
  std::unordered_map<uint64_t, Group> groups_;
  uint64_t last_group_id_ = 0;
  Group* last_group_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
  std::vector<Due> due_;  // a min-heap by (due_ns, end, start, seq)
  uint64_t next_seq_ = 1;
  uint64_t next_order_ = 1;

  // Per call, reused: the outputs (boxed values kept alive until emitted), late messages,
  // and the windows of the element being added with their next values.
  std::vector<sdk::Value> out_values_;
  std::vector<sl_message> out_;
  std::vector<sl_message> late_;
  std::vector<int64_t> starts_;
  std::vector<uint32_t> targets_;
  std::vector<sdk::Value> next_;
  std::vector<Element> merged_;
};

}  // namespace sluice::core_ops
