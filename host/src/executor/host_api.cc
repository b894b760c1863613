// Implementation of every sl_host_api entry. Each one is a thin adapter: the
// logic lives in Task (emit, timers, posts) and in value/ (values, JSON).
#include "executor/host_api.hpp"

#include "common/log_fields.hpp"
#include "executor/task.hpp"
#include "lua/lua_function.hpp"
#include "value/json.hpp"
#include "value/value.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <vector>

// A function bound for one node: a named function with its arguments (`info`
// set), or a function written in Lua compiled into the task's Lua state
// (`lua` set; docs/LUA.md).
struct sl_bound_function {
  const sluice::host::FunctionInfo* info = nullptr;
  void* self = nullptr;
  sl_context* ctx = nullptr;
  std::unique_ptr<sluice::host::lua::LuaFunction> lua;
};

namespace sluice::host {
namespace {

Task& task_of(sl_context* ctx) { return *ctx->task; }

void api_set_error(sl_context* ctx, const char* msg, size_t len) {
  if (!ctx) return;
  if (!ctx->task) {  // a checkpoint store's context (checkpoint/store.hpp)
    if (ctx->store_error) ctx->store_error->assign(msg, len);
    return;
  }
  task_of(ctx).node(ctx->node).error.assign(msg, len);
}

void api_log(sl_context* ctx, int32_t level, const char* msg, size_t len) {
  auto lvl = level <= SL_LOG_TRACE   ? spdlog::level::trace
             : level == SL_LOG_DEBUG ? spdlog::level::debug
             : level == SL_LOG_INFO  ? spdlog::level::info
             : level == SL_LOG_WARN  ? spdlog::level::warn
                                     : spdlog::level::err;
  std::string_view text(msg, len);
  if (ctx && !ctx->task) {
    spdlog::log(lvl, "checkpoint store: {}", text);
  } else if (ctx) {
    const auto& node = task_of(ctx).node(ctx->node);
    log_with(lvl, {{"node", node.id}, {"type", node.type}}, "node '{}': {}", node.id, text);
  } else {
    spdlog::log(lvl, "plugin: {}", text);
  }
}

sl_value api_json_dump(sl_value v) {
  std::string text = json_dump(v);
  return string_create(text.data(), text.size());
}

sl_status api_json_parse(sl_context* ctx, const char* text, size_t size, sl_value* out) {
  *out = sl_null();
  auto parsed = json_parse(std::string_view(text, size));
  if (!parsed.is_ok()) {
    if (ctx) api_set_error(ctx, parsed.status().message().data(), parsed.status().message().size());
    return parsed.status().code();
  }
  *out = std::move(parsed).value().release();
  return SL_OK;
}

sl_status api_emit(sl_context* ctx, const sl_message* messages, size_t count) {
  return task_of(ctx).emit(ctx->node, messages, count);
}
sl_status api_emit_values(sl_context* ctx, const sl_value* values, size_t count) {
  return task_of(ctx).emit_values(ctx->node, values, count);
}
sl_status api_emit_watermark(sl_context* ctx, int64_t watermark_ns) {
  // SL_WATERMARK_END is the host's: an output ends only when its node has (after finish).
  return task_of(ctx).emit_watermark(ctx->node, std::min(watermark_ns, SL_WATERMARK_END - 1));
}
sl_status api_emit_side(sl_context* ctx, uint32_t output, const sl_message* messages,
                        size_t count) {
  return task_of(ctx).emit_side(ctx->node, output, messages, count);
}
int64_t api_now_ns(sl_context* ctx) { return task_of(ctx).clock().now_ns(); }
sl_status api_timer_start(sl_context* ctx, uint64_t timer_id, int64_t delay_ns) {
  return task_of(ctx).timer_start(ctx->node, timer_id, delay_ns);
}
void api_timer_cancel(sl_context* ctx, uint64_t timer_id) {
  task_of(ctx).timer_cancel(ctx->node, timer_id);
}
sl_status api_post(sl_context* ctx, sl_task_fn fn, void* arg) {
  return task_of(ctx).post(ctx, fn, arg, nullptr);
}

sl_status api_post_owned(sl_context* ctx, sl_task_fn fn, void* arg, sl_release_fn release) {
  return task_of(ctx).post(ctx, fn, arg, release);
}
void api_wake(sl_context* ctx) { task_of(ctx).wake(ctx); }
void api_set_backpressure(sl_context* ctx, int32_t full) {
  task_of(ctx).set_backpressure(ctx->node, full != 0);
}
void api_set_input_backpressure(sl_context* ctx, uint32_t input, int32_t full) {
  task_of(ctx).set_input_backpressure(ctx->node, input, full != 0);
}
sl_status api_io_watch(sl_context* ctx, int fd, uint32_t events, uint64_t watch_id) {
  if (!ctx->task) return SL_FAILED_PRECONDITION;  // a checkpoint store has no event loop
  return task_of(ctx).io_watch(ctx->node, fd, events, watch_id);
}
void api_io_unwatch(sl_context* ctx, uint64_t watch_id) {
  if (ctx->task) task_of(ctx).io_unwatch(ctx->node, watch_id);
}
void api_checkpoint_ready(sl_context* ctx, uint64_t epoch, sl_status status) {
  task_of(ctx).checkpoint_ready(ctx->node, epoch, status);
}
sl_status api_key_groups_assigned(sl_context* ctx, const uint32_t* groups, size_t count) {
  if (!ctx->task) return SL_FAILED_PRECONDITION;  // a store's context: no task
  return task_of(ctx).key_groups_assigned(ctx->node, std::span(groups, count));
}
sl_status api_key_groups_revoked(sl_context* ctx, const uint32_t* groups, size_t count) {
  if (!ctx->task) return SL_FAILED_PRECONDITION;
  return task_of(ctx).key_groups_revoked(ctx->node, std::span(groups, count));
}
void api_gauge_set(sl_context* ctx, const char* name, size_t name_len, const char* labels,
                   size_t labels_len, double value) {
  if (!ctx || !ctx->task) return;  // a checkpoint store has no node to report under
  NodeRuntime& n = task_of(ctx).node(ctx->node);
  auto error =
      n.gauges->set(std::string_view(name, name_len), std::string_view(labels, labels_len), value);
  if (error && !n.gauge_warned) {
    n.gauge_warned = true;  // once per node: a bad call is usually repeated every poll
    spdlog::warn("node '{}': gauge_set ignored: {}", n.id, *error);
  }
}
sl_str api_node_id(sl_context* ctx) {
  if (!ctx->task) return {"checkpoint", 10};
  const std::string& id = task_of(ctx).node(ctx->node).id;
  return {id.data(), id.size()};
}

// Fills declared defaults into `given` (may be null) and checks required args:
// the runtime counterpart of the validator, for string specs bound by plugins.
Result<Value> complete_args(const FunctionInfo& fn, const Value& given) {
  std::vector<std::pair<std::string, Value>> entries;
  for (const ParamInfo& p : fn.params) {
    if (auto v = given.get(p.name)) {
      entries.emplace_back(p.name, *v);
    } else if (p.default_json) {
      SLUICE_ASSIGN_OR_RETURN(Value d, json_parse(*p.default_json));
      entries.emplace_back(p.name, std::move(d));
    } else if (p.required) {
      return Status(SL_INVALID_ARGUMENT,
                    fmt::format("function '{}' needs argument '{}'", fn.name, p.name));
    }
  }
  return Value::object(entries);
}

// Says at debug level whether a Lua function takes the native fast path
// (docs/LUA.md, "The fast path"), and if not, why.
void log_fast_path(sl_context& ctx, const lua::LuaFunction& fn) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  const auto& node = task_of(&ctx).node(ctx.node);
  if (fn.native()) {
    log_with(spdlog::level::debug, {{"node", node.id}, {"type", node.type}},
             "node '{}': Lua function at {} runs natively (fast path)", node.id, fn.where());
  } else {
    log_with(spdlog::level::debug, {{"node", node.id}, {"type", node.type}},
             "node '{}': Lua function at {} runs in Lua (not on the fast path: {})", node.id,
             fn.where(), fn.native_reason());
  }
}

sl_status api_function_bind(sl_context* ctx, sl_value spec, sl_bound_function** out) {
  *out = nullptr;
  auto error = [&](sl_status code, const std::string& message) {
    api_set_error(ctx, message.data(), message.size());
    return code;
  };
  Value spec_value = Value::borrow(spec);
  // A function belongs to the binding node's graph: a Lua one to its task's Lua state, a
  // named one to the plugins the graph was loaded with (GraphSpec::registry), which the
  // task keeps loaded. A checkpoint store's context has no task.
  Task* task = ctx ? ctx->task : nullptr;
  if (auto source = lua::lua_source_of(spec_value)) {
    if (!task) {
      return error(SL_FAILED_PRECONDITION,
                   "a Lua function needs the binding node's context (ctx is NULL or not a "
                   "node's)");
    }
    auto fn = lua::LuaFunction::compile(task->lua(), *source);
    if (!fn.is_ok()) return error(fn.status().code(), fn.status().message());
    log_fast_path(*ctx, **fn);
    *out = new sl_bound_function{nullptr, nullptr, ctx, std::move(fn).value()};
    return SL_OK;
  }
  if (!task) {
    return error(SL_FAILED_PRECONDITION,
                 "a named function needs the binding node's context (ctx is NULL or not a "
                 "node's): names resolve in the plugins of the node's graph");
  }
  const PluginRegistry* registry = task->registry();
  if (!registry) return error(SL_FAILED_PRECONDITION, "the node's graph has no plugin registry");
  Value name_value = spec_value;
  Value given_args;
  if (spec_value.is_object()) {
    name_value = spec_value.get("name").value_or(Value());
    given_args = spec_value.get("args").value_or(Value());
  }
  if (!name_value.is_string()) {
    return error(SL_INVALID_ARGUMENT,
                 "function spec must be a name, { name = ..., args = {...} } or { lua = ... }");
  }
  const FunctionInfo* fn = registry->find_function(name_value.as_str());
  if (!fn) return error(SL_NOT_FOUND, fmt::format("unknown function '{}'", name_value.as_str()));
  auto args = complete_args(*fn, given_args);
  if (!args.is_ok()) return error(args.status().code(), args.status().message());
  void* self = nullptr;
  if (fn->def.bind) {
    sl_function_init init{};
    init.struct_size = sizeof init;
    init.host = host_api_table();
    init.ctx = ctx;
    init.args = args->raw();
    sl_status status = fn->def.bind(&init, &self);
    if (status != SL_OK) return status;
  }
  *out = new sl_bound_function{fn, self, ctx, nullptr};
  return SL_OK;
}

// A Lua function has no declared kind: it serves as a map, a predicate (its
// result's truthiness) or a reducer alike, so it reports SL_FUNCTION_MAP and
// operators call it with the arity they need.
int32_t api_function_kind(const sl_bound_function* fn) {
  return fn->lua ? SL_FUNCTION_MAP : fn->info->kind;
}

// One call of a Lua function; its error goes to the binding node's context.
// Nothing may be thrown back into the plugin that called.
sl_status call_lua(sl_bound_function* fn, const sl_value* argv, uint32_t argc, sl_value* out) {
  try {
    auto result = fn->lua->call(argv, argc);
    if (!result.is_ok()) {
      api_set_error(fn->ctx, result.status().message().data(), result.status().message().size());
      return result.status().code();
    }
    *out = std::move(result).value().release();
    return SL_OK;
  } catch (const std::bad_alloc&) {
    static constexpr std::string_view k_message = "Lua: out of memory converting a value";
    api_set_error(fn->ctx, k_message.data(), k_message.size());
    return SL_RESOURCE_EXHAUSTED;
  }
}

sl_status api_function_call(sl_bound_function* fn, const sl_value* argv, uint32_t argc,
                            sl_value* out) {
  *out = sl_null();
  if (fn->lua) return call_lua(fn, argv, argc, out);
  if (argc < fn->info->min_arity || argc > fn->info->max_arity) {
    std::string message =
        fmt::format("function '{}' takes {}..{} arguments, got {}", fn->info->name,
                    fn->info->min_arity, fn->info->max_arity, argc);
    api_set_error(fn->ctx, message.data(), message.size());
    return SL_INVALID_ARGUMENT;
  }
  return fn->info->def.call(fn->self, fn->ctx, argv, argc, out);
}

sl_status api_function_call_batch(sl_bound_function* fn, const sl_value* in, size_t count,
                                  sl_value* out) {
  if (fn->lua) {  // one protected call for the batch, or none on the fast path
    try {
      Status status = fn->lua->call_batch(in, count, out);
      if (status.is_ok()) return SL_OK;
      api_set_error(fn->ctx, status.message().data(), status.message().size());
      return status.code();
    } catch (const std::bad_alloc&) {
      static constexpr std::string_view k_message = "Lua: out of memory converting a value";
      api_set_error(fn->ctx, k_message.data(), k_message.size());
      return SL_RESOURCE_EXHAUSTED;
    }
  }
  if (fn->info->def.call_batch) return fn->info->def.call_batch(fn->self, fn->ctx, in, count, out);
  for (size_t i = 0; i < count; ++i) {
    sl_status status = fn->info->def.call(fn->self, fn->ctx, &in[i], 1, &out[i]);
    if (status != SL_OK) {
      for (size_t k = 0; k < i; ++k) value_release(out[k]);
      return status;
    }
  }
  return SL_OK;
}

void api_function_release(sl_bound_function* fn) {
  if (!fn) return;
  if (fn->info && fn->info->def.unbind) fn->info->def.unbind(fn->self);
  delete fn;
}

sl_host_api make_table() {
  sl_host_api t{};
  t.struct_size = sizeof t;
  t.abi_major = SL_ABI_MAJOR;
  t.abi_minor = SL_ABI_MINOR;
  t.set_error = api_set_error;
  t.log = api_log;
  t.value_retain = value_retain;
  t.value_release = value_release;
  t.string_create = string_create;
  t.bytes_create = bytes_create;
  t.bytes_wrap = bytes_wrap;
  t.array_create = array_create;
  t.object_create = object_create;
  t.value_str = value_str;
  t.value_size = value_size;
  t.value_at = value_at;
  t.object_key_at = object_key_at;
  t.object_get = object_get;
  t.value_compare = value_compare;
  t.value_hash = value_hash;
  t.json_parse = api_json_parse;
  t.json_dump = api_json_dump;
  t.emit = api_emit;
  t.emit_values = api_emit_values;
  t.now_ns = api_now_ns;
  t.timer_start = api_timer_start;
  t.timer_cancel = api_timer_cancel;
  t.post = api_post;
  t.wake = api_wake;
  t.set_backpressure = api_set_backpressure;
  t.function_bind = api_function_bind;
  t.function_kind = api_function_kind;
  t.function_call = api_function_call;
  t.function_call_batch = api_function_call_batch;
  t.function_release = api_function_release;
  t.node_id = api_node_id;
  t.set_input_backpressure = api_set_input_backpressure;
  t.io_watch = api_io_watch;
  t.io_unwatch = api_io_unwatch;
  t.checkpoint_ready = api_checkpoint_ready;
  t.object_set_unique = object_set_unique;
  t.gauge_set = api_gauge_set;
  t.object_put_unique = object_put_unique;
  t.array_items = array_items;
  t.key_groups_assigned = api_key_groups_assigned;
  t.key_groups_revoked = api_key_groups_revoked;
  t.emit_watermark = api_emit_watermark;
  t.emit_side = api_emit_side;
  t.post_owned = api_post_owned;
  return t;
}

}  // namespace

const sl_host_api* host_api_table() {
  static const sl_host_api table = make_table();
  return &table;
}

}  // namespace sluice::host
