// sluice/detail/context.hpp — Context (the host services for one node), Function (a bound
// named function), Batch (a view of incoming messages) and Config (typed config getters).
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_CONTEXT_HPP
#define SLUICE_DETAIL_CONTEXT_HPP

#include <sluice/detail/host.hpp>
#include <sluice/detail/status.hpp>
#include <sluice/detail/value.hpp>
#include <sluice/sluice.h>

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace sluice::sdk {

class Batch;

/// A named function bound to its arguments (host function_bind), owned: released with
/// function_release on destruction. Move-only. Calls run on the binding node's executor
/// thread only; a failed call's reason is already set on the binding node's context, so
/// failures come back as Status::reported.
class Function {
 public:
  /// No function (operator bool is false).
  Function() noexcept = default;
  /// Takes ownership of a binding made by host function_bind.
  explicit Function(sl_bound_function* fn) noexcept : fn_(fn) {}
  /// Move.
  Function(Function&& other) noexcept : fn_(std::exchange(other.fn_, nullptr)) {}
  /// Move-assign (releases the binding held before).
  Function& operator=(Function&& other) noexcept {
    std::swap(fn_, other.fn_);
    return *this;
  }
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;
  /// Releases the binding.
  ~Function() {
    if (fn_ != nullptr) host().function_release(fn_);
  }

  /// True when a function is bound.
  explicit operator bool() const noexcept { return fn_ != nullptr; }
  /// SL_FUNCTION_MAP, SL_FUNCTION_PREDICATE or SL_FUNCTION_REDUCER.
  [[nodiscard]] int32_t kind() const noexcept { return host().function_kind(fn_); }
  /// The C binding, still owned by this object.
  [[nodiscard]] sl_bound_function* raw() const noexcept { return fn_; }

  /// f(argv...): the result is owned by the returned Value.
  [[nodiscard]] Result<Value> call(std::span<const sl_value> argv) const {
    sl_value out = sl_null();
    sl_status st = host().function_call(fn_, argv.data(), static_cast<uint32_t>(argv.size()), &out);
    if (st != SL_OK) return Status::reported(st);
    return Value::adopt(out);
  }
  /// f(args...) with Values or ValueRefs, e.g. `fn.call(state, element)`.
  template <class... Args>
  requires(std::is_convertible_v<const Args&, ValueRef>&&...)
      [[nodiscard]] Result<Value> call(const Args&... args) const {
    const std::array<sl_value, sizeof...(Args)> argv{ValueRef(args).raw()...};
    return call(std::span<const sl_value>(argv));
  }
  /// out[i] = f(in[i]) for the one-argument form, through the function's batch form when it
  /// has one. Precondition: out.size() >= in.size(). What `out` held is released first; on
  /// failure every out[i] is null.
  Status call_batch(std::span<const sl_value> in, std::span<Value> out) const {
    for (size_t i = 0; i < in.size(); ++i) out[i] = Value();
    // Value has sl_value's layout, so the host writes owned values straight into `out`.
    auto* slots = reinterpret_cast<sl_value*>(out.data());
    sl_status st = host().function_call_batch(fn_, in.data(), in.size(), slots);
    if (st == SL_OK) return {};
    for (size_t i = 0; i < in.size(); ++i) slots[i] = sl_null();  // nothing is owned
    return Status::reported(st);
  }

 private:
  sl_bound_function* fn_ = nullptr;
};

/// The host's services for one node (a copyable handle over sl_context*, valid from the
/// node's create until its destroy). Unless a method says thread-safe, call it only on the
/// node's executor thread, inside a callback.
class Context {
 public:
  /// Wraps a context the host handed to a callback.
  explicit Context(sl_context* ctx) noexcept : ctx_(ctx) {}
  /// The C context.
  [[nodiscard]] sl_context* raw() const noexcept { return ctx_; }
  /// The node's id in the config, valid as long as the context.
  [[nodiscard]] std::string_view node_id() const noexcept {
    sl_str s = host().node_id(ctx_);
    return {s.data, s.size};
  }

  /// Delivers `messages` downstream before returning (borrowed: the caller keeps its
  /// references). A failure (CANCELLED while the task stops, or a consumer's error) is
  /// already reported: return it unchanged.
  Status emit(std::span<const sl_message> messages) const noexcept {
    return wrap(host().emit(ctx_, messages.data(), messages.size()));
  }
  /// Delivers one message; see emit(span).
  Status emit(const sl_message& message) const noexcept { return emit({&message, 1}); }
  /// Delivers one bare value (no key, headers or timestamp); see emit(span).
  Status emit(ValueRef value) const noexcept {
    const sl_value v = value.raw();
    return wrap(host().emit_values(ctx_, &v, 1));
  }
  /// Delivers bare values; see emit(span).
  Status emit_values(std::span<const Value> values) const noexcept {
    return wrap(host().emit_values(ctx_, raw_array(values), values.size()));
  }
  /// See emit_values(std::span<const Value>).
  Status emit_values(std::span<const sl_value> values) const noexcept {
    return wrap(host().emit_values(ctx_, values.data(), values.size()));
  }

  /// The task clock, in ns since the Unix epoch (virtual under `sluiced test`).
  [[nodiscard]] int64_t now_ns() const noexcept { return host().now_ns(ctx_); }
  /// Arms (or moves) timer `id` to fire once after `delay`; on_timer(ctx, id) follows.
  Status timer_start(uint64_t id, std::chrono::nanoseconds delay) const {
    sl_status st = host().timer_start(ctx_, id, delay.count());
    if (st == SL_OK) return {};
    return {st, "cannot arm timer " + std::to_string(id)};
  }
  /// Disarms timer `id` (no-op when not armed).
  void timer_cancel(uint64_t id) const noexcept { host().timer_cancel(ctx_, id); }

  /// Runs fn(ctx, arg) on the node's executor soon. Thread-safe. CANCELLED (fn will not
  /// run, the caller still owns `arg`) once the task is stopping.
  Status post(sl_task_fn fn, void* arg) const noexcept { return wrap(host().post(ctx_, fn, arg)); }
  /// Runs `fn(Context)` on the node's executor soon; `fn` is moved to the heap and freed
  /// after it ran, or when the host drops the post unrun (the task failed or stopped first),
  /// or at once when the task is stopping (CANCELLED). Thread-safe. An exception from `fn`,
  /// or a failed Status it returns, is logged (a posted task cannot fail the node; post the
  /// outcome and fail from the next callback instead). On a host before ABI 1.6, which has
  /// no post_owned, a post accepted but never run leaks `fn`.
  template <class F>
  Status post(F&& fn) const {
    using Fn = std::decay_t<F>;
    auto owned = std::make_unique<Fn>(std::forward<F>(fn));
    const sl_host_api& h = host();
    Status st;
    if (SL_HAS_FIELD(&h, sl_host_api, post_owned) && h.post_owned != nullptr) {
      st = wrap(h.post_owned(ctx_, &call_posted<Fn>, owned.get(), &delete_posted<Fn>));
    } else {
      st = post(&run_posted<Fn>, owned.get());
    }
    if (st.is_ok()) static_cast<void>(owned.release());  // the host or run_posted frees it
    return st;
  }
  /// Asks the host to poll this idle source again. Thread-safe.
  void wake() const noexcept { host().wake(ctx_); }
  /// Sinks and buffering operators: `true` pauses the task's sources until every node that
  /// set it says `false` again.
  void set_backpressure(bool full) const noexcept { host().set_backpressure(ctx_, full ? 1 : 0); }
  /// Back-pressure on one input only (a zip whose buffer for `input` is full): the host
  /// pauses the sources that feed only that input. On an ABI 1.0 host, which lacks the
  /// call, every source is paused instead (set_backpressure).
  void set_input_backpressure(uint32_t input, bool full) const noexcept {
    const sl_host_api& h = host();
    if (SL_HAS_FIELD(&h, sl_host_api, set_input_backpressure) &&
        h.set_input_backpressure != nullptr) {
      h.set_input_backpressure(ctx_, input, full ? 1 : 0);
    } else {
      h.set_backpressure(ctx_, full ? 1 : 0);
    }
  }
  /// Waits for `fd` (non-blocking, still owned by the node) to be ready for `events`
  /// (SL_IO_READ, SL_IO_WRITE or both) on the task's own event loop; the node's
  /// on_io(ctx, id, ready) then runs once (call io_watch again to keep waiting; re-arming
  /// an armed `id` replaces it). io_unwatch before closing the fd. UNIMPLEMENTED on a host
  /// older than ABI 1.1 (set min_host_minor = 1 to be refused by such hosts instead).
  Status io_watch(int fd, uint32_t events, uint64_t id) const {
    const sl_host_api& h = host();
    if (!SL_HAS_FIELD(&h, sl_host_api, io_watch) || h.io_watch == nullptr) {
      return unimplemented("the host has no io_watch (needs ABI 1.1)");
    }
    return wrap(h.io_watch(ctx_, fd, events, id));
  }
  /// Stops waiting for watch `id` (no-op when not armed, or on a host without io_watch).
  void io_unwatch(uint64_t id) const noexcept {
    const sl_host_api& h = host();
    if (SL_HAS_FIELD(&h, sl_host_api, io_unwatch) && h.io_unwatch != nullptr) {
      h.io_unwatch(ctx_, id);
    }
  }

  /// Sets gauge `sluice_node_<name>` of this node on the host's /metrics, for the series
  /// `labels` ("" or comma-separated key=value pairs, e.g. "topic=t,partition=3"; values
  /// cannot hold a comma). NaN removes the series. Task thread only; for changes per poll or
  /// per second, not per element. A no-op on a host without the call (before ABI 1.1 gauges).
  void gauge_set(std::string_view name, std::string_view labels, double value) const noexcept {
    const sl_host_api& h = host();
    if (SL_HAS_FIELD(&h, sl_host_api, gauge_set) && h.gauge_set != nullptr) {
      h.gauge_set(ctx_, name.data(), name.size(), labels.data(), labels.size(), value);
    }
  }
  /// Removes the series `labels` of gauge `name` (gauge_set with NaN).
  void gauge_remove(std::string_view name, std::string_view labels = {}) const noexcept {
    gauge_set(name, labels, std::numeric_limits<double>::quiet_NaN());
  }

  /// Logs `msg` under the node at `level` (SL_LOG_*). Thread-safe.
  void log(int32_t level, std::string_view msg) const noexcept {
    host().log(ctx_, level, msg.data(), msg.size());
  }
  /// log(SL_LOG_DEBUG, msg).
  void log_debug(std::string_view msg) const noexcept { log(SL_LOG_DEBUG, msg); }
  /// log(SL_LOG_INFO, msg).
  void log_info(std::string_view msg) const noexcept { log(SL_LOG_INFO, msg); }
  /// log(SL_LOG_WARN, msg).
  void log_warn(std::string_view msg) const noexcept { log(SL_LOG_WARN, msg); }
  /// log(SL_LOG_ERROR, msg).
  void log_error(std::string_view msg) const noexcept { log(SL_LOG_ERROR, msg); }
  /// Answers checkpoint_prepare(epoch) later (a sink whose prepare returned `false`): OK
  /// when everything received before that prepare is durable, else the failure (its message
  /// is set on this context first). Task thread only. A host older than ABI 1.1 never calls
  /// prepare, so there is nothing to answer: the call is then a no-op.
  void checkpoint_ready(uint64_t epoch, const Status& status = {}) const noexcept {
    const sl_host_api& h = host();
    if (!SL_HAS_FIELD(&h, sl_host_api, checkpoint_ready) || h.checkpoint_ready == nullptr) {
      return;
    }
    if (!status.is_ok()) {
      const std::string_view msg = status.message();
      h.set_error(ctx_, msg.data(), msg.size());
    }
    h.checkpoint_ready(ctx_, epoch, status.code());
  }
  /// Since 1.4 (docs/SCALING.md): a partitioned source says this task now owns key groups
  /// `groups` (1 + each newly assigned partition); before it returns, every keyed node of
  /// the task (the caller included) has each group's state from the newest checkpoint that
  /// holds it (restore_group). A failure (the store could not be read) is already reported:
  /// return it. Task thread only. On a host before 1.4: OK, and nothing moves.
  Status key_groups_assigned(std::span<const uint32_t> groups) const noexcept {
    const sl_host_api& h = host();
    if (!SL_HAS_FIELD(&h, sl_host_api, key_groups_assigned) || h.key_groups_assigned == nullptr) {
      return {};
    }
    return wrap(h.key_groups_assigned(ctx_, groups.data(), groups.size()));
  }
  /// Since 1.4: this task no longer owns key groups `groups` (partitions revoked or lost):
  /// every keyed node drops them. Task thread only. On a host before 1.4: OK, no effect.
  Status key_groups_revoked(std::span<const uint32_t> groups) const noexcept {
    const sl_host_api& h = host();
    if (!SL_HAS_FIELD(&h, sl_host_api, key_groups_revoked) || h.key_groups_revoked == nullptr) {
      return {};
    }
    return wrap(h.key_groups_revoked(ctx_, groups.data(), groups.size()));
  }
  /// Since 1.5 (docs/EVENT_TIME.md): advances the node's output watermark (ns since the
  /// epoch): what it emits from now on has a later event time, or is late. Lower or equal
  /// values are ignored. Delivered downstream before it returns; a failure is already
  /// reported. Executor thread only. On a host before 1.5: OK, and nothing happens.
  Status emit_watermark(int64_t watermark_ns) const noexcept {
    const sl_host_api& h = host();
    if (!SL_HAS_FIELD(&h, sl_host_api, emit_watermark) || h.emit_watermark == nullptr) {
      return {};
    }
    return wrap(h.emit_watermark(ctx_, watermark_ns));
  }
  /// Since 1.5: delivers `messages` on side output `output` (an index into the type's
  /// k_side_outputs), which other nodes read as "ID.<name>". As emit otherwise. On a host
  /// before 1.5: UNIMPLEMENTED (such a host knows no side outputs: no node can read one).
  Status emit_side(uint32_t output, std::span<const sl_message> messages) const noexcept {
    const sl_host_api& h = host();
    if (!SL_HAS_FIELD(&h, sl_host_api, emit_side) || h.emit_side == nullptr) {
      return unimplemented("the host has no side outputs (ABI before 1.5)");
    }
    return wrap(h.emit_side(ctx_, output, messages.data(), messages.size()));
  }
  /// Sets the error message the current callback is about to return a failure for. Rarely
  /// needed: returning a Status with a message does it at the plugin edge.
  void set_error(std::string_view msg) const noexcept {
    host().set_error(ctx_, msg.data(), msg.size());
  }

  /// Binds a named function: `spec` is the normalised `{ name, args }` value of a FUNCTION
  /// config key (Config::get_value) or a bare name string. Failures (unknown name, bad args)
  /// are reported on this context.
  [[nodiscard]] Result<Function> bind_function(ValueRef spec) const {
    sl_bound_function* fn = nullptr;
    sl_status st = host().function_bind(ctx_, spec.raw(), &fn);
    if (st != SL_OK) return Status::reported(st);
    return Function(fn);
  }
  /// Parses JSON text; a failure is reported on this context.
  [[nodiscard]] Result<Value> parse_json(std::string_view text) const {
    return sdk::parse_json(text, ctx_);
  }

  // --- Emitting part of a batch (SDK helpers; defined after Batch) -------------------------
  // Each emitted message is the input message with (at most) its value replaced: its key,
  // headers, event time and key group are kept. All of them go out in one emit call, as
  // the batch came: up to k_emit_stack messages are built on the stack, more in one
  // allocation per call. A failure is returned as emit's (already reported) or as f's
  // (then nothing of the batch was emitted).

  /// Messages the batch helpers build on the stack.
  static constexpr size_t k_emit_stack = 64;
  /// Emits message i of `batch` with value values[i] (borrowed). Precondition:
  /// values.size() >= batch.size().
  Status emit_mapped(const Batch& batch, std::span<const Value> values) const;
  /// See emit_mapped(const Batch&, std::span<const Value>).
  Status emit_mapped(const Batch& batch, std::span<const sl_value> values) const;
  /// Emits f(m) as the value of each message m of `batch`, in order. `f(const sl_message&)`
  /// returns Value or Result<Value>; its first failure is returned and nothing is emitted.
  template <std::invocable<const sl_message&> F>
  Status emit_mapped(const Batch& batch, F&& f) const;
  /// Emits message i of `batch` for each keep[i] != 0, unchanged, in order (the batch as it
  /// is when every message is kept). Precondition: keep.size() >= batch.size().
  Status emit_selected(const Batch& batch, std::span<const uint8_t> keep) const;
  /// Emits the messages m of `batch` for which `pred(const sl_message&)` is true (a bool,
  /// or Result<bool> whose failure is returned, with nothing emitted).
  template <std::invocable<const sl_message&> P>
  Status emit_selected(const Batch& batch, P&& pred) const;

 private:
  static Status wrap(sl_status st) noexcept {
    return st == SL_OK ? Status() : Status::reported(st);
  }
  // A posted closure: call_posted runs it; delete_posted (post_owned's release) frees it;
  // run_posted (plain post, before ABI 1.6) does both.
  template <class Fn>
  static void call_posted(sl_context* ctx, void* arg) noexcept {
    Fn& fn = *static_cast<Fn*>(arg);
    detail::guard_void(ctx, "posted task", [&] {
      if constexpr (std::is_same_v<std::invoke_result_t<Fn&, Context>, Status>) {
        Status st = fn(Context(ctx));
        if (!st.is_ok()) throw Error(std::move(st));
      } else {
        fn(Context(ctx));
      }
    });
  }
  template <class Fn>
  static void delete_posted(void* arg) noexcept {
    delete static_cast<Fn*>(arg);
  }
  template <class Fn>
  static void run_posted(sl_context* ctx, void* arg) noexcept {
    call_posted<Fn>(ctx, arg);
    delete_posted<Fn>(arg);
  }

  sl_context* ctx_;
};

/// sl_message.key_group (ABI 1.3) of no key group: the message was not read from a partition.
inline constexpr uint64_t k_no_key_group = 0;
/// The key group a partitioned source (from_kafka) puts on a message read from `partition`
/// (>= 0): 1 + partition, so that 0 stays "none". Co-partitioned topics share groups.
constexpr uint64_t key_group_of_partition(int32_t partition) noexcept {
  return static_cast<uint64_t>(partition) + 1;
}
/// The input partition of key group `group`, or -1 for k_no_key_group.
constexpr int64_t partition_of_key_group(uint64_t group) noexcept {
  return group == k_no_key_group ? -1 : static_cast<int64_t>(group - 1);
}
/// The key group of `m` (ABI 1.3). A host before ABI 1.3 zeroed the field (it was `reserved`),
/// so this reads k_no_key_group there: safe on every host.
constexpr uint64_t key_group_of(const sl_message& m) noexcept { return m.key_group; }

/// A borrowed view of the messages handed to process(): valid for that call only. Honours
/// the batch's stride (message_size), so iterate it rather than indexing `messages`.
class Batch {
 public:
  /// Forward iterator over the messages.
  class iterator {
   public:
    using value_type = sl_message;
    using difference_type = std::ptrdiff_t;
    using reference = const sl_message&;
    using pointer = const sl_message*;
    using iterator_category = std::forward_iterator_tag;
    /// A singular iterator.
    iterator() noexcept = default;
    /// The message at `at`, in an array of stride `stride` bytes.
    iterator(const char* at, size_t stride) noexcept : at_(at), stride_(stride) {}
    /// The message (borrowed for the callback).
    reference operator*() const noexcept { return *reinterpret_cast<pointer>(at_); }
    /// See operator*().
    pointer operator->() const noexcept { return reinterpret_cast<pointer>(at_); }
    /// Next message.
    iterator& operator++() noexcept {
      at_ += stride_;
      return *this;
    }
    /// Next message (post-increment).
    iterator operator++(int) noexcept {
      iterator old = *this;
      at_ += stride_;
      return old;
    }
    /// Same position.
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.at_ == b.at_; }

   private:
    const char* at_ = nullptr;
    size_t stride_ = 0;
  };

  /// Views `batch` (borrowed for the duration of the callback).
  explicit Batch(const sl_batch& batch) noexcept
      : base_(reinterpret_cast<const char*>(batch.messages)),
        stride_(batch.message_size),
        count_(batch.count) {}
  /// Number of messages.
  [[nodiscard]] size_t size() const noexcept { return count_; }
  /// True when there are no messages.
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  /// Message `i` (precondition: i < size()).
  const sl_message& operator[](size_t i) const noexcept {
    return *reinterpret_cast<const sl_message*>(base_ + i * stride_);
  }
  /// Iteration in order.
  [[nodiscard]] iterator begin() const noexcept { return {base_, stride_}; }
  /// See begin().
  [[nodiscard]] iterator end() const noexcept { return {base_ + count_ * stride_, stride_}; }
  /// True when the messages form a plain sl_message array (stride == sizeof(sl_message)),
  /// so messages() may be used, e.g. to emit them on unchanged.
  [[nodiscard]] bool contiguous() const noexcept { return stride_ == sizeof(sl_message); }
  /// The messages as an array. Precondition: contiguous().
  [[nodiscard]] std::span<const sl_message> messages() const noexcept {
    return {reinterpret_cast<const sl_message*>(base_), count_};
  }
  /// The messages' values, in order, into `out` (cleared first; its room is kept, so a
  /// vector reused across batches costs no allocation): borrowed from the batch, for
  /// Function::call_batch and other functions over values.
  void gather_values(std::vector<sl_value>& out) const {
    out.clear();
    out.reserve(count_);
    for (const sl_message& m : *this) out.push_back(m.value);
  }
  /// The messages' values, in order (borrowed from the batch); see gather_values.
  [[nodiscard]] std::vector<sl_value> values() const {
    std::vector<sl_value> out;
    gather_values(out);
    return out;
  }

 private:
  const char* base_;
  size_t stride_;
  size_t count_;
};

// --- Context's batch helpers (declared in Context) -------------------------------------

namespace detail {

/// Room for `n` items: on the stack up to Context::k_emit_stack, else one allocation.
/// Default-initialised, so trivial items (messages, flags) are not zeroed first: every slot
/// is written before it is read.
template <class T>
class EmitBuffer {
 public:
  explicit EmitBuffer(size_t n) {
    if (n > small_.size()) big_.reset(new T[n]);  // NOLINT(cppcoreguidelines-owning-memory)
  }
  T* data() noexcept { return big_ ? big_.get() : small_.data(); }

 private:
  std::array<T, Context::k_emit_stack> small_;
  std::unique_ptr<T[]> big_;  // NOLINT(*-avoid-c-arrays): uninitialised room, unlike vector
};

/// Emits, in one call, a copy of each message i of `batch` with keep(i), after
/// make(i, copy) (a Status) set its value; `count` is how many keep(i) accepts.
template <class Keep, class Make>
Status emit_built(Context ctx, const Batch& batch, size_t count, Keep&& keep, Make&& make) {
  EmitBuffer<sl_message> out(count);
  sl_message* buf = out.data();
  size_t n = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!keep(i)) continue;
    buf[n] = batch[i];
    SLUICE_SDK_RETURN_IF_ERROR(make(i, buf[n]));
    ++n;
  }
  return n == 0 ? Status() : ctx.emit(std::span<const sl_message>(buf, n));
}

}  // namespace detail

inline Status Context::emit_mapped(const Batch& batch, std::span<const sl_value> values) const {
  return detail::emit_built(
      *this, batch, batch.size(), [](size_t) { return true; },
      [&](size_t i, sl_message& m) {
        m.value = values[i];
        return Status();
      });
}

inline Status Context::emit_mapped(const Batch& batch, std::span<const Value> values) const {
  return emit_mapped(batch, std::span<const sl_value>(raw_array(values), values.size()));
}

template <std::invocable<const sl_message&> F>
Status Context::emit_mapped(const Batch& batch, F&& f) const {
  using R = std::decay_t<std::invoke_result_t<F&, const sl_message&>>;
  detail::EmitBuffer<Value> held(batch.size());  // the results, until emitted
  Value* results = held.data();
  return detail::emit_built(
      *this, batch, batch.size(), [](size_t) { return true; },
      [&](size_t i, sl_message& m) -> Status {
        if constexpr (std::is_same_v<R, Value>) {
          results[i] = f(std::as_const(m));
        } else {
          SLUICE_SDK_ASSIGN_OR_RETURN(results[i], f(std::as_const(m)));
        }
        m.value = results[i].raw();
        return {};
      });
}

inline Status Context::emit_selected(const Batch& batch, std::span<const uint8_t> keep) const {
  size_t kept = 0;
  for (size_t i = 0; i < batch.size(); ++i) kept += keep[i] != 0 ? 1 : 0;
  if (kept == 0) return {};
  if (kept == batch.size() && batch.contiguous()) return emit(batch.messages());
  return detail::emit_built(
      *this, batch, kept, [&](size_t i) { return keep[i] != 0; },
      [](size_t, sl_message&) { return Status(); });
}

template <std::invocable<const sl_message&> P>
Status Context::emit_selected(const Batch& batch, P&& pred) const {
  using R = std::decay_t<std::invoke_result_t<P&, const sl_message&>>;
  detail::EmitBuffer<uint8_t> keep(batch.size());
  uint8_t* flags = keep.data();
  for (size_t i = 0; i < batch.size(); ++i) {
    if constexpr (std::is_same_v<R, Result<bool>>) {
      SLUICE_SDK_ASSIGN_OR_RETURN(const bool k, pred(batch[i]));
      flags[i] = k ? 1 : 0;
    } else {
      flags[i] = static_cast<bool>(pred(batch[i])) ? 1 : 0;
    }
  }
  return emit_selected(batch, std::span<const uint8_t>(flags, batch.size()));
}

/// Typed access to a node's validated config (or a function's args): an object the host
/// built from the TOML table, defaults filled in. Getters for a required key throw
/// Error(INVALID_ARGUMENT, "node 'ID': key 'K' ...") when the key is absent or of the wrong
/// kind; the SDK catches it at create/bind and returns it as the create's failure. A null
/// value counts as absent. Holds a reference to the object; any thread.
class Config {
 public:
  /// `object` is retained; `where` prefixes every error, e.g. "node 'words'".
  Config(ValueRef object, std::string where)
      : object_(Value::borrow(object)), where_(std::move(where)) {}
  /// The config of the node being created.
  explicit Config(const sl_node_init& init)
      : Config(init.config, "node '" + std::string(Context(init.ctx).node_id()) + "'") {
    input_count_ = init.input_count;
    task_index_ = init.task_index;
    task_count_ = init.task_count;
    if (SL_HAS_FIELD(&init, sl_node_init, input_ids) && init.input_ids != nullptr) {
      for (uint32_t i = 0; i < init.input_count; ++i) {
        input_ids_.emplace_back(init.input_ids[i].data, init.input_ids[i].size);
      }
    }
    if (SL_HAS_FIELD(&init, sl_node_init, checkpointing) && init.pipeline.data != nullptr) {
      pipeline_.assign(init.pipeline.data, init.pipeline.size);
      checkpointing_ = init.checkpointing != 0;
    }
  }
  /// The config a validate callback checks (ABI 1.2): what create will get. For a function's
  /// args, pass its name as `function` (errors then read "node 'x': function 'f': ...").
  explicit Config(const sl_validate_init& init, const char* function = nullptr)
      : Config(init.config, "node '" + std::string(init.node_id.data, init.node_id.size) + "'" +
                                (function ? std::string(": function '") + function + "'" : "")) {
    input_count_ = init.input_count;
    task_count_ = init.task_count;
    checkpointing_ = init.checkpointing != 0;
    pipeline_.assign(init.pipeline.data ? init.pipeline.data : "", init.pipeline.size);
    for (uint32_t i = 0; init.input_ids != nullptr && i < init.input_count; ++i) {
      input_ids_.emplace_back(init.input_ids[i].data, init.input_ids[i].size);
    }
    environment_ = SL_HAS_FIELD(&init, sl_validate_init, environment) && init.environment != 0;
  }

  /// How many instances of the graph run ([runtime] tasks); 1 for a bare object.
  [[nodiscard]] uint32_t task_count() const noexcept { return task_count_; }
  /// Which of them this node belongs to (0 .. task_count() - 1); 0 for a bare object and
  /// for a validate callback (which checks the config once for every task).
  [[nodiscard]] uint32_t task_index() const noexcept { return task_index_; }
  /// True when the pipeline has a [checkpoint] table (ABI 1.1 host; false when unknown).
  [[nodiscard]] bool checkpointing() const noexcept { return checkpointing_; }
  /// The pipeline's name (empty when unnamed or unknown).
  [[nodiscard]] const std::string& pipeline() const noexcept { return pipeline_; }
  /// In a validate callback: true when the host asks for the checks that need this machine
  /// (sl_validate_init.environment, ABI 1.7): files start will read exist, directories it
  /// will write in are writable. False elsewhere and on older hosts.
  [[nodiscard]] bool check_environment() const noexcept { return environment_; }

  /// Number of inputs wired to the node (0 for a Config built from a bare object).
  [[nodiscard]] uint32_t input_count() const noexcept { return input_count_; }
  /// The ids of the node's inputs in config order (empty on an ABI 1.0 host).
  [[nodiscard]] const std::vector<std::string>& input_ids() const noexcept { return input_ids_; }
  /// Resolves a reference to an input: an int index (0-based) or an input id string, as
  /// found in `key` (used in errors). Throws when it names no input.
  [[nodiscard]] uint32_t input_index(std::string_view key, const Value& ref) const {
    if (ref.is_int()) {
      const int64_t i = ref.as_int();
      if (i < 0 || i >= static_cast<int64_t>(input_count_)) {
        fail(key, "input index " + std::to_string(i) + " is out of range (the node has " +
                      std::to_string(input_count_) + " inputs)");
      }
      return static_cast<uint32_t>(i);
    }
    if (ref.is_string()) {
      for (uint32_t i = 0; i < input_ids_.size(); ++i) {
        if (input_ids_[i] == ref.as_str()) return i;
      }
      std::string list;
      for (const auto& id : input_ids_) list += (list.empty() ? "\"" : ", \"") + id + "\"";
      fail(key, "names no input: \"" + std::string(ref.as_str()) + "\" (inputs are " + list + ")");
    }
    fail(key, "must name an input by id (string) or index (int)");
  }

  /// The whole object.
  [[nodiscard]] const Value& object() const noexcept { return object_; }
  /// The error prefix ("node 'ID'").
  [[nodiscard]] const std::string& where() const noexcept { return where_; }
  /// True when `key` is present and not null.
  [[nodiscard]] bool has(std::string_view key) const { return find_value(key).has_value(); }

  /// Any value; throws when absent.
  [[nodiscard]] Value get_value(std::string_view key) const {
    return require(key, find_value(key));
  }
  /// Any value, or nullopt when absent.
  [[nodiscard]] std::optional<Value> find_value(std::string_view key) const {
    std::optional<Value> v = object_.get(key);
    if (v && v->is_null()) return std::nullopt;
    return v;
  }
  /// An int; throws when absent or not an int.
  [[nodiscard]] int64_t get_int(std::string_view key) const { return require(key, find_int(key)); }
  /// An int, or nullopt when absent; throws when of another kind.
  [[nodiscard]] std::optional<int64_t> find_int(std::string_view key) const {
    return find_as(key, SL_KIND_INT, "an int", [](const Value& v) { return v.as_int(); });
  }
  /// A number (ints convert); throws when absent or not a number.
  [[nodiscard]] double get_float(std::string_view key) const {
    return require(key, find_float(key));
  }
  /// A number, or nullopt when absent; throws when of another kind.
  [[nodiscard]] std::optional<double> find_float(std::string_view key) const {
    std::optional<Value> v = find_value(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail_kind(key, "a number", *v);
    return v->as_float();
  }
  /// A bool; throws when absent or not a bool.
  [[nodiscard]] bool get_bool(std::string_view key) const { return require(key, find_bool(key)); }
  /// A bool, or nullopt when absent; throws when of another kind.
  [[nodiscard]] std::optional<bool> find_bool(std::string_view key) const {
    return find_as(key, SL_KIND_BOOL, "a bool", [](const Value& v) { return v.as_bool(); });
  }
  /// A string (copied); throws when absent or not a string.
  [[nodiscard]] std::string get_string(std::string_view key) const {
    return require(key, find_string(key));
  }
  /// A string, or nullopt when absent; throws when of another kind.
  [[nodiscard]] std::optional<std::string> find_string(std::string_view key) const {
    return find_as(key, SL_KIND_STRING, "a string",
                   [](const Value& v) { return std::string(v.as_str()); });
  }
  /// An array; throws when absent or not an array.
  [[nodiscard]] Value get_array(std::string_view key) const {
    return require(key, find_array(key));
  }
  /// An array, or nullopt when absent; throws when of another kind.
  [[nodiscard]] std::optional<Value> find_array(std::string_view key) const {
    return find_as(key, SL_KIND_ARRAY, "an array", [](const Value& v) { return v; });
  }
  /// A DURATION key (an int of milliseconds); throws when absent, not an int or negative.
  [[nodiscard]] std::chrono::milliseconds get_duration(std::string_view key) const {
    const int64_t ms = get_int(key);
    if (ms < 0) fail(key, "must not be negative (got " + std::to_string(ms) + " ms)");
    return std::chrono::milliseconds(ms);
  }
  /// A string that must be one of `choices`; returns its index. Throws "key 'K' must be one
  /// of "a", "b" (got "x")" otherwise.
  [[nodiscard]] size_t get_choice(std::string_view key,
                                  std::initializer_list<std::string_view> choices) const {
    const std::string got = get_string(key);
    size_t i = 0;
    std::string list;
    for (std::string_view c : choices) {
      if (c == got) return i;
      list.append(i++ == 0 ? "\"" : ", \"").append(c).append("\"");
    }
    fail(key, "must be one of " + list + " (got \"" + got + "\")");
  }

  /// Throws Error(INVALID_ARGUMENT, "<where>: key '<key>' <problem>"), e.g.
  /// `cfg.fail("n", "must be positive (got 0)")`.
  [[noreturn]] void fail(std::string_view key, std::string_view problem) const {
    throw ConfigError(where_ + ": key '" + std::string(key) + "' " + std::string(problem),
                      std::string(key), std::string(problem));
  }

 private:
  template <class T>
  T require(std::string_view key, std::optional<T> v) const {
    if (!v) fail(key, "is required");
    return std::move(*v);
  }
  template <class Get>
  auto find_as(std::string_view key, int32_t kind, const char* what, Get get) const
      -> std::optional<decltype(get(std::declval<const Value&>()))> {
    std::optional<Value> v = find_value(key);
    if (!v) return std::nullopt;
    if (v->kind() != kind) fail_kind(key, what, *v);
    return get(*v);
  }
  [[noreturn]] void fail_kind(std::string_view key, const char* what, const Value& v) const {
    fail(key, std::string("must be ") + what + " (got " + std::string(v.kind_name()) + ")");
  }

  Value object_;
  std::string where_;
  uint32_t input_count_ = 0;
  uint32_t task_count_ = 1;
  uint32_t task_index_ = 0;
  bool checkpointing_ = false;
  bool environment_ = false;
  std::string pipeline_;
  std::vector<std::string> input_ids_;
};

namespace detail {

/// Runs `check` (throwing Config::fail on a problem) for a validate callback: a ConfigError
/// becomes one report of its key and problem, any other failure a report without key.
/// Returns SL_OK when nothing was found. Nothing escapes.
template <class F>
sl_status run_validate(const sl_validate_init* init, F&& check) noexcept {
  auto say = [init](std::string_view key, std::string_view msg) noexcept {
    if (init->report != nullptr) {
      init->report(init->report_arg, key.data(), key.size(), msg.data(), msg.size());
    }
  };
  try {
    std::forward<F>(check)();
    return SL_OK;
  } catch (const ConfigError& e) {
    say(e.key(), e.problem());
    return SL_INVALID_ARGUMENT;
  } catch (const Error& e) {
    say({}, e.what());
    return e.status().code();
  } catch (const std::exception& e) {
    say({}, e.what());
    return SL_INTERNAL;
  } catch (...) {
    say({}, "uncaught exception of unknown type");
    return SL_UNKNOWN;
  }
}

}  // namespace detail

}  // namespace sluice::sdk

#endif  // SLUICE_DETAIL_CONTEXT_HPP
