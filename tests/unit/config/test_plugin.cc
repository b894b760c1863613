#include "test_plugin.hpp"

#include <gtest/gtest.h>

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

constexpr uint32_t k_param_size = sizeof(sl_param);

const sl_param k_from_iterable_params[] = {
    {k_param_size, "values", SL_PARAM_ARRAY, SL_PARAM_REQUIRED, nullptr, "elements to emit"},
};
const sl_param k_from_textfile_params[] = {
    {k_param_size, "path", SL_PARAM_STRING, SL_PARAM_REQUIRED, nullptr, "file to read"},
    {k_param_size, "encoding", SL_PARAM_STRING, 0, "\"utf-8\"", "text encoding"},
};
const sl_param k_map_params[] = {
    {k_param_size, "function", SL_PARAM_FUNCTION, SL_PARAM_REQUIRED, nullptr,
     "applied to each element"},
};
const sl_param k_filter_params[] = {
    {k_param_size, "function", SL_PARAM_FUNCTION, 0, nullptr, "predicate; truthiness when absent"},
};
const sl_param k_accumulate_params[] = {
    {k_param_size, "reducer", SL_PARAM_FUNCTION, SL_PARAM_REQUIRED, nullptr, "state, x -> state"},
    {k_param_size, "start", SL_PARAM_ANY, 0, "0", "initial state"},
    {k_param_size, "returns_state", SL_PARAM_BOOL, 0, "false", "emit the state"},
};
const sl_param k_apply_params[] = {
    {k_param_size, "function", SL_PARAM_FUNCTION, 0, "\"split\"", "defaults to split"},
};
const sl_param k_window_params[] = {
    {k_param_size, "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "elements per window"},
    {k_param_size, "interval_ms", SL_PARAM_DURATION, 0, "1000", "flush interval"},
    {k_param_size, "ratio", SL_PARAM_FLOAT, 0, nullptr, "overlap"},
    {k_param_size, "options", SL_PARAM_TABLE, 0, nullptr, "extra options"},
};
const sl_param k_print_params[] = {
    {k_param_size, "prefix", SL_PARAM_STRING, 0, "\"\"", "printed before each element"},
};
const sl_param k_add_params[] = {
    {k_param_size, "value", SL_PARAM_ANY, SL_PARAM_REQUIRED, nullptr, "added to each element"},
};
const sl_param k_split_params[] = {
    {k_param_size, "sep", SL_PARAM_STRING, 0, "\" \"", "separator"},
};

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

const sl_function_def k_add = function(SL_FUNCTION_MAP, "add", k_add_params, 1);
const sl_function_def k_split = function(SL_FUNCTION_MAP, "split", k_split_params, 1);
const sl_function_def k_sum = function(SL_FUNCTION_REDUCER, "sum", nullptr, 0);
const sl_function_def k_is_even = function(SL_FUNCTION_PREDICATE, "is_even", nullptr, 0);

const sl_node_type* const k_node_types[] = {&k_from_iterable, &k_from_textfile, &k_map, &k_filter,
                                            &k_accumulate,    &k_apply,         &k_zip, &k_window,
                                            &k_print,         &k_collect};
const sl_function_def* const k_functions[] = {&k_add, &k_split, &k_sum, &k_is_even};

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

}  // namespace

void register_test_plugin(PluginRegistry& registry) {
  Status status = registry.add_plugin(&k_plugin, "<config_test_plugin>", nullptr);
  ASSERT_TRUE(status.is_ok()) << status.to_string();
}

}  // namespace sluice::host::testing
