// A task: one instance of the graph, run by one executor thread on its own
// io_context (docs/ARCHITECTURE.md, "Execution"). Operator code never needs locks:
// every callback of every node of a task runs on this one thread.
//
// Data moves depth-first: a node's emit() calls each consumer's process()
// before returning, in config order, so nothing waits "between" nodes and
// runs are deterministic. Sources are polled in rounds; a source is skipped while
// a node downstream of it signals back-pressure (other sources keep their rate);
// between rounds the io_context runs timers and work posted from other threads.
#pragma once

#include "common/plugin_call.hpp"
#include "common/result.hpp"
#include "executor/clock.hpp"
#include "executor/epoch_participant.hpp"
#include "executor/io_watches.hpp"
#include "executor/key_group_directory.hpp"
#include "executor/node_gauges.hpp"
#include "executor/timer_queue.hpp"
#include "graph/graph_spec.hpp"
#include "value/value.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sluice/sluice.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::host {
class Task;
namespace lua {
class LuaRuntime;  // lua/lua_runtime.hpp
}
}  // namespace sluice::host

// The C ABI's opaque context: which node of which task a callback belongs to.
struct sl_context {
  sluice::host::Task* task;
  size_t node;
  // A checkpoint store's context has no task; set_error writes here instead
  // (checkpoint/store.hpp).
  std::string* store_error = nullptr;
};

namespace sluice::host {

struct Consumer {
  size_t node;
  uint32_t input;
};

// Per-node counters, written by the task thread only and readable elsewhere.
struct NodeCounters {
  std::atomic<uint64_t> messages_in{0};
  std::atomic<uint64_t> messages_out{0};
  // Payload bytes of those messages (payload_bytes, value/value.hpp: an estimate for
  // structured values).
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> errors{0};        // failures, including those on_error handled
  std::atomic<uint64_t> skipped{0};       // messages dropped by on_error = "skip"
  std::atomic<uint64_t> dead_letters{0};  // messages routed by on_error = "dead_letter"
  // Batch latency: wall time of a sample of the process() calls (or, with an error
  // policy, of the per-message calls for one batch), which includes the synchronous
  // delivery downstream. A histogram with upper bounds k_latency_bounds_ns (cumulated
  // when rendered); the last bucket is +Inf. Each observation is one real, timed call;
  // the histogram's count is the number of timed calls, not of delivered batches
  // (messages_in counts those).
  static constexpr std::array<uint64_t, 8> k_latency_bounds_ns{
      1'000, 10'000, 100'000, 1'000'000, 10'000'000, 100'000'000, 1'000'000'000, 10'000'000'000};
  std::array<std::atomic<uint64_t>, k_latency_bounds_ns.size() + 1> latency_buckets{};
  std::atomic<uint64_t> latency_sum_ns{0};
  // Back-pressure this node signalled (set_backpressure or any input full):
  // finished intervals, plus the start of the current one (0 = not now).
  std::atomic<uint64_t> backpressure_ns{0};
  std::atomic<int64_t> backpressure_since_ns{0};
  // Sources: how many back-pressuring nodes (or full inputs) downstream hold it now
  // (NodeRuntime::paused, mirrored for the admin endpoint).
  std::atomic<uint32_t> held{0};
  // Event time (ABI 1.5): the node's output watermark (a sink's: its input's), ns since the
  // epoch; SL_NO_WATERMARK until one came. And what it emitted on each side output.
  std::atomic<int64_t> watermark_ns{SL_NO_WATERMARK};
  static constexpr size_t k_max_side_outputs = 16;  // the registry refuses more
  std::array<std::atomic<uint64_t>, k_max_side_outputs> side_out{};

  // One process() call in about k_latency_sample_every is timed, each node's first call
  // included, at pseudo-random intervals of 1 .. 2N-1 calls (mean N), so a periodic
  // pattern in the input (every 16th batch slow) cannot line up with the sampling. Two
  // clock reads per call cost 8-11 % of a pipeline that emits per element (word count).
  static constexpr uint32_t k_latency_sample_every = 16;
  uint32_t latency_countdown = 0;      // task thread only: untimed calls before the next timed one
  uint32_t latency_rng = 0x9e3779b9u;  // task thread only: xorshift32 state
  // Whether to time this call (task thread only).
  bool sample_latency() noexcept {
    if (latency_countdown != 0) {
      --latency_countdown;
      return false;
    }
    latency_rng ^= latency_rng << 13;
    latency_rng ^= latency_rng >> 17;
    latency_rng ^= latency_rng << 5;
    latency_countdown = latency_rng % (2 * k_latency_sample_every - 1);
    return true;
  }
  void record_latency(uint64_t ns) {
    size_t b = 0;
    while (b < k_latency_bounds_ns.size() && ns > k_latency_bounds_ns[b]) ++b;
    add(latency_buckets[b], 1);
    add(latency_sum_ns, ns);
  }
  // The task thread is the only writer, so a plain load and store is enough (readers see
  // whole values); a fetch_add would cost a locked instruction on every delivery.
  static void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

struct NodeRuntime {
  // On the heap: plugins keep the pointer, and a live reload (Task::commit_reconfigure) moves
  // the node to another index; ctx->node follows it.
  std::unique_ptr<sl_context> ctx = std::make_unique<sl_context>();
  // The node's identity for its timers and io watches, which outlives a live reload's move
  // to another index (Task::index_of_key_ maps it to the index).
  size_t key = 0;
  std::string id;
  std::string type;
  int32_t role = 0;
  const sl_node_type* vt = nullptr;  // the plugin's callbacks (or a host-internal table)
  void* self = nullptr;
  Value config;
  uint32_t input_count = 0;
  uint32_t inputs_ended = 0;
  std::vector<sl_str> input_ids;  // borrowed from the GraphSpec, for sl_node_init
  ErrorPolicy on_error = ErrorPolicy::fail;
  std::vector<Consumer> consumers;
  std::vector<Consumer> dead_letter_consumers;        // readers of "ID.dead_letter"
  std::vector<std::vector<Consumer>> side_consumers;  // per side output: readers of "ID.<name>"
  // Event time (executor/task_watermarks.cc). Per input: its watermark (SL_NO_WATERMARK
  // until one came, SL_WATERMARK_END once it ended) and whether a watermark-making node
  // (SL_NODE_WATERMARKS) is upstream of it; the input watermark is the minimum over the
  // inputs that carry (over all of them when none does).
  std::vector<int64_t> input_watermarks;
  std::vector<bool> input_carries;
  bool any_input_carries = false;
  bool output_carries = false;  // SL_NODE_WATERMARKS, or an input carries
  int64_t watermark_in = SL_NO_WATERMARK;
  int64_t watermark_out = SL_NO_WATERMARK;
  uint64_t side_dropped = 0;  // side-output messages nobody reads (logged 1st, 2nd, 4th...)
  // Input back-pressure (set_input_backpressure): which inputs are full, and for
  // each input the sources that feed only it (computed on first use).
  std::vector<bool> input_full;
  std::optional<std::vector<std::vector<size_t>>> input_only_sources;
  // Node back-pressure (set_backpressure): the sources upstream of the node, itself if it is
  // one (computed on first use). Each is paused while the node is full.
  std::optional<std::vector<size_t>> upstream_sources;
  uint32_t paused = 0;           // sources: how many full nodes or inputs downstream pause this one
  bool operator_paused = false;  // sources: paused from the admin endpoint (not polled)
  int32_t source_state = SL_SOURCE_MORE;
  bool created = false;
  bool ended = false;
  bool backpressured = false;
  bool injected = false;            // a test-mode source fed by the test driver
  std::string error;                // last message from set_error
  std::vector<sl_message> scratch;  // emit_values builds messages here
  // Operator chaining (operator_chain.cc): a chain headed by this node works here.
  struct ChainScratch {
    std::vector<sl_value> values, next;     // the elements between operators
    std::vector<sl_value> keys, next_keys;  // their keys, once a map_keys set them
    std::vector<uint32_t> rows;             // each element's message in the head's input
    std::vector<uint8_t> keep;              // select_values' answers
    std::vector<sl_message> out;            // the chain's output batch
  };
  ChainScratch chain;
  std::vector<Value> captured;  // capture nodes (test mode) record their input here
  std::unique_ptr<NodeCounters> counters = std::make_unique<NodeCounters>();
  std::unique_ptr<NodeGauges> gauges = std::make_unique<NodeGauges>();
  bool gauge_warned = false;  // one warning per node for invalid gauge_set calls
};

struct TaskOptions {
  uint32_t batch_size = 1024;
  uint32_t task_index = 0;
  uint32_t task_count = 1;
  const Clock* clock = nullptr;  // required; VirtualClock for test mode
};

class Task final : public EpochParticipant {
 public:
  Task(const GraphSpec& spec, TaskOptions options);
  ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  // Test mode, before create(): make source `id` one that the caller feeds with
  // inject(), and record what node `id` emits (captured()).
  Status replace_with_injector(std::string_view id);
  Result<size_t> attach_capture(std::string_view id);
  // Test mode, before create(): sinks write nothing (no files, no brokers);
  // they are replaced by a host sink that discards what reaches it.
  void replace_sinks_with_discard();

  // Creates every node instance (in topological order). Errors name the node.
  Status create();
  // Calls start on every node.
  Status start();

  // Runs until every node has ended, the task failed, or stop was requested and
  // the drain finished. Returns the failure, if any. Real clock only.
  Status run();
  // Thread-safe: end the sources and drain (finish every node, flush sinks).
  void request_stop();
  // Thread-safe: an operator's pause of source `node` (it is not polled until
  // resumed; it still ends on stop). Ignored for other nodes.
  void set_source_paused(size_t node, bool paused);
  // Thread-safe: runs `fn` on the task thread between callbacks (the daemon's
  // liveness ping). False when the task no longer runs posted work.
  bool post_host(std::function<void()> fn);
  // Thread-safe: the id of the node whose callback the task thread is in (the
  // innermost, as deliveries nest), or empty between callbacks. For the
  // daemon's report of a task that stopped answering its liveness pings.
  [[nodiscard]] std::string_view node_in_callback() const;

  // -- test mode (virtual clock), on the caller's thread --------------------
  // The element gets event time `timestamp_ns` and key group `key_group` when given (as a
  // partitioned source that stamps its records would emit it: docs/TESTING.md).
  Status inject(std::string_view source_id, const Value& value,
                std::optional<int64_t> timestamp_ns = std::nullopt, uint64_t key_group = 0);
  // Fires every timer due up to `now_ns` in deadline order, moving the clock
  // to each deadline first; then sets the clock to now_ns.
  Status advance_to(VirtualClock& clock, int64_t now_ns);
  // Runs posted work and polls ready sources until nothing is ready.
  Status run_until_idle();
  // Ends every source (injected ones included) and drains the graph.
  Status end_sources();
  [[nodiscard]] const std::vector<Value>& captured(size_t capture) const {
    return nodes_[capture].captured;
  }

  // Checkpoint support (see docs/CHECKPOINTING.md): the state of every stateful
  // node (SL_NODE_STATEFUL with a snapshot callback), by node id. Task thread,
  // between deliveries.
  Result<NodeStates> snapshot_states();
  // After create() and before start(): hands each node its saved state.
  Status restore_states(const NodeStates& states) override;
  void restore_claims(const GroupClaims& claims) override { claims_ = claims; }
  void hold_end_of_input(std::function<void()> reached) override {
    end_reached_ = std::move(reached);
  }
  // The key groups owned now, per grouped source (task thread).
  [[nodiscard]] const GroupClaims& claims() const { return claims_; }
  // Before start(): where key_groups_assigned finds the groups' state (the checkpoint's
  // directory; null without checkpoints: the calls then do nothing). Not owned.
  void set_key_group_directory(KeyGroupDirectory* directory) { key_groups_ = directory; }

  // -- the checkpoint epoch protocol (executor/task_epoch.cc) -----------------
  // The coordinator's view: EpochParticipant (executor/epoch_participant.hpp).
  void begin_checkpoint(uint64_t epoch, bool final, EpochDone done) override;
  void end_checkpoint(uint64_t epoch, bool stored, std::function<void()> done) override;
  Result<bool> recover_checkpoint(uint64_t epoch, const NodeStates& states) override;
  // sl_host_api.checkpoint_ready (task thread).
  void checkpoint_ready(size_t node, uint64_t epoch, sl_status status);
  // sl_host_api.key_groups_assigned / key_groups_revoked (executor/task_key_groups.cc).
  sl_status key_groups_assigned(size_t source, std::span<const uint32_t> groups);
  sl_status key_groups_revoked(size_t source, std::span<const uint32_t> groups);

  [[nodiscard]] bool complete() const;
  [[nodiscard]] const std::optional<Status>& failure() const { return failure_; }
  [[nodiscard]] const std::vector<NodeRuntime>& nodes() const { return nodes_; }

  // -- live reload (executor/task_reconfigure.cc), task thread ------------------------
  // The graph `next` replaces the running one without a drain: for each node of `next`,
  // `kept_from` names the running node whose instance it keeps (same id, type, config and
  // inputs: pipeline/live_reload.hpp), or nullopt for a new instance.
  // prepare creates the new instances, not wired: the running graph goes on, and a failure
  // (returned, naming the node; the task does not fail) destroys what it created and leaves
  // everything as it was. Refused (reconfigure_blocker) while a checkpoint epoch runs
  // (SL_UNAVAILABLE: try again), and while draining, after a failure, once a node has ended
  // (SL_FAILED_PRECONDITION).
  // commit then finishes the nodes that are not kept, in topological order and through the
  // old wiring (what they still hold reaches their readers), destroys them, rewires the
  // task for `next` and starts the new instances. A new instance that cannot start puts the
  // previous graph back in place: the new instances go, the replaced nodes are created
  // again (fresh) from the previous spec, the kept ones run on; `rolled_back` is set and
  // the status says why. Any other failure (finish, or the rollback itself) fails the task.
  // abort (instead of commit) destroys what prepare created.
  // `next` must outlive the task, and so must the spec it replaces (its kept nodes were
  // created from it and may hold its strings).
  Status prepare_reconfigure(const GraphSpec& next, std::vector<std::optional<size_t>> kept_from);
  // Why prepare_reconfigure would refuse now (OK: it would not), with the codes above.
  [[nodiscard]] Status reconfigure_blocker() const;
  Status commit_reconfigure(bool& rolled_back);
  void abort_reconfigure();  // also run by ~Task: a task that ended in between
  // Fails the task with `why` (task thread): the runner's way out of a live reload that
  // could not be undone on another task.
  void abandon(Status why);

  // -- the host API's view (task thread) ------------------------------------
  sl_status emit(size_t node, const sl_message* messages, size_t count);
  sl_status emit_values(size_t node, const sl_value* values, size_t count);
  // sl_host_api.emit_watermark / emit_side (executor/task_watermarks.cc).
  sl_status emit_watermark(size_t node, int64_t watermark_ns);
  sl_status emit_side(size_t node, uint32_t output, const sl_message* messages, size_t count);
  NodeRuntime& node(size_t index) { return nodes_[index]; }
  const Clock& clock() const { return *options_.clock; }
  sl_status timer_start(size_t node, uint64_t timer_id, int64_t delay_ns);
  void timer_cancel(size_t node, uint64_t timer_id);
  // Thread-safe. With `release`, the post owns `arg` once accepted: release(arg) runs
  // exactly once, after fn or instead of it (sl_host_api.post_owned).
  sl_status post(sl_context* ctx, sl_task_fn fn, void* arg, sl_release_fn release);
  void wake(sl_context* ctx);  // thread-safe
  void set_backpressure(size_t node, bool full);
  void set_input_backpressure(size_t node, uint32_t input, bool full);
  // io_watch / io_unwatch (executor/io_watches.hpp); on_io runs through invoke().
  sl_status io_watch(size_t node, int fd, uint32_t events, uint64_t watch_id);
  void io_unwatch(size_t node, uint64_t watch_id);
  const TaskOptions& options() const { return options_; }
  // The sandboxed Lua state of this task's Lua functions, made on first use.
  lua::LuaRuntime& lua();
  // The plugins of this task's graph (GraphSpec::registry): function_bind resolves names
  // here. Null when the spec was given none.
  [[nodiscard]] const PluginRegistry* registry() const { return registry_.get(); }

 private:
  // Calls a plugin callback, turning a failure (status or escaped exception)
  // into the task's failure, reported once with the node id.
  template <class F>
  sl_status invoke(size_t node, const char* what, F&& call);
  // Runs a plugin callback, catching escaped exceptions; does not fail the task.
  template <class F>
  sl_status call_guarded(size_t node, F&& call);
  // `bytes`: payload_bytes of what is delivered, counted once by the caller for every
  // consumer's bytes_in.
  sl_status deliver(size_t from, const std::vector<Consumer>& consumers, const sl_message* messages,
                    size_t count, uint64_t bytes);
  // One consumer's delivery: `messages`, or (to a chain only) bare `values` from
  // emit_values, whose messages would have no key, headers or event time.
  sl_status deliver_to(const Consumer& c, const sl_message* messages, const sl_value* values,
                       size_t count, uint64_t bytes);
  // Operator chaining (operator_chain.cc): whether `n` runs in a chain, through
  // map_values / select_values / map_keys; and the chain headed by `head` run over what was
  // delivered to it (messages, or bare values when `messages` is null), whose
  // messages_in deliver_to already counted.
  [[nodiscard]] bool chainable(const NodeRuntime& n) const noexcept;
  // `bytes`: payload_bytes of what was delivered (the head's bytes_in).
  sl_status run_chain(size_t head, const sl_message* messages, const sl_value* values, size_t count,
                      uint64_t bytes);
  // Delivers to a node with an error policy: one message per call, so a
  // failure names exactly one message, which the policy then handles.
  sl_status deliver_with_policy(const Consumer& to, const sl_batch& batch);
  sl_status handle_failed_message(size_t node, const sl_message& message, sl_status status);
  const std::vector<std::vector<size_t>>& input_only_sources(size_t node);
  const std::vector<size_t>& upstream_sources(size_t node);
  // One more (or one less) back-pressuring node or input holds source `node`.
  void hold_source(size_t node, bool hold);
  [[nodiscard]] bool pollable(const NodeRuntime& n) const {
    return !n.ended && n.source_state == SL_SOURCE_MORE && n.paused == 0 && !n.operator_paused &&
           !epoch_;
  }
  void fail(size_t node, const char* what, sl_status status);
  void note_backpressure(NodeRuntime& n, bool was_full);  // metrics: after a change
  void schedule_poll();
  void poll_round();
  void end_node(size_t node);
  void fire_due_timers(int64_t now);
  void rearm_wakeup();
  void on_state_change();
  void abort_nodes();
  // sl_node_type.stop of a created node that has not ended (void: an escaped exception is
  // logged).
  void stop_node(NodeRuntime& n);
  void on_io_ready(size_t key, uint64_t watch_id, uint32_t ready);
  // A node's runtime for node `index` of `spec` (not created, not wired); and the consumer
  // lists, sources and watermark wiring of the whole table, from spec_.
  void init_runtime(NodeRuntime& rt, const GraphSpec& spec, size_t index);
  // What create() hands node `n` of `spec`.
  [[nodiscard]] sl_node_init node_init(NodeRuntime& n, const GraphSpec& spec) const;
  void wire();
  // destroy() of a created node (an escaped exception is logged); it is no longer created.
  void destroy_node(size_t index);
  // Live reload: a node whose instance is gone (its context stays valid: plugin threads
  // and queued posts may still hold it; ctx->node is k_retired).
  void retire_context(NodeRuntime& n);
  // Live reload: creates, past the end of the table, an instance of every node of `spec`
  // that keeps none (fresh_at: its index, by node of `spec`). On failure (returned, naming
  // the node) what it created is still there: drop_instances_from removes it.
  Status create_instances(const GraphSpec& spec,
                          const std::vector<std::optional<size_t>>& kept_from,
                          std::vector<size_t>& fresh_at);
  void drop_instances_from(size_t first);  // destroys and retires nodes_[first...]
  // Makes nodes_[from[j]] node j of `spec`; the nodes not named must be destroyed already
  // (their contexts retire). Then rewires the task and recounts back-pressure.
  void install_table(const GraphSpec& spec, const std::vector<size_t>& from);
  Status roll_back_reconfigure(const GraphSpec& previous,
                               const std::vector<std::optional<size_t>>& kept_from, Status why);
  void resume_after_reconfigure();  // polls, timers and watchers after a table change

  // Declared first, destroyed last: the nodes' destroy callbacks, and the release callbacks
  // of values they made, are plugin code, which this keeps loaded.
  std::shared_ptr<const PluginRegistry> registry_;
  // The plugins of the graphs a live reload replaced: nodes it kept run their code.
  std::vector<std::shared_ptr<const PluginRegistry>> earlier_registries_;
  const GraphSpec* spec_;  // replaced by a live reload
  TaskOptions options_;
  std::vector<NodeRuntime> nodes_;  // spec nodes in spec order, then capture nodes
  // ctx->node of a retired node, and index_of_key_ of its key.
  static constexpr size_t k_retired = static_cast<size_t>(-1);
  std::vector<size_t> index_of_key_;  // NodeRuntime::key -> index in nodes_, or k_retired
  std::vector<std::unique_ptr<sl_context>> retired_contexts_;
  // Between prepare_reconfigure and commit/abort: the new instances sit at the end of
  // nodes_, from first_fresh on (fresh_at: their index, by node of next).
  struct Reconfigure {
    const GraphSpec* next = nullptr;
    std::vector<std::optional<size_t>> kept_from;
    std::vector<size_t> fresh_at;
    size_t first_fresh = 0;
  };
  std::optional<Reconfigure> reconfigure_;
  std::vector<size_t> order_;  // creation / finish order (topological)
  std::vector<size_t> sources_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  boost::asio::steady_timer wakeup_;
  TimerQueue timers_;
  IoWatches io_watches_{
      io_, [this](size_t node, uint64_t id, uint32_t ready) { on_io_ready(node, id, ready); }};
  std::optional<Status> failure_;
  std::atomic<bool> accepting_posts_{true};
  // 1 + the node whose callback runs now (innermost), 0 between callbacks. Written
  // by the task thread only (a plain relaxed store per callback), read by the daemon.
  std::atomic<uint32_t> in_callback_{0};
  bool poll_scheduled_ = false;
  bool draining_ = false;
  bool started_ = false;
  size_t next_source_ = 0;  // round-robin start
  // See lua(). Destroyed after ~Task's body, where the nodes release their functions.
  std::unique_ptr<lua::LuaRuntime> lua_;

  // The running checkpoint epoch (executor/task_epoch.cc); sources are not
  // polled, and the timers, io readiness and posts of non-sink nodes are held
  // while it is set: nothing may reach the sinks between prepare and snapshot.
  struct Epoch {
    uint64_t epoch = 0;
    bool final = false;
    bool at_end = false;           // began while the task held its ended input
    bool snapshotted = false;      // done() ran: waiting for end_checkpoint
    bool in_prepare_loop = false;  // answers inside prepare do not snapshot yet
    size_t waiting = 0;            // sinks that have not answered
    std::vector<bool> asked;       // by node: prepare called, answer pending
    std::vector<std::pair<size_t, uint64_t>> held_timers;  // (node key, timer id)
    // on_io and posted callbacks of non-sink nodes, in arrival order, run after the epoch.
    std::vector<std::function<void()>> held_callbacks;
    EpochDone done;
  };
  std::optional<Epoch> epoch_;
  void maybe_snapshot();
  // hold_end_of_input (task_epoch.cc): the callback, and whether the input is held now (its
  // last source said SL_SOURCE_DONE and is not ended yet).
  std::function<void()> end_reached_;
  bool end_held_ = false;
  // Whether to hold source `node`'s end (its last live source, exhausted, with a hold set);
  // when true the hold has begun.
  bool hold_end(size_t node);
  // After the epoch that snapshotted the held end: the sources end, the graph drains.
  void end_held_input(uint64_t epoch, bool stored);

  // Event time (executor/task_watermarks.cc): which inputs carry watermarks (after the
  // consumers are known); consumer `c`'s input watermark rose to `watermark_ns` (its
  // on_watermark, or forwarding); the minimum over a node's inputs.
  void wire_watermarks();
  sl_status raise_input_watermark(const Consumer& c, int64_t watermark_ns);
  [[nodiscard]] static int64_t input_watermark(const NodeRuntime& n);

  // Key groups (executor/task_key_groups.cc).
  KeyGroupDirectory* key_groups_ = nullptr;
  GroupClaims claims_;
  std::set<size_t> assigned_once_;  // grouped sources past their first assignment
  std::map<size_t, std::vector<size_t>> keyed_reach_;  // source -> keyed nodes downstream
  const std::vector<size_t>& keyed_reach(size_t source);
  // restore_group / drop_group on `node`; a failure fails the task.
  sl_status call_restore_group(size_t node, uint32_t group, const Value* state);
  sl_status call_drop_group(size_t node, uint32_t group);
  void stop_after_final_checkpoint();
};

template <class F>
sl_status Task::call_guarded(size_t node, F&& call) {
  const uint32_t outer = in_callback_.load(std::memory_order_relaxed);
  in_callback_.store(static_cast<uint32_t>(node) + 1, std::memory_order_relaxed);
  const sl_status status = call_plugin(nodes_[node].error, std::forward<F>(call));
  in_callback_.store(outer, std::memory_order_relaxed);
  return status;
}

template <class F>
sl_status Task::invoke(size_t node, const char* what, F&& call) {
  sl_status status = call_guarded(node, std::forward<F>(call));
  if (status != SL_OK && status != SL_CANCELLED) fail(node, what, status);
  return status;
}

}  // namespace sluice::host
