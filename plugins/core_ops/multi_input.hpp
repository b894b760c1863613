// Multi-input operators of the core_ops plugin: zip, combine_latest, zip_latest, union and
// collect. Where streamz emits tuples they emit arrays, items in `inputs` order. A combined
// element carries the latest event time of its parts, no key or headers, and the parts'
// key group when they all have the same one (co-partitioned inputs; else 0); union passes
// messages on unchanged.
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::core_ops {

/// One buffered element: its value, event time (SL_NO_TIMESTAMP when it had none) and key
/// group (sl_message.key_group).
struct Held {
  sdk::Value value;
  int64_t time_ns = SL_NO_TIMESTAMP;
  uint64_t key_group = sdk::k_no_key_group;
};

/// What an element made of several carries: the latest event time of its parts, and their
/// key group when every part has the same one (co-partitioned inputs), else none.
struct Parts {
  int64_t time_ns = SL_NO_TIMESTAMP;
  uint64_t key_group = sdk::k_no_key_group;
  bool empty = true;
  /// Adds part `h`.
  void add(const Held& h) noexcept;
};

/// `zip`: one element from each input, once every input has one.
class Zip final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "zip";
  static constexpr const char* k_doc =
      "Emits an array of one element from each input (in `inputs` order) once every input has "
      "one, as streamz zip. `literals` puts fixed values at given positions of the array, as "
      "streamz's zip(a, 5, b): literals = [{ at = 1, value = 5 }] emits [a, 5, b]. Each "
      "input's buffer holds up to `maxsize` elements; when one is full, the sources that feed "
      "only that input are paused until it drains (elements already on their way -- the rest "
      "of a batch, or a source that also feeds another input, as in a diamond -- are still "
      "taken, never dropped). End of input, where streamz never ends: like Python's zip, once "
      "an input has ended and its buffer is empty no more arrays can be formed, so what the "
      "other inputs buffered or still send is dropped (counted in a log line at the end) and "
      "their sources are no longer paused. State: the buffers.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr int32_t k_max_inputs = SL_INPUTS_UNLIMITED;
  static constexpr std::array k_params{
      sdk::param("maxsize", SL_PARAM_INT, "10",
                 "Elements buffered per input before the sources feeding it are paused (>= 1).")
          .min(1),
      sdk::param("literals", SL_PARAM_ARRAY, "[]",
                 "Fixed values in the output: tables { at = POSITION, value = V }, POSITION "
                 "counting from 0 over the whole output array."),
  };

  /// Each literal is { at, value } at a free position of the output.
  static void validate(const sdk::Config& cfg);
  Zip(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_input_end(sdk::Context ctx, uint32_t input) override;
  sdk::Status finish(sdk::Context ctx) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  void exhaust(sdk::Context ctx);
  void update_backpressure(sdk::Context ctx, uint32_t input);

  size_t maxsize_;
  std::vector<std::pair<size_t, sdk::Value>> literals_;  // (position, value), by position
  std::vector<std::deque<Held>> buffers_;
  std::vector<bool> ended_;
  std::vector<bool> paused_;
  std::vector<size_t> reported_depth_;  // queue_depth{input="i"} last reported, per input
  bool exhausted_ = false;
  uint64_t dropped_ = 0;
  std::vector<sdk::Value> out_values_;  // per-batch scratch: the arrays to emit
  std::vector<Parts> out_parts_;
};

/// `combine_latest`: the latest element of every input, on each arrival on `emit_on`.
class CombineLatest final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "combine_latest";
  static constexpr const char* k_doc =
      "Emits an array of the latest element of every input (in `inputs` order) each time an "
      "element arrives on one of the `emit_on` inputs, once every input has had one (streamz "
      "combine_latest). Arrivals before that are dropped, as in streamz, unless "
      "`hold_early = true`: then they are held and, when the last input delivers its first "
      "element, replayed in arrival order as if every input's first element had been there "
      "from the start (each held emit_on arrival emits once, paired with the values of the "
      "other inputs as they were then, back-filled with first elements). While more than "
      "`maxsize` arrivals are held, the sources feeding only the inputs that already have a "
      "value are paused. End of input: if an input ends before it ever had an element, "
      "nothing can be emitted any more; held arrivals are dropped and the paused sources "
      "resume. State: the latest elements and the held arrivals.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr int32_t k_max_inputs = SL_INPUTS_UNLIMITED;
  static constexpr std::array k_params{
      sdk::param("emit_on", SL_PARAM_ANY, nullptr,
                 "The inputs whose arrivals emit: an input id (\"clicks\") or index (0), or an "
                 "array of them. Default: every input."),
      sdk::param("hold_early", SL_PARAM_BOOL, "false",
                 "Hold the arrivals that come before every input has had an element and emit "
                 "them when it has, instead of dropping them (streamz drops them)."),
      sdk::param("maxsize", SL_PARAM_INT, "10",
                 "With hold_early: held arrivals before the inputs that have a value are paused "
                 "(>= 1).")
          .min(1),
  };

  /// `emit_on` names inputs the node has.
  static void validate(const sdk::Config& cfg);
  CombineLatest(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_input_end(sdk::Context ctx, uint32_t input) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  void arrive(uint32_t input, Held item);
  void update_backpressure(sdk::Context ctx);
  void combine();  // appends the array of latest_ to out_values_/out_parts_

  std::vector<bool> emit_on_;
  bool hold_early_;
  size_t maxsize_;
  std::vector<std::optional<Held>> latest_;
  size_t missing_;
  std::vector<std::pair<uint32_t, Held>> held_;  // hold_early: every arrival while missing_
  bool dead_ = false;                            // an input ended before it had a value
  std::vector<bool> paused_;
  std::vector<sdk::Value> out_values_;
  std::vector<Parts> out_parts_;
};

/// `zip_latest`: every element of the lossless input with the latest of the others.
class ZipLatest final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "zip_latest";
  static constexpr const char* k_doc =
      "Emits, for every element of the `lossless` input, an array of it and the latest "
      "element of each other input (in `inputs` order), as streamz zip_latest. Lossless "
      "elements that arrive before every other input has had an element are buffered and "
      "emitted, in order, when the last one does (each with the latest values at that "
      "moment); while `maxsize` are buffered, the sources feeding only the lossless input "
      "are paused. End of input: if another input ends before it ever had an element, the "
      "buffered lossless elements can never be emitted and are dropped (as streamz would "
      "hold them forever), and so are those left at the end. State: the latest elements and "
      "the buffer.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr int32_t k_max_inputs = SL_INPUTS_UNLIMITED;
  static constexpr std::array k_params{
      sdk::param("lossless", SL_PARAM_ANY, "0",
                 "The lossless input: its id or index. Default: the first input."),
      sdk::param("maxsize", SL_PARAM_INT, "10",
                 "Lossless elements buffered before its sources are paused (>= 1).")
          .min(1),
  };

  /// `lossless` names an input the node has.
  static void validate(const sdk::Config& cfg);
  ZipLatest(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_input_end(sdk::Context ctx, uint32_t input) override;
  sdk::Status finish(sdk::Context ctx) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  void emit_one(const Held& lossless);  // appends to out_values_/out_parts_
  void update_backpressure(sdk::Context ctx);

  uint32_t lossless_;
  size_t maxsize_;
  std::vector<std::optional<Held>> latest_;  // the lossless slot stays empty
  size_t missing_;                           // other inputs without an element yet
  std::deque<Held> buffer_;
  bool dead_ = false;
  bool paused_ = false;
  uint64_t dropped_ = 0;
  std::vector<sdk::Value> out_values_;
  std::vector<Parts> out_parts_;
};

/// `union`: every element of every input, unchanged.
class Union final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "union";
  static constexpr const char* k_doc =
      "Emits every element of every input as it arrives, unchanged (key, headers and event "
      "time kept), as streamz union. Ends when all its inputs have ended.";
  static constexpr int32_t k_max_inputs = SL_INPUTS_UNLIMITED;

  Union(sdk::Context /*ctx*/, const sdk::Config& /*cfg*/) {}
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;

 private:
  std::vector<sl_message> copy_;  // for batches with another stride
};

/// `collect`: input 0 collected, emitted as one array whenever input 1 delivers.
class Collect final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "collect";
  static constexpr const char* k_doc =
      "Collects the elements of its first input; each element of its second input flushes: "
      "emits the collected elements as one array (possibly empty, as streamz) and starts "
      "again -- streamz's collect with other.sink(c.flush). At end of input, what is still "
      "collected is emitted if `flush_at_end` (streamz would keep it forever). When `maxsize` "
      "elements are collected the sources feeding only the first input are paused until the "
      "next flush; elements that still arrive (from a source that also feeds the flush "
      "input, or after the flush input ended) push out the oldest, as a streamz cache "
      "deque(maxlen=maxsize) does, with a warning. State: the collected elements.";
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL;
  static constexpr int32_t k_min_inputs = 2;
  static constexpr int32_t k_max_inputs = 2;
  static constexpr std::array k_params{
      sdk::param("maxsize", SL_PARAM_INT, "100000", "Most elements collected at once (>= 1).")
          .min(1),
      sdk::param("flush_at_end", SL_PARAM_BOOL, "true",
                 "At end of input, emit what is collected (if anything)."),
  };

  Collect(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_input_end(sdk::Context ctx, uint32_t input) override;
  sdk::Status finish(sdk::Context ctx) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;

 private:
  sdk::Status flush(sdk::Context ctx);
  void set_paused(sdk::Context ctx, bool paused);

  size_t maxsize_;
  bool flush_at_end_;
  std::deque<Held> cache_;
  bool flush_ended_ = false;
  bool paused_ = false;
  bool warned_ = false;
};

}  // namespace sluice::core_ops
