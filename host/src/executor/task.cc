#include "executor/task.hpp"

#include "common/log_fields.hpp"
#include "executor/host_api.hpp"
#include "executor/internal_nodes.hpp"
#include "lua/lua_runtime.hpp"

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace sluice::host {

Task::Task(const GraphSpec& spec, TaskOptions options)
    : registry_(spec.registry), spec_(&spec), options_(options), wakeup_(io_) {
  nodes_.reserve(spec.nodes.size() + 8);
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    NodeRuntime& rt = nodes_.emplace_back();
    init_runtime(rt, spec, i);
    *rt.ctx = {this, i};
    rt.key = i;
    index_of_key_.push_back(i);
  }
  wire();
}

void Task::init_runtime(NodeRuntime& rt, const GraphSpec& spec, size_t index) {
  const NodeSpec& n = spec.nodes[index];
  rt.id = n.id;
  rt.type = n.type;
  rt.role = n.role;
  rt.vt = &n.info->vtable;
  rt.config = n.config;
  rt.input_count = static_cast<uint32_t>(n.inputs.size());
  rt.on_error = n.on_error;
  rt.input_full.assign(n.inputs.size(), false);
  rt.side_consumers.resize(n.info->side_outputs.size());
  for (const InputRef& ref : n.inputs) rt.input_ids.push_back({ref.id.data(), ref.id.size()});
}

void Task::wire() {
  const GraphSpec& spec = *spec_;
  sources_.clear();
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    NodeRuntime& rt = nodes_[i];
    rt.consumers.clear();
    rt.dead_letter_consumers.clear();
    for (auto& side : rt.side_consumers) side.clear();
    rt.input_only_sources.reset();
    rt.upstream_sources.reset();
  }
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeSpec& n = spec.nodes[i];
    for (uint32_t k = 0; k < n.inputs.size(); ++k) {
      auto from = spec.producer_of(n.inputs[k]);
      if (!from) continue;
      NodeRuntime& producer = nodes_[*from];
      switch (n.inputs[k].port) {
        case OutputPort::main: producer.consumers.push_back({i, k}); break;
        case OutputPort::dead_letter: producer.dead_letter_consumers.push_back({i, k}); break;
        case OutputPort::side:  // the validator checked the index against the type
          producer.side_consumers.at(n.inputs[k].side).push_back({i, k});
          break;
      }
    }
    if (n.role == SL_ROLE_SOURCE) sources_.push_back(i);
  }
  order_ = spec.topo_order;
  wire_watermarks();
}

Task::~Task() {
  abort_reconfigure();       // new instances a live reload prepared and never committed
  io_watches_.cancel_all();  // release the plugins' descriptors before they close them
  abort_nodes();
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) destroy_node(*it);
}

void Task::destroy_node(size_t index) {
  NodeRuntime& n = nodes_[index];
  if (n.created && n.vt->destroy &&
      call_guarded(index, [&] { return (n.vt->destroy(n.self), SL_OK); }) != SL_OK) {
    spdlog::error("node '{}' ({}): destroy let an exception escape: {}", n.id, n.type, n.error);
  }
  n.created = false;
}

Status Task::replace_with_injector(std::string_view id) {
  auto index = spec_->index_of(id);
  if (!index || nodes_[*index].role != SL_ROLE_SOURCE) {
    return Status(SL_NOT_FOUND, fmt::format("no source '{}' in the pipeline", id));
  }
  NodeRuntime& n = nodes_[*index];
  n.vt = injected_source_type();
  n.injected = true;
  n.source_state = SL_SOURCE_IDLE;
  return Status::ok();
}

void Task::replace_sinks_with_discard() {
  for (size_t i = 0; i < spec_->nodes.size(); ++i) {
    if (nodes_[i].role == SL_ROLE_SINK) nodes_[i].vt = discard_sink_type();
  }
}

Result<size_t> Task::attach_capture(std::string_view id) {
  // A node's main output, "ID.dead_letter", or "ID.NAME": side output NAME of node ID.
  auto index = spec_->index_of(id);
  bool dead_letters = false;
  std::optional<uint32_t> side;
  if (!index) {
    const size_t dot = id.rfind('.');
    const auto base =
        dot == std::string_view::npos ? std::nullopt : spec_->index_of(id.substr(0, dot));
    if (!base) return Status(SL_NOT_FOUND, fmt::format("no node '{}' in the pipeline", id));
    dead_letters =
        dead_letter_producer(id).has_value() && nodes_[*base].on_error == ErrorPolicy::dead_letter;
    if (!dead_letters) side = spec_->nodes[*base].info->side_output(id.substr(dot + 1));
    if (!dead_letters && !side) {
      return Status(SL_NOT_FOUND, fmt::format("no node '{}' in the pipeline", id));
    }
    index = base;
  }
  if (!dead_letters && !side && nodes_[*index].role == SL_ROLE_SINK) {
    // A sink has no output: capture what reaches it instead.
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("node '{}' is a sink and emits nothing; capture its input node", id));
  }
  size_t capture = nodes_.size();
  NodeRuntime& c = nodes_.emplace_back();
  *c.ctx = {this, capture};
  c.key = index_of_key_.size();
  index_of_key_.push_back(capture);
  c.id = fmt::format("capture:{}", id);
  c.type = "capture";
  c.role = SL_ROLE_SINK;
  c.vt = capture_sink_type();
  c.input_count = 1;
  c.input_full.assign(1, false);
  c.input_ids.push_back({spec_->nodes[*index].id.data(), spec_->nodes[*index].id.size()});
  NodeRuntime& producer = nodes_[*index];
  (side           ? producer.side_consumers.at(*side)
   : dead_letters ? producer.dead_letter_consumers
                  : producer.consumers)
      .push_back({capture, 0});
  c.input_watermarks.assign(1, SL_NO_WATERMARK);
  c.input_carries.assign(1, !side && !dead_letters && producer.output_carries);
  c.any_input_carries = c.input_carries[0];
  order_.push_back(capture);
  return capture;
}

void Task::fail(size_t node, const char* what, sl_status status) {
  if (failure_) return;  // the first failure is the one reported; callers propagate it
  NodeRuntime& n = nodes_[node];
  n.counters->errors.fetch_add(1, std::memory_order_relaxed);
  std::string message = n.error.empty() ? "(no message)" : n.error;
  abandon(Status(status, fmt::format("node '{}' ({}): {} failed: {}: {}", n.id, n.type, what,
                                     sl_status_name(status), message)));
}

void Task::abandon(Status why) {
  if (failure_) return;
  failure_ = std::move(why);
  accepting_posts_ = false;
  guard_.reset();
  io_.stop();
}

sl_node_init Task::node_init(NodeRuntime& n, const GraphSpec& spec) const {
  sl_node_init init{};
  init.struct_size = sizeof init;
  init.host = host_api_table();
  init.ctx = n.ctx.get();
  init.config = n.config.raw();
  init.input_count = n.input_count;
  init.task_index = options_.task_index;
  init.task_count = options_.task_count;
  init.pipeline = {spec.name.data(), spec.name.size()};
  init.checkpointing = spec.checkpoint.enabled ? 1 : 0;
  init.input_ids = n.input_ids.empty() ? nullptr : n.input_ids.data();
  return init;
}

Status Task::create() {
  for (size_t i : order_) {
    NodeRuntime& n = nodes_[i];
    const sl_node_init init = node_init(n, *spec_);
    void* self = nullptr;
    if (invoke(i, "create", [&] { return n.vt->create(&init, &self); }) != SL_OK) {
      return *failure_;
    }
    n.self = self;
    n.created = true;
  }
  return Status::ok();
}

Status Task::start() {
  for (size_t i : order_) {
    NodeRuntime& n = nodes_[i];
    if (!n.vt->start) continue;
    if (invoke(i, "start", [&] { return n.vt->start(n.self, n.ctx.get()); }) != SL_OK)
      return *failure_;
  }
  started_ = true;
  return Status::ok();
}

sl_status Task::emit(size_t from, const sl_message* messages, size_t count) {
  if (failure_) return SL_CANCELLED;
  if (count == 0) return SL_OK;
  const uint64_t bytes = payload_bytes(messages, count);
  NodeCounters& counters = *nodes_[from].counters;
  NodeCounters::add(counters.messages_out, count);
  NodeCounters::add(counters.bytes_out, bytes);
  return deliver(from, nodes_[from].consumers, messages, count, bytes);
}

sl_status Task::deliver(size_t from, const std::vector<Consumer>& consumers,
                        const sl_message* messages, size_t count, uint64_t bytes) {
  (void)from;
  for (const Consumer& c : consumers) {
    if (nodes_[c.node].ended) continue;
    if (sl_status status = deliver_to(c, messages, nullptr, count, bytes); status != SL_OK) {
      return status;
    }
  }
  return SL_OK;
}

sl_status Task::deliver_to(const Consumer& c, const sl_message* messages, const sl_value* values,
                           size_t count, uint64_t bytes) {
  NodeRuntime& dst = nodes_[c.node];
  NodeCounters::add(dst.counters->messages_in, count);
  NodeCounters::add(dst.counters->bytes_in, bytes);
  // A sample of the calls is timed (NodeCounters::sample_latency): two clock reads per
  // call were 8-11 % of a pipeline that emits per element.
  const bool timed = dst.counters->sample_latency();
  const auto t0 =
      timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  sl_status status = SL_OK;
  if (chainable(dst)) {
    status = run_chain(c.node, messages, values, count, bytes);
  } else {
    const sl_batch batch{sizeof(sl_batch), sizeof(sl_message), messages, count};
    status = dst.on_error == ErrorPolicy::fail
                 ? invoke(c.node, "process",
                          [&] { return dst.vt->process(dst.self, dst.ctx.get(), c.input, &batch); })
                 : deliver_with_policy(c, batch);
  }
  if (timed) {
    dst.counters->record_latency(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count()));
  }
  return status;
}

sl_status Task::deliver_with_policy(const Consumer& to, const sl_batch& batch) {
  NodeRuntime& dst = nodes_[to.node];
  for (size_t i = 0; i < batch.count; ++i) {
    sl_batch one{sizeof(sl_batch), sizeof(sl_message), &batch.messages[i], 1};
    dst.error.clear();
    sl_status status = call_guarded(
        to.node, [&] { return dst.vt->process(dst.self, dst.ctx.get(), to.input, &one); });
    if (status == SL_OK) continue;
    // A failure downstream of this node was already reported (and failed the
    // task): it is not this node's message to skip.
    if (failure_ || status == SL_CANCELLED) return failure_ ? SL_CANCELLED : status;
    status = handle_failed_message(to.node, batch.messages[i], status);
    if (status != SL_OK) return status;
  }
  return SL_OK;
}

sl_status Task::handle_failed_message(size_t node, const sl_message& message, sl_status status) {
  NodeRuntime& n = nodes_[node];
  n.counters->errors.fetch_add(1, std::memory_order_relaxed);
  std::string reason =
      fmt::format("{}: {}", sl_status_name(status), n.error.empty() ? "(no message)" : n.error);
  if (n.on_error == ErrorPolicy::skip) {
    uint64_t skipped = n.counters->skipped.fetch_add(1, std::memory_order_relaxed) + 1;
    // Logged at 1, 2, 4, 8, ... so a flood of bad input cannot flood the log.
    if ((skipped & (skipped - 1)) == 0) {
      log_with(spdlog::level::warn, {{"node", n.id}, {"type", n.type}},
               "node '{}' ({}): skipped a message it failed on ({} skipped so far): {}", n.id,
               n.type, skipped, reason);
    }
    return SL_OK;
  }
  // Dead letter: the original message, with the error added to its headers.
  std::vector<std::pair<std::string, Value>> headers;
  Value original = Value::borrow(message.headers);
  if (original.is_object()) {
    for (size_t k = 0; k < original.size(); ++k) {
      headers.emplace_back(std::string(original.key_at(k)), original.at(k));
    }
  }
  auto set_header = [&](std::string_view name, std::string_view text) {
    auto it = std::find_if(headers.begin(), headers.end(),
                           [&](const auto& h) { return h.first == name; });
    Value v = Value::string(text);
    if (it == headers.end()) {
      headers.emplace_back(std::string(name), std::move(v));
    } else {
      it->second = std::move(v);
    }
  };
  set_header("sluice.error", reason);
  set_header("sluice.error.node", n.id);
  Value header_object = Value::object(headers);
  sl_message dead = message;
  dead.headers = header_object.raw();
  n.counters->dead_letters.fetch_add(1, std::memory_order_relaxed);
  return deliver(node, n.dead_letter_consumers, &dead, 1, payload_bytes(&dead, 1));
}

sl_status Task::emit_values(size_t from, const sl_value* values, size_t count) {
  const std::vector<Consumer>& consumers = nodes_[from].consumers;
  if (consumers.size() == 1 && !nodes_[consumers.front().node].ended &&
      chainable(nodes_[consumers.front().node])) {
    // Straight into the chain: no messages for it to take the values back out of.
    if (failure_) return SL_CANCELLED;
    if (count == 0) return SL_OK;
    const uint64_t bytes = payload_bytes(values, count);
    NodeCounters::add(nodes_[from].counters->messages_out, count);
    NodeCounters::add(nodes_[from].counters->bytes_out, bytes);
    return deliver_to(consumers.front(), nullptr, values, count, bytes);
  }
  // Per-node scratch: no other emit of this node can run while this one does
  // (the graph is acyclic), so the buffer is never clobbered by nesting.
  std::vector<sl_message>& scratch = nodes_[from].scratch;
  scratch.resize(count);
  for (size_t i = 0; i < count; ++i) {
    scratch[i] = sl_message{values[i], sl_null(), sl_null(), SL_NO_TIMESTAMP, 0};
  }
  return emit(from, scratch.data(), count);
}

sl_status Task::timer_start(size_t node, uint64_t timer_id, int64_t delay_ns) {
  if (nodes_[node].ended) return SL_FAILED_PRECONDITION;
  timers_.arm(nodes_[node].key, timer_id,
              options_.clock->monotonic_ns() + std::max<int64_t>(delay_ns, 0));
  rearm_wakeup();
  return SL_OK;
}

void Task::timer_cancel(size_t node, uint64_t timer_id) {
  timers_.cancel(nodes_[node].key, timer_id);
  rearm_wakeup();
}

namespace {
// The argument of an accepted post_owned: released when the last copy of the handler that
// carries it goes, whether the handler ran fn or was dropped unrun (a failed task, an
// epoch's held callbacks never replayed, io_context destroyed with the handler queued).
struct PostedArg {
  void* arg;
  sl_release_fn release;
  PostedArg(void* a, sl_release_fn r) : arg(a), release(r) {}
  PostedArg(const PostedArg&) = delete;
  PostedArg& operator=(const PostedArg&) = delete;
  ~PostedArg() {
    if (release) release(arg);
  }
};
}  // namespace

sl_status Task::post(sl_context* ctx, sl_task_fn fn, void* arg, sl_release_fn release) {
  if (!accepting_posts_) return SL_CANCELLED;
  // Shared, not unique: held callbacks are std::functions, which must be copyable.
  auto owned = std::make_shared<PostedArg>(arg, release);
  // The node's index is read when the handler runs, on the task thread: a live reload may
  // have moved the node meanwhile (or retired it: then the post is dropped, arg released).
  boost::asio::post(io_, [this, ctx, fn, owned] {
    if (failure_ || ctx->node == k_retired) return;
    if (epoch_ && nodes_[ctx->node].role != SL_ROLE_SINK) {
      // A posted callback may emit (core_ops' buffer drains from one): held, as timers are.
      epoch_->held_callbacks.emplace_back([this, ctx, fn, owned] {
        if (!failure_ && ctx->node != k_retired) fn(ctx, owned->arg);
      });
      return;
    }
    fn(ctx, owned->arg);
  });
  return SL_OK;
}

void Task::wake(sl_context* ctx) {
  if (!accepting_posts_) return;
  boost::asio::post(io_, [this, ctx] {
    if (ctx->node == k_retired) return;
    NodeRuntime& n = nodes_[ctx->node];
    if (!n.ended && n.source_state == SL_SOURCE_IDLE && !n.injected)
      n.source_state = SL_SOURCE_MORE;
    schedule_poll();
  });
}

namespace {
bool any_full(const NodeRuntime& n) {
  return n.backpressured ||
         std::find(n.input_full.begin(), n.input_full.end(), true) != n.input_full.end();
}
int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void Task::note_backpressure(NodeRuntime& n, bool was_full) {
  bool full = any_full(n);
  if (full == was_full) return;
  NodeCounters& c = *n.counters;
  if (full) {
    c.backpressure_since_ns.store(steady_now_ns(), std::memory_order_relaxed);
  } else {
    int64_t since = c.backpressure_since_ns.exchange(0, std::memory_order_relaxed);
    if (since > 0) {
      c.backpressure_ns.fetch_add(
          static_cast<uint64_t>(std::max<int64_t>(steady_now_ns() - since, 0)),
          std::memory_order_relaxed);
    }
  }
}

void Task::set_backpressure(size_t node, bool full) {
  NodeRuntime& n = nodes_[node];
  if (n.backpressured == full) return;
  const bool was_full = any_full(n);
  n.backpressured = full;
  note_backpressure(n, was_full);
  // Only the sources that feed this node stop (docs/ARCHITECTURE.md, "Back-pressure"): one
  // that feeds it and another branch too stops as well, so memory stays bounded; a source
  // on an unrelated branch keeps its rate.
  for (size_t source : upstream_sources(node)) hold_source(source, full);
  if (!full) schedule_poll();
}

void Task::hold_source(size_t node, bool hold) {
  NodeRuntime& s = nodes_[node];
  if (hold) {
    ++s.paused;
  } else if (s.paused > 0) {
    --s.paused;
  }
  s.counters->held.store(s.paused, std::memory_order_relaxed);
}

const std::vector<size_t>& Task::upstream_sources(size_t node) {
  NodeRuntime& n = nodes_[node];
  if (n.upstream_sources) return *n.upstream_sources;
  std::vector<size_t> found;
  if (node < spec_->nodes.size()) {
    std::vector<bool> seen(spec_->nodes.size(), false);
    std::vector<size_t> stack{node};
    while (!stack.empty()) {
      const size_t i = stack.back();
      stack.pop_back();
      if (seen[i]) continue;
      seen[i] = true;
      if (spec_->nodes[i].role == SL_ROLE_SOURCE) found.push_back(i);
      for (const InputRef& ref : spec_->nodes[i].inputs) {
        if (auto p = spec_->producer_of(ref)) stack.push_back(*p);
      }
    }
  } else {
    // A capture node (test mode) is not in the spec: it holds every source, as a full sink
    // always did before back-pressure was per branch.
    found = sources_;
  }
  std::sort(found.begin(), found.end());
  n.upstream_sources = std::move(found);
  return *n.upstream_sources;
}

void Task::set_input_backpressure(size_t node, uint32_t input, bool full) {
  NodeRuntime& n = nodes_[node];
  if (input >= n.input_full.size() || n.input_full[input] == full) return;
  const bool was_full = any_full(n);
  n.input_full[input] = full;
  note_backpressure(n, was_full);
  for (size_t source : input_only_sources(node)[input]) hold_source(source, full);
  if (!full) schedule_poll();
}

const std::vector<std::vector<size_t>>& Task::input_only_sources(size_t node) {
  NodeRuntime& n = nodes_[node];
  if (n.input_only_sources) return *n.input_only_sources;
  // Sources upstream of each input, by walking the spec's edges backwards.
  std::vector<std::vector<size_t>> upstream(n.input_count);
  if (node < spec_->nodes.size()) {
    for (uint32_t k = 0; k < n.input_count; ++k) {
      std::vector<bool> seen(spec_->nodes.size(), false);
      std::vector<size_t> stack;
      if (auto p = spec_->producer_of(spec_->nodes[node].inputs[k])) stack.push_back(*p);
      while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        if (seen[i]) continue;
        seen[i] = true;
        if (spec_->nodes[i].role == SL_ROLE_SOURCE) upstream[k].push_back(i);
        for (const InputRef& ref : spec_->nodes[i].inputs) {
          if (auto p = spec_->producer_of(ref)) stack.push_back(*p);
        }
      }
    }
  }
  // Keep only sources that feed no other input: pausing a source that also
  // feeds a lagging input would stop the node from ever draining.
  std::vector<std::vector<size_t>> only(n.input_count);
  for (uint32_t k = 0; k < n.input_count; ++k) {
    for (size_t s : upstream[k]) {
      bool elsewhere = false;
      for (uint32_t j = 0; j < n.input_count && !elsewhere; ++j) {
        elsewhere =
            j != k && std::find(upstream[j].begin(), upstream[j].end(), s) != upstream[j].end();
      }
      if (!elsewhere) only[k].push_back(s);
    }
  }
  n.input_only_sources = std::move(only);
  return *n.input_only_sources;
}

void Task::schedule_poll() {
  if (poll_scheduled_ || failure_) return;
  poll_scheduled_ = true;
  boost::asio::post(io_, [this] {
    poll_scheduled_ = false;
    poll_round();
  });
}

void Task::poll_round() {
  if (failure_) return;
  bool any_more = false;
  // Rotate the starting source so one busy source cannot starve the others.
  for (size_t k = 0; k < sources_.size(); ++k) {
    size_t i = sources_[(next_source_ + k) % sources_.size()];
    NodeRuntime& n = nodes_[i];
    if (!pollable(n)) continue;
    int32_t state = SL_SOURCE_MORE;
    sl_status status = invoke(
        i, "poll", [&] { return n.vt->poll(n.self, n.ctx.get(), options_.batch_size, &state); });
    if (failure_) return;
    if (status == SL_CANCELLED) state = SL_SOURCE_DONE;
    n.source_state = state;
    if (state == SL_SOURCE_DONE && hold_end(i)) continue;
    if (state == SL_SOURCE_DONE) {
      end_node(i);
      if (failure_) return;
    } else if (state == SL_SOURCE_MORE) {
      any_more = true;
    }
  }
  if (!sources_.empty()) next_source_ = (next_source_ + 1) % sources_.size();
  // Yield to timers and posted work between rounds instead of looping here.
  if (any_more) schedule_poll();
  on_state_change();
}

void Task::end_node(size_t index) {
  NodeRuntime& n = nodes_[index];
  if (n.ended) return;
  // A source ends (exhausted, or the task drains): it may still emit what it holds
  // (sluice.h: finish). Operators and sinks get finish from their last input's end below.
  if (n.role == SL_ROLE_SOURCE && n.created && n.vt->finish &&
      invoke(index, "finish", [&] { return n.vt->finish(n.self, n.ctx.get()); }) != SL_OK) {
    return;
  }
  n.ended = true;
  timers_.cancel_node(n.key);
  io_watches_.cancel_node(n.key);
  // Every output ends with the node: its readers, its dead-letter readers, its side outputs'.
  // Its output watermark becomes SL_WATERMARK_END (docs/EVENT_TIME.md, "End of input"): nothing
  // more comes, so each reader's windows close before its on_input_end and finish.
  n.watermark_out = SL_WATERMARK_END;
  n.counters->watermark_ns.store(SL_WATERMARK_END, std::memory_order_relaxed);
  std::vector<const std::vector<Consumer>*> outputs{&n.consumers, &n.dead_letter_consumers};
  for (const auto& side : n.side_consumers) outputs.push_back(&side);
  for (const auto* consumers : outputs) {
    for (const Consumer& c : *consumers) {
      NodeRuntime& dst = nodes_[c.node];
      if (dst.ended) continue;
      if (raise_input_watermark(c, SL_WATERMARK_END) != SL_OK) return;
      ++dst.inputs_ended;
      if (dst.vt->on_input_end && invoke(c.node, "on_input_end", [&] {
                                    return dst.vt->on_input_end(dst.self, dst.ctx.get(), c.input);
                                  }) != SL_OK) {
        return;
      }
      if (dst.inputs_ended == dst.input_count) {
        if (dst.vt->finish && invoke(c.node, "finish", [&] {
                                return dst.vt->finish(dst.self, dst.ctx.get());
                              }) != SL_OK) {
          return;
        }
        end_node(c.node);
        if (failure_) return;
      }
    }
  }
}

Result<Task::NodeStates> Task::snapshot_states() {
  NodeStates states;
  for (size_t i : order_) {
    NodeRuntime& n = nodes_[i];
    if (!n.created || !(n.vt->flags & SL_NODE_STATEFUL) || !n.vt->snapshot) continue;
    sl_value out = sl_null();
    if (invoke(i, "snapshot", [&] { return n.vt->snapshot(n.self, n.ctx.get(), &out); }) != SL_OK) {
      return *failure_;
    }
    states.emplace_back(n.id, Value::adopt(out));
  }
  return states;
}

Status Task::restore_states(const NodeStates& states) {
  for (const auto& [id, state] : states) {
    auto index = spec_->index_of(id);
    if (!index) return Status(SL_NOT_FOUND, fmt::format("no node '{}' to restore", id));
    NodeRuntime& n = nodes_[*index];
    if (!n.vt->restore) {
      return Status(SL_FAILED_PRECONDITION,
                    fmt::format("node '{}' ({}) cannot restore state", id, n.type));
    }
    // Not captured as a structured binding: clang before 16 cannot (the fuzz build's).
    const sl_value raw = state.raw();
    if (invoke(*index, "restore", [&] { return n.vt->restore(n.self, n.ctx.get(), raw); }) !=
        SL_OK) {
      return *failure_;
    }
  }
  return Status::ok();
}

bool Task::complete() const {
  return std::all_of(nodes_.begin(), nodes_.end(), [](const NodeRuntime& n) { return n.ended; });
}

void Task::on_state_change() {
  if (!failure_ && complete()) {
    accepting_posts_ = false;
    guard_.reset();
    wakeup_.cancel();
    io_.stop();
  }
}

void Task::fire_due_timers(int64_t now) {
  while (!failure_) {
    auto due = timers_.pop_due(now);
    if (!due) break;
    const size_t node = index_of_key_[due->node];
    if (node == k_retired) continue;
    NodeRuntime& n = nodes_[node];
    if (n.ended) continue;
    if (epoch_ && n.role != SL_ROLE_SINK) {
      // A checkpoint is preparing: nothing may reach the sinks until the
      // snapshot (task_epoch.cc re-arms these afterwards).
      epoch_->held_timers.emplace_back(n.key, due->timer_id);
      continue;
    }
    if (n.vt->on_timer) {
      invoke(node, "on_timer", [&] { return n.vt->on_timer(n.self, n.ctx.get(), due->timer_id); });
      if (failure_ || n.ended) continue;
    }
    // sluice.h (SL_SOURCE_IDLE): an idle source is polled again after wake() or when one
    // of its timers fires.
    if (n.role == SL_ROLE_SOURCE && n.source_state == SL_SOURCE_IDLE && !n.injected) {
      n.source_state = SL_SOURCE_MORE;
      schedule_poll();
    }
  }
}

void Task::rearm_wakeup() {
  if (options_.clock->is_virtual()) return;
  auto next = timers_.next_deadline();
  if (!next) return;
  wakeup_.expires_at(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(*next)));
  wakeup_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed or cancelled
    fire_due_timers(options_.clock->monotonic_ns());
    rearm_wakeup();
    on_state_change();
  });
}

Status Task::run() {
  guard_.emplace(io_.get_executor());
  schedule_poll();
  rearm_wakeup();
  boost::asio::post(io_, [this] { on_state_change(); });
  io_.run();
  if (failure_) return *failure_;
  return Status::ok();
}

void Task::request_stop() {
  boost::asio::post(io_, [this] {
    if (draining_ || failure_) return;
    draining_ = true;
    spdlog::info("task {}: stopping: ending sources and draining", options_.task_index);
    for (size_t i : sources_) {
      end_node(i);
      if (failure_) return;
    }
    on_state_change();
  });
}

void Task::set_source_paused(size_t node, bool paused) {
  boost::asio::post(io_, [this, node, paused] {
    if (node >= nodes_.size() || nodes_[node].role != SL_ROLE_SOURCE) return;
    NodeRuntime& n = nodes_[node];
    if (n.operator_paused == paused) return;
    n.operator_paused = paused;
    spdlog::info("task {}: source '{}' {}", options_.task_index, n.id,
                 paused ? "paused by the operator" : "resumed by the operator");
    if (!paused) schedule_poll();
  });
}

std::string_view Task::node_in_callback() const {
  const uint32_t node = in_callback_.load(std::memory_order_relaxed);
  // Ids live in the spec (capture nodes past it have none worth naming).
  if (node == 0 || node > spec_->nodes.size()) return {};
  return spec_->nodes[node - 1].id;
}

bool Task::post_host(std::function<void()> fn) {
  if (!accepting_posts_) return false;
  boost::asio::post(io_, std::move(fn));
  return true;
}

void Task::abort_nodes() {
  // After a failure, give every live node a chance to release external
  // resources; finish() is not called because the graph is not drained.
  if (!failure_) return;
  for (size_t i : order_) stop_node(nodes_[i]);
}

void Task::stop_node(NodeRuntime& n) {
  if (!n.created || n.ended || !n.vt->stop) return;
  try {
    n.vt->stop(n.self, n.ctx.get());
  } catch (...) {
    spdlog::error("node '{}' ({}): stop let an exception escape", n.id, n.type);
  }
}

// -- test mode ---------------------------------------------------------------

Status Task::inject(std::string_view source_id, const Value& value,
                    std::optional<int64_t> timestamp_ns, uint64_t key_group) {
  auto index = spec_->index_of(source_id);
  if (!index || !nodes_[*index].injected) {
    return Status(SL_NOT_FOUND, fmt::format("'{}' is not an injected source", source_id));
  }
  if (nodes_[*index].ended) {
    return Status(SL_FAILED_PRECONDITION, fmt::format("source '{}' has already ended", source_id));
  }
  if (timestamp_ns || key_group != 0) {
    // As a partitioned source that stamps its records would emit it.
    sl_message m{};
    m.value = value.raw();
    m.timestamp_ns = timestamp_ns.value_or(SL_NO_TIMESTAMP);
    m.key_group = key_group;
    emit(*index, &m, 1);
  } else {
    sl_value raw = value.raw();
    emit_values(*index, &raw, 1);
  }
  if (failure_) return *failure_;
  return run_until_idle();
}

Status Task::run_until_idle() {
  while (!failure_) {
    io_.restart();
    size_t handled = io_.poll();
    bool ready = std::any_of(sources_.begin(), sources_.end(),
                             [&](size_t i) { return pollable(nodes_[i]); });
    if (ready) {
      schedule_poll();
      continue;
    }
    if (handled == 0) break;
  }
  if (failure_) return *failure_;
  return Status::ok();
}

Status Task::advance_to(VirtualClock& clock, int64_t now_ns) {
  while (!failure_) {
    auto next = timers_.next_deadline();
    if (!next || *next > now_ns) break;
    clock.set(std::max(*next, clock.monotonic_ns()));
    fire_due_timers(clock.monotonic_ns());
    SLUICE_RETURN_IF_ERROR(run_until_idle());
  }
  if (failure_) return *failure_;
  clock.set(std::max(now_ns, clock.monotonic_ns()));
  return run_until_idle();
}

Status Task::end_sources() {
  SLUICE_RETURN_IF_ERROR(run_until_idle());
  for (size_t i : sources_) {
    end_node(i);
    if (failure_) return *failure_;
  }
  return run_until_idle();
}

sl_status Task::io_watch(size_t node, int fd, uint32_t events, uint64_t watch_id) {
  NodeRuntime& n = nodes_[node];
  if (failure_) return SL_CANCELLED;
  if (n.ended) return SL_FAILED_PRECONDITION;
  if (!n.vt->on_io) {
    n.error = "io_watch: the node type has no on_io callback";
    return SL_FAILED_PRECONDITION;
  }
  return io_watches_.watch(n.key, fd, events, watch_id, &n.error);
}

void Task::io_unwatch(size_t node, uint64_t watch_id) {
  io_watches_.unwatch(nodes_[node].key, watch_id);
}

void Task::on_io_ready(size_t key, uint64_t watch_id, uint32_t ready) {
  const size_t node = index_of_key_[key];
  if (node == k_retired) return;
  NodeRuntime& n = nodes_[node];
  if (failure_ || n.ended) return;
  if (epoch_ && n.role != SL_ROLE_SINK) {
    // A network source emits from on_io: held until the snapshot, as timers are. The
    // watch is one-shot, so it stays disarmed meanwhile (no busy loop on a ready fd).
    epoch_->held_callbacks.emplace_back(
        [this, key, watch_id, ready] { on_io_ready(key, watch_id, ready); });
    return;
  }
  invoke(node, "on_io", [&] { return n.vt->on_io(n.self, n.ctx.get(), watch_id, ready); });
  if (failure_ || n.ended) return;
  // As after a timer: an idle source is polled again after its on_io.
  if (n.role == SL_ROLE_SOURCE && n.source_state == SL_SOURCE_IDLE && !n.injected) {
    n.source_state = SL_SOURCE_MORE;
    schedule_poll();
  }
}

lua::LuaRuntime& Task::lua() {
  if (!lua_) lua_ = std::make_unique<lua::LuaRuntime>();
  return *lua_;
}

}  // namespace sluice::host
