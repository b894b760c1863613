// sluice/detail/node.hpp — config parameter declarations, the Source / Operator / Sink base
// classes and node_type<T>(), which turns a class into an sl_node_type of trampolines.
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_NODE_HPP
#define SLUICE_DETAIL_NODE_HPP

#include <sluice/detail/context.hpp>
#include <sluice/detail/status.hpp>
#include <sluice/detail/value.hpp>
#include <sluice/sluice.h>

#include <array>
#include <concepts>
#include <cstdint>
#include <new>
#include <span>
#include <type_traits>

namespace sluice::sdk {

/// A parameter declaration (an sl_param) with chainable value constraints, which the host
/// checks at validate and reports with the config's file:line:col (ABI 1.2):
///   param("n", SL_PARAM_INT, "1", "how many").min(1)
///   param("ratio", SL_PARAM_FLOAT, "0.5", "share").above(0.0).at_most(1.0)
///   required("path", SL_PARAM_STRING, "file to read").non_empty()
///   param("mode", SL_PARAM_STRING, "\"fast\"", "speed").one_of("fast|safe")
/// A plugin whose create relies on a constraint should set min_host_minor 2 (older hosts
/// ignore constraints) or keep the check in its constructor too.
struct Param : sl_param {
  /// Wraps a plain declaration.
  constexpr explicit Param(const sl_param& p) noexcept : sl_param(p) {}
  /// INT / DURATION: at least `v` (FLOAT params use at_least / above / at_most).
  [[nodiscard]] constexpr Param min(int64_t v) const noexcept {
    Param p = *this;
    p.flags |= SL_PARAM_HAS_MIN;
    p.min_int = v;
    return p;
  }
  /// INT / DURATION: at most `v`.
  [[nodiscard]] constexpr Param max(int64_t v) const noexcept {
    Param p = *this;
    p.flags |= SL_PARAM_HAS_MAX;
    p.max_int = v;
    return p;
  }
  /// INT / DURATION: within lo..hi (both included).
  [[nodiscard]] constexpr Param range(int64_t lo, int64_t hi) const noexcept {
    return min(lo).max(hi);
  }
  /// FLOAT: at least `v`.
  [[nodiscard]] constexpr Param at_least(double v) const noexcept {
    Param p = *this;
    p.flags |= SL_PARAM_HAS_MIN;
    p.flags &= ~SL_PARAM_MIN_EXCLUSIVE;
    p.min_float = v;
    return p;
  }
  /// FLOAT: strictly above `v` (e.g. above(0.0): positive).
  [[nodiscard]] constexpr Param above(double v) const noexcept {
    Param p = at_least(v);
    p.flags |= SL_PARAM_MIN_EXCLUSIVE;
    return p;
  }
  /// FLOAT: at most `v`.
  [[nodiscard]] constexpr Param at_most(double v) const noexcept {
    Param p = *this;
    p.flags |= SL_PARAM_HAS_MAX;
    p.max_float = v;
    return p;
  }
  /// STRING / ARRAY / TABLE: not empty.
  [[nodiscard]] constexpr Param non_empty() const noexcept {
    Param p = *this;
    p.flags |= SL_PARAM_NON_EMPTY;
    return p;
  }
  /// STRING: one of the '|'-separated `choices` ("fail|skip"); the string must outlive the
  /// plugin (a literal).
  [[nodiscard]] constexpr Param one_of(const char* choices) const noexcept {
    Param p = *this;
    p.flags |= SL_PARAM_HAS_CHOICES;
    p.choices = choices;
    return p;
  }
};

/// An optional config key: `default_json` is its default as JSON text (e.g. "\"\\n\"",
/// "false", "100"), or nullptr for "absent unless given". For `k_params` arrays.
constexpr Param param(const char* name, int32_t type, const char* default_json,
                      const char* doc) noexcept {
  sl_param p{};
  p.struct_size = sizeof(sl_param);
  p.name = name;
  p.type = type;
  p.default_json = default_json;
  p.doc = doc;
  return Param(p);
}
/// A key the config must give.
constexpr Param required(const char* name, int32_t type, const char* doc) noexcept {
  Param p = param(name, type, nullptr, doc);
  p.flags |= SL_PARAM_REQUIRED;
  return p;
}

/// What a source's poll() says about what comes next.
enum class SourceState : int32_t {
  more = SL_SOURCE_MORE,  ///< More is ready: poll again as soon as downstream has room.
  idle = SL_SOURCE_IDLE,  ///< Nothing now: poll again after Context::wake() or a timer.
  done = SL_SOURCE_DONE,  ///< Exhausted: never polled again.
};

/// Callbacks every node role has. All run on the task's executor thread, one at a time,
/// never after destruction; every default succeeds and does nothing. A node instance is
/// created by the host through node_type<T>() and destroyed with `delete`.
class Node {
 public:
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// Before the first delivery or poll: open files and connections, arm timers.
  virtual Status start(Context /*ctx*/) { return {}; }
  /// Timer `timer_id` (armed with Context::timer_start) fired.
  virtual Status on_timer(Context /*ctx*/, uint64_t /*timer_id*/) { return {}; }
  /// Watch `watch_id` (armed with Context::io_watch) is ready: `ready` holds SL_IO_READ
  /// and/or SL_IO_WRITE. One-shot: call io_watch again to keep waiting.
  virtual Status on_io(Context /*ctx*/, uint64_t /*watch_id*/, uint32_t /*ready*/) { return {}; }
  /// The task is stopping (signal or error): release external resources promptly; emit is
  /// no longer possible. Cannot fail; exceptions are logged.
  virtual void stop(Context /*ctx*/) {}
  /// Stateful types (overriding snapshot and restore makes a type stateful: the SDK sets
  /// SL_NODE_STATEFUL): the state, or a source's position, as a value the host stores in
  /// the checkpoint.
  virtual Result<Value> snapshot(Context /*ctx*/) {
    return unimplemented("snapshot is not implemented");
  }
  /// Stateful types: restore from a snapshot() value (borrowed), after construction and
  /// before start().
  virtual Status restore(Context /*ctx*/, ValueRef /*state*/) {
    return unimplemented("restore is not implemented");
  }

  /// Keyed types (k_flags has SL_NODE_KEYED_STATE, ABI 1.4): snapshot() returns an object
  /// whose "groups" member maps each key group ("3") to that group's state. Key group
  /// `group` came to this task: replace what the node holds for it by `state` (borrowed),
  /// or start it empty when `state` is null.
  virtual Status restore_group(Context /*ctx*/, uint32_t /*group*/, ValueRef /*state*/) {
    return unimplemented("restore_group is not implemented");
  }
  /// Keyed types: key group `group` moved away; forget it.
  virtual Status drop_group(Context /*ctx*/, uint32_t /*group*/) {
    return unimplemented("drop_group is not implemented");
  }

  /// Since 1.5 (docs/EVENT_TIME.md): the node's input watermark rose to `watermark_ns`
  /// (SL_WATERMARK_END once every input ended). Wired only when T overrides it: a type that
  /// does emits what the watermark completes and then its own with
  /// Context::emit_watermark; the host forwards the input watermark of every other type.
  virtual Status on_watermark(Context /*ctx*/, int64_t /*watermark_ns*/) { return {}; }

  // Checkpoint protocol (ABI 1.1, docs/CHECKPOINTING.md). Each is wired into the
  // sl_node_type only when T overrides it, so the host can tell who takes part.

  /// Sources and sinks: checkpoint `epoch` is stored; commit what it covers (offsets,
  /// transactions). Sinks are called before sources.
  virtual Status checkpoint_commit(Context /*ctx*/, uint64_t /*epoch*/) { return {}; }
  /// Epoch `epoch` will not be stored; what was prepared for it must be covered by the next
  /// commit (return a failure if that is impossible: the task then fails).
  virtual Status checkpoint_abort(Context /*ctx*/, uint64_t /*epoch*/) { return {}; }
  /// On restart from a checkpoint whose commit was never confirmed: did this node's
  /// commit of `epoch` happen? `state` is the node's snapshot in that checkpoint. Called
  /// after construction, before restore().
  virtual Result<bool> checkpoint_recover(Context /*ctx*/, uint64_t /*epoch*/, ValueRef /*state*/) {
    return true;
  }

 protected:
  Node() = default;
};

/// Base of source node types: implement poll().
class Source : public Node {
 public:
  static constexpr int32_t k_role = SL_ROLE_SOURCE;  ///< sl_node_type.role.
  static constexpr int32_t k_min_inputs = 0;         ///< Sources have no inputs.
  static constexpr int32_t k_max_inputs = 0;         ///< See k_min_inputs.

  /// Emit up to about `budget` messages, then say what comes next. Called only while
  /// downstream has room.
  virtual Result<SourceState> poll(Context ctx, uint32_t budget) = 0;
  /// The task drains at end of input: emit what must still go out.
  virtual Status finish(Context /*ctx*/) { return {}; }
};

namespace detail {

/// Shared base of Operator and Sink: implement process() for whole batches or
/// process_one() per message (the SDK loops without a virtual call per message when
/// process() is not overridden; do not overload the name `process`).
class Consumer : public Node {
 public:
  static constexpr int32_t k_min_inputs = 1;  ///< Default input count: exactly one.
  static constexpr int32_t k_max_inputs = 1;  ///< Override with SL_INPUTS_UNLIMITED etc.

  /// A batch arrived on input `input` (0-based, in config order); borrowed for the call.
  /// The default calls process_one() for each message, stopping at the first failure.
  virtual Status process(Context ctx, uint32_t input, Batch batch) {
    for (const sl_message& m : batch) {
      SLUICE_SDK_RETURN_IF_ERROR(process_one(ctx, input, m));
    }
    return {};
  }
  /// One message of a batch (borrowed: retain what you keep, e.g. Value::borrow).
  virtual Status process_one(Context /*ctx*/, uint32_t /*input*/, const sl_message& /*message*/) {
    return unimplemented("the node type overrides neither process nor process_one");
  }
  /// Input `input` ended (its producer is exhausted).
  virtual Status on_input_end(Context /*ctx*/, uint32_t /*input*/) { return {}; }
  /// All inputs ended: emit what must still go out; sinks make their output durable and
  /// report write failures here.
  virtual Status finish(Context /*ctx*/) { return {}; }
};

}  // namespace detail

/// Base of operator node types (they emit downstream).
///
/// Operator chaining (sl_node_type.map_values / select_values): an operator whose process()
/// emits exactly one message per input message, carrying its key, headers and event time
/// (a map), may also declare
///   Status map_values(Context ctx, std::span<const sl_value> in, std::span<Value> out);
/// writing to out[i] what process() would emit for in[i]; one whose process() passes a
/// subset of its messages unchanged (a filter) may declare
///   Status select_values(Context ctx, std::span<const sl_value> in, std::span<uint8_t> keep);
/// and one whose process() replaces only each message's key, computed from its value (ABI
/// 1.3: key_by), may declare
///   Status map_keys(Context ctx, std::span<const sl_value> in, std::span<Value> out);
/// writing to out[i] the key process() would give the message whose value is in[i].
/// The host then runs chains of such operators over bare values. They must do what
/// process() does, with the same state changes and errors.
class Operator : public detail::Consumer {
 public:
  static constexpr int32_t k_role = SL_ROLE_OPERATOR;  ///< sl_node_type.role.
};

/// Base of sink node types (they write outside the graph).
class Sink : public detail::Consumer {
 public:
  static constexpr int32_t k_role = SL_ROLE_SINK;  ///< sl_node_type.role.

  /// Checkpoints (wired only when overridden; a sink without it is assumed durable when
  /// process() returns): make everything received so far durable for `epoch`. Return true
  /// when it is durable now, false to answer later with Context::checkpoint_ready(epoch)
  /// on the task thread (e.g. from a posted delivery report), or a failure.
  virtual Result<bool> checkpoint_prepare(Context /*ctx*/, uint64_t /*epoch*/) { return true; }
};

namespace detail {

template <class T>
inline constexpr bool k_always_false = false;

/// T::k_params as plain sl_params (an array of Param or of sl_param), in static storage.
template <class T>
inline constexpr auto k_raw_params = [] {
  std::array<sl_param, T::k_params.size()> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = T::k_params[i];
  return out;
}();

/// The declared parameters of a node type or function: T::k_params, or none.
template <class T>
constexpr const sl_param* params_of() noexcept {
  if constexpr (requires { T::k_params; }) {
    return T::k_params.size() == 0 ? nullptr : k_raw_params<T>.data();
  } else {
    return nullptr;
  }
}
template <class T>
constexpr uint32_t param_count_of() noexcept {
  if constexpr (requires { T::k_params; }) {
    return static_cast<uint32_t>(T::k_params.size());
  } else {
    return 0;
  }
}
/// The side outputs of a node type (Since 1.5): T::k_side_outputs (an array of names, e.g.
/// `static constexpr std::array k_side_outputs{"late"}`), or none.
template <class T>
constexpr const char* const* side_outputs_of() noexcept {
  if constexpr (requires { T::k_side_outputs; }) {
    return T::k_side_outputs.size() == 0 ? nullptr : T::k_side_outputs.data();
  } else {
    return nullptr;
  }
}
template <class T>
constexpr uint32_t side_output_count_of() noexcept {
  if constexpr (requires { T::k_side_outputs; }) {
    return static_cast<uint32_t>(T::k_side_outputs.size());
  } else {
    return 0;
  }
}
template <class T>
constexpr const char* doc_of() noexcept {
  if constexpr (requires { T::k_doc; }) {
    return T::k_doc;
  } else {
    return "";
  }
}

/// The C callbacks of node type T: each one guards the plugin edge.
template <class T>
struct NodeTrampolines {
  static T* self_of(void* self) noexcept { return static_cast<T*>(self); }

  static T* construct(const sl_node_init& init) {
    if constexpr (std::is_constructible_v<T, const sl_node_init&, const Config&>) {
      return new T(init, Config(init));
    } else if constexpr (std::is_constructible_v<T, const sl_node_init&>) {
      return new T(init);
    } else if constexpr (std::is_constructible_v<T, Context, const Config&>) {
      return new T(Context(init.ctx), Config(init));
    } else if constexpr (std::is_default_constructible_v<T>) {
      return new T();
    } else {
      static_assert(k_always_false<T>,
                    "a node type needs a constructor (Context, const Config&), "
                    "(const sl_node_init&, const Config&), (const sl_node_init&) or ()");
    }
  }

  static sl_status create(const sl_node_init* init, void** out_self) noexcept {
    *out_self = nullptr;
    return guard(init->ctx, [&]() -> Status {
      *out_self = construct(*init);
      return {};
    });
  }
  static void destroy(void* self) noexcept { delete self_of(self); }
  static sl_status validate(const sl_validate_init* init) noexcept {
    return run_validate(init, [&] { T::validate(Config(*init)); });
  }
  static sl_status start(void* self, sl_context* ctx) noexcept {
    return guard(ctx, [&] { return self_of(self)->start(Context(ctx)); });
  }
  static sl_status poll(void* self, sl_context* ctx, uint32_t budget, int32_t* out_state) noexcept {
    return guard(ctx, [&]() -> Status {
      SLUICE_SDK_ASSIGN_OR_RETURN(SourceState state, self_of(self)->poll(Context(ctx), budget));
      *out_state = static_cast<int32_t>(state);
      return {};
    });
  }
  static sl_status process(void* self, sl_context* ctx, uint32_t input,
                           const sl_batch* batch) noexcept {
    return guard(ctx, [&]() -> Status {
      if (batch->message_size < sizeof(sl_message)) {  // frozen layout: never smaller in ABI 1
        return internal_error("batch stride " + std::to_string(batch->message_size) +
                              " is smaller than sl_message");
      }
      // Process through T when it overrides process(); otherwise loop here and call
      // T::process_one directly, without a virtual call per message.
      if constexpr (std::is_same_v<decltype(&T::process), decltype(&Consumer::process)>) {
        T* node = self_of(self);
        for (const sl_message& m : Batch(*batch)) {
          SLUICE_SDK_RETURN_IF_ERROR(node->T::process_one(Context(ctx), input, m));
        }
        return {};
      } else {
        return self_of(self)->process(Context(ctx), input, Batch(*batch));
      }
    });
  }
  static sl_status map_values(void* self, sl_context* ctx, const sl_value* in, size_t count,
                              sl_value* out) noexcept {
    // The host hands null slots (the ABI), and Value has sl_value's layout: T writes owned
    // Values, and whatever it made is released if it fails part way.
    auto* values = std::launder(reinterpret_cast<Value*>(out));
    const sl_status st = guard(ctx, [&] {
      return self_of(self)->map_values(Context(ctx), std::span(in, count),
                                       std::span(values, count));
    });
    if (st != SL_OK) {
      for (size_t i = 0; i < count; ++i) values[i] = Value();
    }
    return st;
  }
  static sl_status map_keys(void* self, sl_context* ctx, const sl_value* in, size_t count,
                            sl_value* out) noexcept {
    // As map_values: null slots in, owned Values out, nothing owned on failure.
    auto* keys = std::launder(reinterpret_cast<Value*>(out));
    const sl_status st = guard(ctx, [&] {
      return self_of(self)->map_keys(Context(ctx), std::span(in, count), std::span(keys, count));
    });
    if (st != SL_OK) {
      for (size_t i = 0; i < count; ++i) keys[i] = Value();
    }
    return st;
  }
  static sl_status select_values(void* self, sl_context* ctx, const sl_value* in, size_t count,
                                 uint8_t* keep) noexcept {
    return guard(ctx, [&] {
      return self_of(self)->select_values(Context(ctx), std::span(in, count),
                                          std::span(keep, count));
    });
  }
  static sl_status on_timer(void* self, sl_context* ctx, uint64_t timer_id) noexcept {
    return guard(ctx, [&] { return self_of(self)->on_timer(Context(ctx), timer_id); });
  }
  static sl_status on_io(void* self, sl_context* ctx, uint64_t watch_id, uint32_t ready) noexcept {
    return guard(ctx, [&] { return self_of(self)->on_io(Context(ctx), watch_id, ready); });
  }
  static sl_status on_input_end(void* self, sl_context* ctx, uint32_t input) noexcept {
    return guard(ctx, [&] { return self_of(self)->on_input_end(Context(ctx), input); });
  }
  static sl_status finish(void* self, sl_context* ctx) noexcept {
    return guard(ctx, [&] { return self_of(self)->finish(Context(ctx)); });
  }
  static void stop(void* self, sl_context* ctx) noexcept {
    guard_void(ctx, "stop", [&] { self_of(self)->stop(Context(ctx)); });
  }
  static sl_status snapshot(void* self, sl_context* ctx, sl_value* out_state) noexcept {
    *out_state = sl_null();
    return guard(ctx, [&]() -> Status {
      SLUICE_SDK_ASSIGN_OR_RETURN(Value state, self_of(self)->snapshot(Context(ctx)));
      *out_state = state.release();
      return {};
    });
  }
  static sl_status restore(void* self, sl_context* ctx, sl_value state) noexcept {
    return guard(ctx, [&] { return self_of(self)->restore(Context(ctx), ValueRef(state)); });
  }
  static sl_status restore_group(void* self, sl_context* ctx, uint32_t group,
                                 sl_value state) noexcept {
    return guard(
        ctx, [&] { return self_of(self)->restore_group(Context(ctx), group, ValueRef(state)); });
  }
  static sl_status drop_group(void* self, sl_context* ctx, uint32_t group) noexcept {
    return guard(ctx, [&] { return self_of(self)->drop_group(Context(ctx), group); });
  }
  static sl_status on_watermark(void* self, sl_context* ctx, int64_t watermark_ns) noexcept {
    return guard(ctx, [&] { return self_of(self)->on_watermark(Context(ctx), watermark_ns); });
  }
  static sl_status checkpoint_prepare(void* self, sl_context* ctx, uint64_t epoch) noexcept {
    return guard(ctx, [&]() -> Status {
      SLUICE_SDK_ASSIGN_OR_RETURN(bool durable,
                                  self_of(self)->checkpoint_prepare(Context(ctx), epoch));
      if (durable) Context(ctx).checkpoint_ready(epoch);
      return {};
    });
  }
  static sl_status checkpoint_commit(void* self, sl_context* ctx, uint64_t epoch) noexcept {
    return guard(ctx, [&] { return self_of(self)->checkpoint_commit(Context(ctx), epoch); });
  }
  static sl_status checkpoint_abort(void* self, sl_context* ctx, uint64_t epoch) noexcept {
    return guard(ctx, [&] { return self_of(self)->checkpoint_abort(Context(ctx), epoch); });
  }
  static sl_status checkpoint_recover(void* self, sl_context* ctx, uint64_t epoch, sl_value state,
                                      int32_t* out_committed) noexcept {
    *out_committed = 1;
    return guard(ctx, [&]() -> Status {
      SLUICE_SDK_ASSIGN_OR_RETURN(
          bool committed, self_of(self)->checkpoint_recover(Context(ctx), epoch, ValueRef(state)));
      *out_committed = committed ? 1 : 0;
      return {};
    });
  }
};

/// True when T declares its own `name` method instead of inheriting Base's (compares the
/// member-pointer types: an inherited method has Base's class in its type).
#define SLUICE_SDK_OVERRIDES(T, Base, name) \
  (!std::is_same_v<decltype(&T::name), decltype(&Base::name)>)

/// Flags default: T::k_flags when declared, else 0.
template <class T>
constexpr uint32_t flags_of() noexcept {
  if constexpr (requires { T::k_flags; }) {
    return static_cast<uint32_t>(T::k_flags);
  } else {
    return 0;
  }
}

/// The oldest host minor that honours a parameter list: 2 when any param declares a
/// constraint (an older host would not check it), else 0.
template <class T>
constexpr uint32_t params_min_host_minor() noexcept {
  if constexpr (requires { T::k_params; }) {
    for (const auto& p : T::k_params) {
      if ((p.flags & ~static_cast<uint32_t>(SL_PARAM_REQUIRED)) != 0) return 2;
    }
  }
  return 0;
}

/// What node type T declares, read from the class (make_node_type wires the callbacks from
/// it, and the plugin's min_host_minor is derived from it: reading the function pointers
/// of the finished sl_node_type is not a constant expression under -fsanitize).
template <class T>
struct NodeFeatures {
  static constexpr bool validate = requires(const Config& c) { T::validate(c); };
  static constexpr bool map_values =
      requires(T & n, Context c, std::span<const sl_value> in, std::span<Value> out) {
    { n.map_values(c, in, out) } -> std::same_as<Status>;
  };
  static constexpr bool select_values =
      requires(T & n, Context c, std::span<const sl_value> in, std::span<uint8_t> k) {
    { n.select_values(c, in, k) } -> std::same_as<Status>;
  };
  static constexpr bool map_keys =
      requires(T & n, Context c, std::span<const sl_value> in, std::span<Value> out) {
    { n.map_keys(c, in, out) } -> std::same_as<Status>;
  };
  // Stateful is what the overrides say, whatever k_flags says: a type that overrides
  // snapshot and restore but forgot the flag lost its state at every restart before.
  static constexpr bool stateful = SLUICE_SDK_OVERRIDES(T, Node, snapshot);
  static constexpr bool keyed = (flags_of<T>() & SL_NODE_KEYED_STATE) != 0;
  static constexpr bool on_watermark = SLUICE_SDK_OVERRIDES(T, Node, on_watermark);
  static constexpr bool prepare = [] {
    if constexpr (T::k_role == SL_ROLE_SINK) {
      return SLUICE_SDK_OVERRIDES(T, Sink, checkpoint_prepare);
    } else {
      return false;
    }
  }();
  static constexpr bool commit = SLUICE_SDK_OVERRIDES(T, Node, checkpoint_commit);
  static constexpr bool abort = SLUICE_SDK_OVERRIDES(T, Node, checkpoint_abort);
  static constexpr bool recover = SLUICE_SDK_OVERRIDES(T, Node, checkpoint_recover);

  /// The oldest host minor that serves all of it (an older host would ignore a callback,
  /// flag or constraint and run the node wrongly): checkpoint callbacks and chaining 1.1,
  /// constraints and validate 1.2, map_keys 1.3, keyed state 1.4, watermarks and side
  /// outputs 1.5. Calls made through Context check the host themselves and do not count.
  static constexpr uint32_t min_host_minor = [] {
    uint32_t minor = params_min_host_minor<T>();
    auto need = [&minor](bool used, uint32_t since) {
      if (used && since > minor) minor = since;
    };
    need(prepare || commit || abort || recover || map_values || select_values, 1);
    need(validate, 2);
    need(map_keys, 3);
    need(keyed, 4);
    need(on_watermark || side_output_count_of<T>() > 0 || (flags_of<T>() & SL_NODE_WATERMARKS) != 0,
         5);
    return minor;
  }();
};

template <class T>
constexpr sl_node_type make_node_type() noexcept {
  static_assert(std::is_base_of_v<Node, T>, "a node type derives from Source, Operator or Sink");
  static_assert(
      requires { T::k_name; }, "a node type declares `static constexpr const char* k_name`");
  using Tr = NodeTrampolines<T>;
  using Has = NodeFeatures<T>;
  static_assert(Has::stateful == SLUICE_SDK_OVERRIDES(T, Node, restore),
                "a stateful node type overrides both snapshot and restore");
  static_assert(Has::stateful || (flags_of<T>() & SL_NODE_STATEFUL) == 0,
                "k_flags has SL_NODE_STATEFUL: override snapshot and restore");
  constexpr bool stateful = Has::stateful;
  sl_node_type t{};
  t.struct_size = sizeof(sl_node_type);
  t.role = T::k_role;
  t.name = T::k_name;
  t.doc = doc_of<T>();
  t.params = params_of<T>();
  t.param_count = param_count_of<T>();
  t.flags = flags_of<T>() | (stateful ? SL_NODE_STATEFUL : 0u);
  t.min_inputs = T::k_min_inputs;
  t.max_inputs = T::k_max_inputs;
  t.create = &Tr::create;
  t.destroy = &Tr::destroy;
  if constexpr (Has::validate) t.validate = &Tr::validate;
  t.start = &Tr::start;
  if constexpr (T::k_role == SL_ROLE_SOURCE) {
    t.poll = &Tr::poll;
  } else {
    t.process = &Tr::process;
    t.on_input_end = &Tr::on_input_end;
  }
  if constexpr (Has::map_values) {
    static_assert(T::k_role == SL_ROLE_OPERATOR && T::k_max_inputs == 1,
                  "map_values is for single-input operators");
    t.map_values = &Tr::map_values;
  }
  if constexpr (Has::select_values) {
    static_assert(T::k_role == SL_ROLE_OPERATOR && T::k_max_inputs == 1,
                  "select_values is for single-input operators");
    t.select_values = &Tr::select_values;
  }
  if constexpr (Has::map_keys) {
    static_assert(T::k_role == SL_ROLE_OPERATOR && T::k_max_inputs == 1,
                  "map_keys is for single-input operators");
    t.map_keys = &Tr::map_keys;
  }
  t.on_timer = &Tr::on_timer;
  t.on_io = &Tr::on_io;
  t.finish = &Tr::finish;
  t.stop = &Tr::stop;
  if constexpr (stateful) {
    t.snapshot = &Tr::snapshot;
    t.restore = &Tr::restore;
  }
  if constexpr (Has::keyed) {
    static_assert(stateful, "SL_NODE_KEYED_STATE goes with SL_NODE_STATEFUL");
    static_assert(
        SLUICE_SDK_OVERRIDES(T, Node, restore_group) && SLUICE_SDK_OVERRIDES(T, Node, drop_group),
        "a keyed node type (SL_NODE_KEYED_STATE) overrides restore_group and drop_group");
    t.restore_group = &Tr::restore_group;
    t.drop_group = &Tr::drop_group;
  }
  if constexpr (Has::on_watermark) {
    static_assert(T::k_role != SL_ROLE_SOURCE, "sources have no input watermark");
    t.on_watermark = &Tr::on_watermark;
  }
  t.side_outputs = side_outputs_of<T>();
  t.side_output_count = side_output_count_of<T>();
  if constexpr (Has::prepare) t.checkpoint_prepare = &Tr::checkpoint_prepare;
  if constexpr (Has::commit) t.checkpoint_commit = &Tr::checkpoint_commit;
  if constexpr (Has::abort) t.checkpoint_abort = &Tr::checkpoint_abort;
  if constexpr (Has::recover) t.checkpoint_recover = &Tr::checkpoint_recover;
  return t;
}

/// The descriptor of node type T, in static storage for the life of the plugin.
template <class T>
inline constexpr sl_node_type k_node_type = make_node_type<T>();

}  // namespace detail

/// The sl_node_type of class T, whose trampolines catch every failure at the plugin edge.
///
/// T derives from Source, Operator or Sink (best marked `final`) and declares beside its code:
///  - `static constexpr const char* k_name` (the `type` in config) and `k_doc`;
///  - optionally `static constexpr std::array k_params{param(...), required(...)}`;
///  - optionally `static constexpr uint32_t k_flags` (SL_NODE_KEYED_STATE,
///    SL_NODE_WATERMARKS; SL_NODE_STATEFUL is set for you when T overrides snapshot and
///    restore, and refused at compile time when it does not), `k_min_inputs` /
///    `k_max_inputs` (defaults: 1/1; sources 0/0);
///  - a constructor `(Context, const Config&)`, `(const sl_node_init&)` or `()`; a
///    throwing constructor (e.g. Config::fail) makes create fail with that status. A node
///    that needs more of the sl_node_init than the Context (its task_index, say) and reads
///    its config in member initialisers takes `(const sl_node_init&, const Config&)`: the
///    Config is Config(init), alive for the constructor call. Since: SDK 1.2
///    (header-only, any host);
///  - optionally `static void validate(const Config& cfg)` (ABI 1.2): the checks of the
///    constructor that the k_params constraints cannot express (cross-key rules, input
///    references, text that must parse), throwing with Config::fail. `sluiced validate`
///    runs it and reports the key with its file:line:col; it must have no side effects
///    (no files, sockets, threads). Call it from the constructor too, so the two agree.
template <class T>
constexpr const sl_node_type* node_type() noexcept {
  return &detail::k_node_type<T>;
}

}  // namespace sluice::sdk

#endif  // SLUICE_DETAIL_NODE_HPP
