// Event time on a task (docs/EVENT_TIME.md): watermarks flow with the data, depth-first as
// emit delivers messages, so a watermark never overtakes what was emitted before it; and
// side outputs ("ID.late"), which carry messages but no watermark.
#include "executor/task.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>

namespace sluice::host {

void Task::wire_watermarks() {
  // Topological order: a node's producers are settled before it.
  for (size_t i : order_) {
    const NodeSpec& spec = spec_->nodes[i];
    NodeRuntime& n = nodes_[i];
    // A node a live reload kept keeps its inputs' watermarks (its inputs did not change).
    if (n.input_watermarks.size() != spec.inputs.size()) {
      n.input_watermarks.assign(spec.inputs.size(), SL_NO_WATERMARK);
    }
    n.input_carries.assign(spec.inputs.size(), false);
    for (size_t k = 0; k < spec.inputs.size(); ++k) {
      const InputRef& ref = spec.inputs[k];
      auto from = spec_->producer_of(ref);
      n.input_carries[k] = from && ref.port == OutputPort::main && nodes_[*from].output_carries;
    }
    n.any_input_carries =
        std::find(n.input_carries.begin(), n.input_carries.end(), true) != n.input_carries.end();
    n.output_carries = (spec.info->flags & SL_NODE_WATERMARKS) != 0 || n.any_input_carries;
  }
}

int64_t Task::input_watermark(const NodeRuntime& n) {
  // Inputs with no watermark-making node upstream do not hold the others back; when no input
  // carries any, the node's event time ends with its inputs (each is SL_WATERMARK_END then).
  int64_t w = SL_WATERMARK_END;
  for (size_t k = 0; k < n.input_watermarks.size(); ++k) {
    if (n.input_carries[k] || !n.any_input_carries) w = std::min(w, n.input_watermarks[k]);
  }
  return w;
}

sl_status Task::emit_watermark(size_t from, int64_t watermark_ns) {
  if (failure_) return SL_CANCELLED;
  NodeRuntime& n = nodes_[from];
  if (watermark_ns <= n.watermark_out || n.ended) return SL_OK;  // watermarks only rise
  n.watermark_out = watermark_ns;
  n.counters->watermark_ns.store(watermark_ns, std::memory_order_relaxed);
  for (const Consumer& c : n.consumers) {
    if (sl_status status = raise_input_watermark(c, watermark_ns); status != SL_OK) return status;
  }
  return SL_OK;
}

sl_status Task::raise_input_watermark(const Consumer& c, int64_t watermark_ns) {
  NodeRuntime& dst = nodes_[c.node];
  if (dst.ended || watermark_ns <= dst.input_watermarks[c.input]) return SL_OK;
  dst.input_watermarks[c.input] = watermark_ns;
  const int64_t w = input_watermark(dst);
  if (w <= dst.watermark_in) return SL_OK;
  dst.watermark_in = w;
  // A sink has no output: it shows its input's watermark (with or without on_watermark).
  if (dst.role == SL_ROLE_SINK) dst.counters->watermark_ns.store(w, std::memory_order_relaxed);
  if (dst.vt->on_watermark) {
    return invoke(c.node, "on_watermark",
                  [&] { return dst.vt->on_watermark(dst.self, dst.ctx.get(), w); });
  }
  if (dst.role == SL_ROLE_SINK) return SL_OK;
  // The end of every input is forwarded when the node's own output ends (end_node), after
  // its finish, which may still emit.
  if (w == SL_WATERMARK_END) return SL_OK;
  return emit_watermark(c.node, w);
}

sl_status Task::emit_side(size_t from, uint32_t output, const sl_message* messages, size_t count) {
  if (failure_) return SL_CANCELLED;
  NodeRuntime& n = nodes_[from];
  if (output >= n.side_consumers.size()) {
    n.error = fmt::format("emit_side: no side output #{} (the type declares {})", output,
                          n.side_consumers.size());
    return SL_INVALID_ARGUMENT;
  }
  if (count == 0) return SL_OK;
  NodeCounters::add(n.counters->side_out[output], count);
  const auto& readers = n.side_consumers[output];
  if (readers.empty()) {
    // Counted above (sluice_node_late_total for "late"); logged at the 1st, 2nd, 4th...
    // message so that a busy late output cannot flood the log.
    const uint64_t before = n.side_dropped;
    n.side_dropped += count;
    if (std::bit_width(before) != std::bit_width(n.side_dropped)) {
      const std::string& name = spec_->nodes[from].info->side_outputs[output];
      spdlog::warn(
          "node '{}' ({}): {} message(s) on its output '{}.{}' dropped so far: no "
          "node reads it (add '{}.{}' to the inputs of a sink to keep them)",
          n.id, n.type, n.side_dropped, n.id, name, n.id, name);
    }
    return SL_OK;
  }
  return deliver(from, readers, messages, count, payload_bytes(messages, count));
}

}  // namespace sluice::host
