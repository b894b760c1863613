#include "test_plugin.hpp"

#include "executor/host_api.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::host::testing {
namespace {

sl_status dummy_create(const sl_node_init*, void** out_self) {
  *out_self = nullptr;
  return SL_OK;
}
void dummy_destroy(void*) {}
sl_status dummy_poll(void*, sl_context*, uint32_t, int32_t* out_state) {
  *out_state = SL_SOURCE_DONE;
  return SL_OK;
}
sl_status dummy_process(void*, sl_context*, uint32_t, const sl_batch*) { return SL_OK; }
sl_status dummy_call(void*, sl_context*, const sl_value*, uint32_t, sl_value* out) {
  *out = sl_null();
  return SL_OK;
}

sl_status dummy_snapshot(void*, sl_context*, sl_value* out) {
  *out = sl_null();
  return SL_OK;
}
sl_status dummy_restore(void*, sl_context*, sl_value) { return SL_OK; }
sl_status dummy_restore_group(void*, sl_context*, uint32_t, sl_value) { return SL_OK; }
sl_status dummy_drop_group(void*, sl_context*, uint32_t) { return SL_OK; }

constexpr uint32_t k_param_size = sizeof(sl_param);

const sl_param k_from_iterable_params[] = {
    {k_param_size, "values", SL_PARAM_ARRAY, SL_PARAM_REQUIRED, nullptr, "elements to emit", 0, 0,
     0.0, 0.0, nullptr},
};
const sl_param k_from_textfile_params[] = {
    {k_param_size, "path", SL_PARAM_STRING, SL_PARAM_REQUIRED, nullptr, "file to read", 0, 0, 0.0,
     0.0, nullptr},
    {k_param_size, "encoding", SL_PARAM_STRING, 0, "\"utf-8\"", "text encoding", 0, 0, 0.0, 0.0,
     nullptr},
};
const sl_param k_map_params[] = {
    {k_param_size, "function", SL_PARAM_FUNCTION, SL_PARAM_REQUIRED, nullptr,
     "applied to each element", 0, 0, 0.0, 0.0, nullptr},
};
const sl_param k_filter_params[] = {
    {k_param_size, "function", SL_PARAM_FUNCTION, 0, nullptr, "predicate; truthiness when absent",
     0, 0, 0.0, 0.0, nullptr},
};
const sl_param k_accumulate_params[] = {
    {k_param_size, "reducer", SL_PARAM_FUNCTION, SL_PARAM_REQUIRED, nullptr, "state, x -> state", 0,
     0, 0.0, 0.0, nullptr},
    {k_param_size, "start", SL_PARAM_ANY, 0, "0", "initial state", 0, 0, 0.0, 0.0, nullptr},
    {k_param_size, "returns_state", SL_PARAM_BOOL, 0, "false", "emit the state", 0, 0, 0.0, 0.0,
     nullptr},
};
const sl_param k_apply_params[] = {
    {k_param_size, "function", SL_PARAM_FUNCTION, 0, "\"split\"", "defaults to split", 0, 0, 0.0,
     0.0, nullptr},
};
const sl_param k_window_params[] = {
    {k_param_size, "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "elements per window", 0, 0, 0.0,
     0.0, nullptr},
    {k_param_size, "interval_ms", SL_PARAM_DURATION, 0, "1000", "flush interval", 0, 0, 0.0, 0.0,
     nullptr},
    {k_param_size, "ratio", SL_PARAM_FLOAT, 0, nullptr, "overlap", 0, 0, 0.0, 0.0, nullptr},
    {k_param_size, "options", SL_PARAM_TABLE, 0, nullptr, "extra options", 0, 0, 0.0, 0.0, nullptr},
};
const sl_param k_from_partitions_params[] = {
    {k_param_size, "group_id", SL_PARAM_STRING, 0, nullptr, "consumer group", 0, 0, 0.0, 0.0,
     nullptr},
};
const sl_param k_print_params[] = {
    {k_param_size, "prefix", SL_PARAM_STRING, 0, "\"\"", "printed before each element", 0, 0, 0.0,
     0.0, nullptr},
};
const sl_param k_add_params[] = {
    {k_param_size, "value", SL_PARAM_ANY, SL_PARAM_REQUIRED, nullptr, "added to each element", 0, 0,
     0.0, 0.0, nullptr},
};
const sl_param k_split_params[] = {
    {k_param_size, "sep", SL_PARAM_STRING, 0, "\" \"", "separator", 0, 0, 0.0, 0.0, nullptr},
};

// ABI 1.2 constraints, set field by field on a plain declaration.
constexpr sl_param constrained(const char* name, int32_t type, const char* default_json,
                               uint32_t flags) {
  sl_param p{};
  p.struct_size = k_param_size;
  p.name = name;
  p.type = type;
  p.flags = flags;
  p.default_json = default_json;
  p.doc = "constrained";
  return p;
}
constexpr sl_param with_int_range(sl_param p, int64_t lo, int64_t hi) {
  p.flags |= SL_PARAM_HAS_MIN | SL_PARAM_HAS_MAX;
  p.min_int = lo;
  p.max_int = hi;
  return p;
}
constexpr sl_param with_choices(sl_param p, const char* choices) {
  p.flags |= SL_PARAM_HAS_CHOICES;
  p.choices = choices;
  return p;
}
constexpr sl_param above(sl_param p, double min) {
  p.flags |= SL_PARAM_HAS_MIN | SL_PARAM_MIN_EXCLUSIVE;
  p.min_float = min;
  return p;
}
// bounded: n in 1..10, ratio > 0, mode "fast"|"safe", items not empty, fn a map or
// predicate; its validate callback checks that `pick` names an input by index.
const sl_param k_bounded_params[] = {
    with_int_range(constrained("n", SL_PARAM_INT, "1", 0), 1, 10),
    above(constrained("ratio", SL_PARAM_FLOAT, "0.5", 0), 0.0),
    with_choices(constrained("mode", SL_PARAM_STRING, "\"fast\"", 0), "fast|safe"),
    constrained("items", SL_PARAM_ARRAY, "[1]", SL_PARAM_NON_EMPTY),
    with_choices(constrained("fn", SL_PARAM_FUNCTION, nullptr, 0), "map|predicate"),
    constrained("pick", SL_PARAM_INT, "0", 0),
};
sl_status bounded_validate(const sl_validate_init* init) {
  sl_value pick = sl_null();
  init->host->object_get(init->config, "pick", 4, &pick);
  if (pick.as.i < 0 || pick.as.i >= static_cast<int64_t>(init->input_count)) {
    const std::string msg = "input " + std::to_string(pick.as.i) +
                            " is out of range (the node has " + std::to_string(init->input_count) +
                            " inputs)";
    init->report(init->report_arg, "pick", 4, msg.data(), msg.size());
    return SL_INVALID_ARGUMENT;
  }
  return SL_OK;
}
const sl_param k_div_params[] = {
    {k_param_size, "value", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "divisor", 0, 0, 0.0, 0.0,
     nullptr},
};
sl_status div_validate(const sl_validate_init* init) {
  sl_value v = sl_null();
  init->host->object_get(init->config, "value", 5, &v);
  if (v.as.i == 0) {
    const char msg[] = "must not be zero";
    init->report(init->report_arg, "value", 5, msg, sizeof msg - 1);
  }
  return SL_OK;  // a report is enough: the host counts it as an error
}

// Built field by field: -Wextra warns about designated initialisers that
// leave the optional callbacks out.
constexpr sl_node_type node_type(int32_t role, const char* name, const sl_param* params,
                                 uint32_t count, int32_t min_inputs, int32_t max_inputs) {
  sl_node_type t{};
  t.struct_size = sizeof(sl_node_type);
  t.role = role;
  t.name = name;
  t.doc = "test node";
  t.params = params;
  t.param_count = count;
  t.min_inputs = min_inputs;
  t.max_inputs = max_inputs;
  t.create = dummy_create;
  t.destroy = dummy_destroy;
  if (role == SL_ROLE_SOURCE) {
    t.poll = dummy_poll;
  } else {
    t.process = dummy_process;
  }
  return t;
}

constexpr sl_node_type source(const char* name, const sl_param* params, uint32_t count) {
  return node_type(SL_ROLE_SOURCE, name, params, count, 0, 0);
}

constexpr sl_node_type consumer(int32_t role, const char* name, const sl_param* params,
                                uint32_t count, int32_t min_inputs, int32_t max_inputs) {
  return node_type(role, name, params, count, min_inputs, max_inputs);
}

constexpr sl_function_def function(int32_t kind, const char* name, const sl_param* params,
                                   uint32_t count) {
  sl_function_def f{};
  f.struct_size = sizeof(sl_function_def);
  f.kind = kind;
  f.name = name;
  f.doc = "test function";
  f.params = params;
  f.param_count = count;
  f.min_arity = kind == SL_FUNCTION_REDUCER ? 2u : 1u;
  f.max_arity = f.min_arity;
  f.call = dummy_call;
  return f;
}

const sl_node_type k_from_iterable = source("from_iterable", k_from_iterable_params, 1);
const sl_node_type k_from_textfile = source("from_textfile", k_from_textfile_params, 2);
const sl_node_type k_map = consumer(SL_ROLE_OPERATOR, "map", k_map_params, 1, 1, 1);
const sl_node_type k_filter = consumer(SL_ROLE_OPERATOR, "filter", k_filter_params, 1, 1, 1);
const sl_node_type k_accumulate =
    consumer(SL_ROLE_OPERATOR, "accumulate", k_accumulate_params, 3, 1, 1);
const sl_node_type k_apply = consumer(SL_ROLE_OPERATOR, "apply", k_apply_params, 1, 1, 1);
const sl_node_type k_zip = consumer(SL_ROLE_OPERATOR, "zip", nullptr, 0, 2, SL_INPUTS_UNLIMITED);
const sl_node_type k_window = consumer(SL_ROLE_OPERATOR, "window", k_window_params, 4, 1, 1);
const sl_node_type k_print = consumer(SL_ROLE_SINK, "print", k_print_params, 1, 1, 1);
const sl_node_type k_collect = consumer(SL_ROLE_SINK, "collect", nullptr, 0, 1, 3);
const sl_node_type k_bounded = [] {
  sl_node_type t = consumer(SL_ROLE_OPERATOR, "bounded", k_bounded_params, 6, 1, 3);
  t.validate = bounded_validate;
  return t;
}();

// Stateful types for the member-state warning: `flags` SL_NODE_STATEFUL, with or without
// SL_NODE_KEYED_STATE (then with restore_group/drop_group, as the ABI requires).
sl_node_type with_state(sl_node_type t, uint32_t flags) {
  t.flags = flags;
  t.snapshot = dummy_snapshot;
  t.restore = dummy_restore;
  if ((flags & SL_NODE_KEYED_STATE) != 0) {
    t.restore_group = dummy_restore_group;
    t.drop_group = dummy_drop_group;
  }
  return t;
}
constexpr uint32_t k_keyed = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
const sl_node_type k_from_partitions =
    with_state(source("from_partitions", k_from_partitions_params, 1), k_keyed);
const sl_node_type k_from_keyed = with_state(source("from_keyed", nullptr, 0), k_keyed);
const sl_node_type k_from_counter =
    with_state(source("from_counter", nullptr, 0), SL_NODE_STATEFUL);
const sl_node_type k_count_state =
    with_state(consumer(SL_ROLE_OPERATOR, "count_state", nullptr, 0, 1, 1), SL_NODE_STATEFUL);
const sl_node_type k_keyed_count =
    with_state(consumer(SL_ROLE_OPERATOR, "keyed_count", nullptr, 0, 1, 1), k_keyed);
const sl_node_type k_file_sink =
    with_state(consumer(SL_ROLE_SINK, "file_sink", nullptr, 0, 1, 3), SL_NODE_STATEFUL);

const sl_function_def k_add = function(SL_FUNCTION_MAP, "add", k_add_params, 1);
const sl_function_def k_split = function(SL_FUNCTION_MAP, "split", k_split_params, 1);
const sl_function_def k_sum = function(SL_FUNCTION_REDUCER, "sum", nullptr, 0);
const sl_function_def k_is_even = function(SL_FUNCTION_PREDICATE, "is_even", nullptr, 0);
const sl_function_def k_div = [] {
  sl_function_def f = function(SL_FUNCTION_MAP, "div", k_div_params, 1);
  f.validate = div_validate;
  return f;
}();

const sl_node_type* const k_node_types[] = {
    &k_from_iterable, &k_from_textfile, &k_map,   &k_filter,  &k_accumulate, &k_apply,
    &k_zip,           &k_window,        &k_print, &k_collect, &k_bounded};
const sl_node_type* const k_state_node_types[] = {&k_from_partitions, &k_from_keyed,
                                                  &k_from_counter,    &k_count_state,
                                                  &k_keyed_count,     &k_file_sink};
const sl_function_def* const k_functions[] = {&k_add, &k_split, &k_sum, &k_is_even, &k_div};

sl_plugin make_plugin() {
  sl_plugin p{};
  p.struct_size = sizeof(sl_plugin);
  p.abi_major = SL_ABI_MAJOR;
  p.abi_minor = SL_ABI_MINOR;
  p.min_host_minor = 0;
  p.name = "config_test_plugin";
  p.version = "0.0.1";
  p.doc = "node types for config tests";
  p.node_types = k_node_types;
  p.node_type_count = sizeof(k_node_types) / sizeof(k_node_types[0]);
  p.functions = k_functions;
  p.function_count = sizeof(k_functions) / sizeof(k_functions[0]);
  return p;
}

const sl_plugin k_plugin = make_plugin();

const sl_plugin k_state_plugin = [] {
  sl_plugin p = make_plugin();
  p.name = "config_test_state_plugin";
  p.doc = "stateful node types for config tests";
  p.node_types = k_state_node_types;
  p.node_type_count = sizeof(k_state_node_types) / sizeof(k_state_node_types[0]);
  p.functions = nullptr;
  p.function_count = 0;
  return p;
}();

}  // namespace

void register_test_plugin(PluginRegistry& registry) {
  // What PluginLoader would set: the validate callbacks below read values through it.
  registry.set_host_api(host_api_table());
  Status status = registry.add_plugin(&k_plugin, "<config_test_plugin>", nullptr);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
}

void register_state_test_plugin(PluginRegistry& registry) {
  Status status = registry.add_plugin(&k_state_plugin, "<config_test_state_plugin>", nullptr);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
}

}  // namespace sluice::host::testing
