// Count-based windows of the core_ops plugin (streamz names and parameters): partition,
// partition_unique and sliding_window. Each emits arrays (tuples in streamz) made of several
// input elements, so the output messages carry no headers or event time; partition by key
// sets the message key to the group's key.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "elementwise.hpp"

namespace sluice::core_ops {

/// `partition`: groups of n elements (per key), optionally cut short by a timeout.
class Partition final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "partition";
  static constexpr const char* k_doc =
      "Emits the elements in arrays of `n`, in arrival order (streamz partition). With `key`, "
      "elements of the same key(x) are grouped separately and each group goes out when it "
      "holds n; its messages carry the key as their message key. With `timeout_ms`, a group "
      "that is still short that long after its first element arrived goes out as it is. At "
      "end of input a short group is dropped, as in streamz, unless emit_partial = true: then "
      "the short groups go out, oldest first. streamz's `key` as an index or field name is "
      "key = \"get\", key_args = { path = ... } here. State: the pending groups and their "
      "timeout deadlines.";
  static constexpr std::array k_params{
      sdk::required("n", SL_PARAM_INT, "Size of a group (>= 1).").min(1),
      sdk::param("timeout_ms", SL_PARAM_DURATION, nullptr,
                 "Emit a short group this long after its first element; absent: never."),
      sdk::param("key", SL_PARAM_FUNCTION, nullptr,
                 "Function giving an element's group, e.g. key = \"get\", key_args = { path = "
                 "\"user\" }; absent: one group."),
      sdk::param("emit_partial", SL_PARAM_BOOL, "false",
                 "At end of input, emit the groups still short instead of dropping them."),
  };

  Partition(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Status finish(sdk::Context ctx) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  struct Group {
    std::vector<sdk::Value> items;
    int64_t deadline_ns = 0;  // with a timeout: when the group goes out short
    uint64_t seq = 0;         // start order; also the id of its timer
  };
  using group_map = sdk::ValueMap<Group>;

  /// Adds `x` to the group of `key`; emits the group when full.
  sdk::Status add(sdk::Context ctx, sdk::Value key, sdk::ValueRef x);
  /// Emits the group at `it` and forgets it.
  sdk::Status flush(sdk::Context ctx, group_map::iterator it);
  /// Arms the group's timer for its deadline.
  sdk::Status arm(sdk::Context ctx, const Group& g) const;

  int64_t n_;
  std::optional<int64_t> timeout_ns_;
  bool emit_partial_;
  sdk::Function key_fn_;                   // empty: one group under the null key
  group_map groups_;                       // pending (non-empty) groups only
  std::map<uint64_t, sdk::Value> by_seq_;  // pending groups' keys, oldest first
  uint64_t next_seq_ = 1;
  std::vector<sl_value> in_;
  std::vector<sdk::Value> keys_;
};

/// `partition_unique`: groups of n elements of distinct keys.
class PartitionUnique final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "partition_unique";
  static constexpr const char* k_doc =
      "Collects elements until it holds `n` of distinct keys (key(x), or the element itself) "
      "and emits them as an array (streamz partition_unique). An element whose key is "
      "already held is dropped (keep = \"first\") or replaces the held one, moving to the "
      "end (keep = \"last\"): the array keeps the elements' arrival order. At end of input "
      "a short group is dropped, as in streamz, unless emit_partial = true. keep is checked "
      "(streamz took any other string as \"first\"); keys compare as the host compares "
      "values. State: the held elements and their keys.";
  static constexpr std::array k_params{
      sdk::required("n", SL_PARAM_INT, "Number of distinct elements per group (>= 1).").min(1),
      sdk::param("key", SL_PARAM_FUNCTION, nullptr,
                 "Function giving an element's key, e.g. key = \"get\", key_args = { path = "
                 "\"id\" }; absent: the element itself."),
      sdk::param("keep", SL_PARAM_STRING, "\"first\"",
                 R"(Which of two elements of one key to hold: "first" or "last".)")
          .one_of("first|last"),
      sdk::param("emit_partial", SL_PARAM_BOOL, "false",
                 "At end of input, emit the group held so far instead of dropping it."),
  };

  PartitionUnique(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status finish(sdk::Context ctx) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  struct Held {
    sdk::Value key;
    sdk::Value item;
  };
  void hold(sdk::Value key, sdk::Value item);
  sdk::Status flush(sdk::Context ctx);

  int64_t n_;
  bool keep_last_;
  bool emit_partial_;
  sdk::Function key_fn_;  // empty: the element itself
  std::list<Held> held_;  // arrival order
  sdk::ValueMap<std::list<Held>::iterator> where_;
  std::vector<sl_value> in_;
  std::vector<sdk::Value> keys_;
};

/// `sliding_window`: the last n elements, after each element.
class SlidingWindow final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr const char* k_name = "sliding_window";
  static constexpr const char* k_doc =
      "After each element, emits the array of the last `n` elements, oldest first (streamz "
      "sliding_window). With return_partial = true (the default, as in streamz) the first "
      "n - 1 windows are shorter; with false, nothing goes out before n elements arrived. "
      "emit_partial = true (with return_partial = false) emits the one short window at end "
      "of input when fewer than n elements arrived in all, for batch jobs on short input. "
      "State: the window.";
  static constexpr std::array k_params{
      sdk::required("n", SL_PARAM_INT, "Size of the window (>= 1).").min(1),
      sdk::param("return_partial", SL_PARAM_BOOL, "true",
                 "Emit the shorter windows of the first n - 1 elements."),
      sdk::param("emit_partial", SL_PARAM_BOOL, "false",
                 "At end of input, emit the short window if no full one ever went out."),
  };

  SlidingWindow(sdk::Context ctx, const sdk::Config& cfg);
  SlidingWindow(const SlidingWindow&) = delete;
  SlidingWindow& operator=(const SlidingWindow&) = delete;
  ~SlidingWindow() override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status finish(sdk::Context ctx) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  /// The window as a new array, oldest first (one host call: the window is contiguous).
  [[nodiscard]] sdk::Value window_array() const;
  [[nodiscard]] bool window_full() const noexcept { return buf_.size() == 2 * n_; }
  [[nodiscard]] size_t window_size() const noexcept { return window_full() ? n_ : buf_.size(); }
  /// Adds borrowed `v` (the window takes its own reference); the oldest leaves when full.
  void push(sl_value v) {
    if (!window_full()) {
      fill(v);
      return;
    }
    sl_value& oldest = buf_[head_];
    if (sl_value_is_boxed(oldest)) sdk::host().value_release(oldest);
    if (sl_value_is_boxed(v)) sdk::host().value_retain(v);
    oldest = v;
    buf_[head_ + n_] = v;
    if (++head_ == n_) head_ = 0;
  }
  /// push() while fewer than n elements arrived.
  void fill(sl_value v);
  void clear() noexcept;

  size_t n_;
  bool return_partial_;
  bool emit_partial_;
  // Until n elements arrived, the window is buf_ (it grows as they come). From then on,
  // buf_ holds 2n slots and each element is written twice, at i and i + n (i = its
  // position mod n): the window is always the contiguous buf_[head_, head_ + n), oldest
  // first, so an element costs two stores, and each output array one host call. One
  // reference is held per element (the copy at i + n is borrowed from the one at i).
  // Raw sl_values rather than sdk::Values: moving Values (writing each source back to
  // null) and compacting made push the largest cost of sliding_window(10) -> map(sum).
  std::vector<sl_value> buf_;
  size_t head_ = 0;
  bool full_ = false;  // a full window went out
  std::vector<sdk::Value> out_;
};

}  // namespace sluice::core_ops
