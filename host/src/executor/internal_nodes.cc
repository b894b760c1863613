#include "executor/internal_nodes.hpp"

#include "executor/task.hpp"

namespace sluice::host {
namespace {

sl_status create_nothing(const sl_node_init*, void** out_self) {
  *out_self = nullptr;
  return SL_OK;
}
void destroy_nothing(void*) {}

// The test driver emits on the injected source's behalf; polling finds nothing.
sl_status injected_poll(void*, sl_context*, uint32_t, int32_t* out_state) {
  *out_state = SL_SOURCE_IDLE;
  return SL_OK;
}

sl_status capture_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  NodeRuntime& n = ctx->task->node(ctx->node);
  for (size_t i = 0; i < batch->count; ++i) {
    n.captured.push_back(Value::borrow(sl_batch_at(batch, i)->value));
  }
  return SL_OK;
}

sl_node_type make_type(int32_t role, const char* name) {
  sl_node_type t{};
  t.struct_size = sizeof t;
  t.role = role;
  t.name = name;
  t.create = create_nothing;
  t.destroy = destroy_nothing;
  t.min_inputs = role == SL_ROLE_SOURCE ? 0 : 1;
  t.max_inputs = role == SL_ROLE_SOURCE ? 0 : 1;
  return t;
}

sl_status discard_process(void*, sl_context*, uint32_t, const sl_batch*) { return SL_OK; }

}  // namespace

const sl_node_type* discard_sink_type() {
  static const sl_node_type type = [] {
    sl_node_type t = make_type(SL_ROLE_SINK, "discard");
    t.max_inputs = SL_INPUTS_UNLIMITED;
    t.process = discard_process;
    return t;
  }();
  return &type;
}

const sl_node_type* injected_source_type() {
  static const sl_node_type type = [] {
    sl_node_type t = make_type(SL_ROLE_SOURCE, "injected");
    t.poll = injected_poll;
    return t;
  }();
  return &type;
}

const sl_node_type* capture_sink_type() {
  static const sl_node_type type = [] {
    sl_node_type t = make_type(SL_ROLE_SINK, "capture");
    t.process = capture_process;
    return t;
  }();
  return &type;
}

}  // namespace sluice::host
