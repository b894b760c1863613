// Malformed configs: each file under bad/ with every diagnostic it must
// produce, exactly (position, node, key and message), and nothing else.
#include "config/config_validator.hpp"
#include "test_plugin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

const std::filesystem::path k_dir = SLUICE_CONFIG_TEST_DIR;

struct BadCase {
  const char* file;                   // under bad/
  std::vector<std::string> expected;  // Diagnostic::to_string(), path relative to this directory
};

// Prints the file name as the test's name.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.file; }

const BadCase k_cases[] = {
    {"admin_errors.toml",
     {
         "bad/admin_errors.toml:2:11: error: key 'admin.address': 'localhost' is not an IP "
         "address; use e.g. \"127.0.0.1\" (the default) or \"::1\"; \"0.0.0.0\" listens on every "
         "interface",
         "bad/admin_errors.toml:3:8: error: key 'admin.port': 70000 is out of range; valid values "
         "are 0..65535",
         "bad/admin_errors.toml:4:9: error: key 'admin.token': expected a non-empty string (omit "
         "the key for no token)",
         "bad/admin_errors.toml:5:1: error: key 'admin.bind': unknown key 'bind'; valid [admin] "
         "keys are: address, port, token",
     }},
    {"constraints.toml",
     {
         "bad/constraints.toml:9:5: error: node 'b': key 'n': must be 1..10 (got 0)",
         "bad/constraints.toml:10:9: error: node 'b': key 'ratio': must be above 0 (got 0)",
         "bad/constraints.toml:11:8: error: node 'b': key 'mode': must be one of \"fast\", "
         "\"safe\" (got \"medium\")",
         "bad/constraints.toml:12:9: error: node 'b': key 'items': must not be empty",
         "bad/constraints.toml:13:6: error: node 'b': key 'fn': must be a map or predicate "
         "function; 'sum' is a reducer (use accumulate)",
     }},
    {"validate_callback.toml",
     {
         "bad/validate_callback.toml:9:1: error: node 'b': key 'pick': input 1 is out of range "
         "(the node has 1 inputs)",
         "bad/validate_callback.toml:15:18: error: node 'd': key 'args.value': must not be zero",
     }},
    {"admin_not_table.toml",
     {
         "bad/admin_not_table.toml:1:9: error: key 'admin': expected a table ([admin]), got int",
     }},
    {"args_function_unset.toml",
     {
         "bad/args_function_unset.toml:8:1: error: node 'f': key 'args': function arguments are "
         "given, but 'function' (the function they are for) is not set",
     }},
    {"args_given_twice.toml",
     {
         "bad/args_given_twice.toml:9:1: error: node 'plus': key 'args': function arguments are "
         "given both here and in the table of 'function'; keep only the table's 'args'",
     }},
    {"args_without_function_param.toml",
     {
         "bad/args_without_function_param.toml:9:1: error: node 'w': key 'args': 'args' holds "
         "arguments for a function parameter named 'function', which type 'window' does not have; "
         "valid keys for type 'window' are: type, inputs, on_error, n, interval_ms, ratio, options",
     }},
    {"bad_node_id.toml",
     {
         "bad/bad_node_id.toml:1:1: warning: node 'my lines': output is not read by any node; add "
         "'my lines' to the inputs of an operator or sink, or remove it",
         "bad/bad_node_id.toml:1:10: error: node 'my lines': invalid node id: use only letters, "
         "digits, '_' and '-'",
     }},
    {"cycle.toml",
     {
         "bad/cycle.toml:7:20: error: node 'a': key 'inputs': cycle: a -> b -> a; a pipeline must "
         "not feed a node's output back into itself",
     }},
    {"duplicate_id.toml",
     {
         "bad/duplicate_id.toml:1:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
         "bad/duplicate_id.toml:5:8: error: node 'lines': id already used by the source at line 1 "
         "([sources.lines]); node ids must be unique across sources, operators and sinks",
     }},
    {"duplicate_input.toml",
     {
         "bad/duplicate_input.toml:7:20: error: node 'z': key 'inputs': 'lines' is listed twice; "
         "list each input once",
     }},
    {"duplicate_key.toml",
     {
         "bad/duplicate_key.toml:3:8: error: invalid TOML: Error while parsing key-value pair: "
         "cannot redefine existing string 'type'",
     }},
    {"duration_negative.toml",
     {
         "bad/duration_negative.toml:9:15: error: node 'w': key 'interval_ms': expected a "
         "non-negative int (milliseconds), got -5",
     }},
    {"duration_string.toml",
     {
         "bad/duration_string.toml:9:15: error: node 'w': key 'interval_ms': expected int "
         "(milliseconds), got string",
     }},
    {"empty.toml",
     {
         "bad/empty.toml:1:1: error: the pipeline has no source; declare one under [sources.ID] "
         "(source types: from_iterable, from_textfile)",
     }},
    {"empty_inputs.toml",
     {
         "bad/empty_inputs.toml:7:10: error: node 'out': key 'inputs': is empty; list at least one "
         "node id to read from",
     }},
    {"float_given_string.toml",
     {
         "bad/float_given_string.toml:9:9: error: node 'w': key 'ratio': expected float, got "
         "string",
         "bad/float_given_string.toml:10:11: error: node 'w': key 'options': expected table, got "
         "array",
     }},
    {"function_args_not_table.toml",
     {
         "bad/function_args_not_table.toml:9:8: error: node 'words': key 'args': expected a table "
         "of arguments for function 'split', got string",
     }},
    {"function_missing_arg.toml",
     {
         "bad/function_missing_arg.toml:8:12: error: node 'plus': key 'args.value': missing; "
         "function 'add' requires it (any value: added to each element)",
         "bad/function_missing_arg.toml:13:35: error: node 'plus2': key 'function.args.value': "
         "missing; function 'add' requires it (any value: added to each element)",
     }},
    {"function_table_bad_keys.toml",
     {
         "bad/function_table_bad_keys.toml:8:30: error: node 'words': key 'function.arg': unknown "
         "key 'arg' in a function table; did you mean 'args'? valid keys are: name, args",
         "bad/function_table_bad_keys.toml:13:21: error: node 'more': key 'function.name': "
         "expected a function name (string), got int",
     }},
    {"function_table_no_name.toml",
     {
         "bad/function_table_no_name.toml:8:12: error: node 'words': key 'function': function "
         "table has no 'name'; write function = { name = \"...\", args = { ... } }",
     }},
    {"function_unknown_arg.toml",
     {
         "bad/function_unknown_arg.toml:9:10: error: node 'words': key 'args.sepp': unknown "
         "argument 'sepp'; did you mean 'sep'? valid arguments of function 'split' are: sep",
     }},
    {"function_wrong_arg_type.toml",
     {
         "bad/function_wrong_arg_type.toml:8:45: error: node 'words': key 'function.args.sep': "
         "expected string, got int",
     }},
    {"function_wrong_type.toml",
     {
         "bad/function_wrong_type.toml:8:12: error: node 'words': key 'function': expected a "
         "function name (string), a table { name = \"...\", args = { ... } }, or Lua code in "
         "the `lua` key, got int",
     }},
    {"input_is_sink.toml",
     {
         "bad/input_is_sink.toml:11:11: error: node 'b': key 'inputs': 'a' is a sink: sinks have "
         "no output to read; valid inputs (sources and operators) are: lines",
     }},
    {"inputs_item_not_string.toml",
     {
         "bad/inputs_item_not_string.toml:7:20: error: node 'out': key 'inputs': item 1: expected "
         "a node id (string), got int",
     }},
    {"inputs_on_source.toml",
     {
         "bad/inputs_on_source.toml:1:1: warning: node 'lines': output is not read by any node; "
         "add 'lines' to the inputs of an operator or sink, or remove it",
         "bad/inputs_on_source.toml:4:1: error: node 'lines': key 'inputs': a source reads no "
         "other node; remove 'inputs', or declare the node under [operators.ID] if it should read "
         "one",
     }},
    {"inputs_string.toml",
     {
         "bad/inputs_string.toml:7:10: error: node 'out': key 'inputs': expected an array of node "
         "ids, got string; write inputs = [\"lines\"]",
     }},
    {"int_given_float.toml",
     {
         "bad/int_given_float.toml:8:5: error: node 'w': key 'n': expected int, got float",
     }},
    {"many_errors.toml",
     {
         "bad/many_errors.toml:1:1: error: node 'lines': key 'values': missing; type "
         "'from_iterable' requires it (array: elements to emit)",
         "bad/many_errors.toml:6:10: error: node 'words': key 'inputs': type 'map' takes exactly 1 "
         "input, got 2",
         "bad/many_errors.toml:6:20: error: node 'words': key 'inputs': unknown node 'nope'; valid "
         "inputs (sources and operators) are: lines, orphan",
         "bad/many_errors.toml:8:16: error: node 'words': key 'args.sep': expected string, got int",
         "bad/many_errors.toml:10:1: warning: node 'orphan': output is not read by any node; add "
         "'orphan' to the inputs of an operator or sink, or remove it",
         "bad/many_errors.toml:16:8: error: node 'out': key 'type': unknown sink type 'prnt'; did "
         "you mean 'print'? valid sink types are: collect, print",
     }},
    {"missing_inputs.toml",
     {
         "bad/missing_inputs.toml:5:1: error: node 'out': key 'inputs': missing; a sink needs "
         "inputs = [\"ID\", ...] naming the nodes it reads",
     }},
    {"missing_param.toml",
     {
         "bad/missing_param.toml:5:1: error: node 'w': key 'n': missing; type 'window' requires it "
         "(int: elements per window)",
     }},
    {"missing_type.toml",
     {
         "bad/missing_type.toml:1:1: error: node 'lines': key 'type': missing; every node needs a "
         "type; valid source types are: from_iterable, from_textfile",
         "bad/missing_type.toml:1:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"name_not_string.toml",
     {
         "bad/name_not_string.toml:1:8: error: key 'name': expected string (the pipeline's name), "
         "got int",
         "bad/name_not_string.toml:3:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"no_source.toml",
     {
         "bad/no_source.toml:1:1: error: the pipeline has no source; declare one under "
         "[sources.ID] (source types: from_iterable, from_textfile)",
         "bad/no_source.toml:1:1: warning: node 'm': output is not read by any node; add 'm' to "
         "the inputs of an operator or sink, or remove it",
         "bad/no_source.toml:3:11: error: node 'm': key 'inputs': unknown node 'm0'; valid inputs "
         "(sources and operators) are: none",
     }},
    {"node_not_table.toml",
     {
         "bad/node_not_table.toml:2:9: error: node 'lines': expected a table ([sources.lines] or "
         "lines = { type = \"...\" }), got string",
         "bad/node_not_table.toml:2:9: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"operator_in_sources.toml",
     {
         "bad/operator_in_sources.toml:1:1: warning: node 'x': output is not read by any node; add "
         "'x' to the inputs of an operator or sink, or remove it",
         "bad/operator_in_sources.toml:2:8: error: node 'x': key 'type': 'map' is an operator: "
         "declare it under [operators.x]",
     }},
    {"plugin_dirs_item.toml",
     {
         "bad/plugin_dirs_item.toml:1:29: error: key 'plugin_dirs': item 1: expected a directory "
         "path (string), got int",
         "bad/plugin_dirs_item.toml:3:1: warning: node 'lines': output is not read by any node; "
         "add 'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"plugin_dirs_not_array.toml",
     {
         "bad/plugin_dirs_not_array.toml:1:15: error: key 'plugin_dirs': expected an array of "
         "directory paths (strings), got string; write plugin_dirs = [\"./plugins\"]",
         "bad/plugin_dirs_not_array.toml:3:1: warning: node 'lines': output is not read by any "
         "node; add 'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"reducer_args_typo.toml",
     {
         "bad/reducer_args_typo.toml:9:1: error: node 'total': key 'reduce_args': 'reduce_args' "
         "holds arguments for a function parameter named 'reduce', which type 'accumulate' does "
         "not have; did you mean 'reducer_args'? valid keys for type 'accumulate' are: type, "
         "inputs, on_error, reducer, start, returns_state, reducer_args, reducer_lua",
     }},
    {"runtime_errors.toml",
     {
         "bad/runtime_errors.toml:2:1: error: key 'runtime.batchsize': unknown key 'batchsize'; "
         "did you mean 'batch_size'? valid [runtime] keys are: batch_size, tasks, "
         "shutdown_timeout_ms, on_error",
         "bad/runtime_errors.toml:3:9: error: key 'runtime.tasks': expected int (1..256), got "
         "string",
         "bad/runtime_errors.toml:4:14: error: key 'runtime.batch_size': 0 is out of range; valid "
         "values are 1..1000000",
         "bad/runtime_errors.toml:5:23: error: key 'runtime.shutdown_timeout_ms': -1 is out of "
         "range; valid values are >= 0",
     }},
    {"runtime_not_table.toml",
     {
         "bad/runtime_not_table.toml:1:11: error: key 'runtime': expected a table ([runtime]), got "
         "int",
     }},
    {"runtime_tasks_too_many.toml",
     {
         "bad/runtime_tasks_too_many.toml:2:9: error: key 'runtime.tasks': 1000 is out of range; "
         "valid values are 1..256",
     }},
    {"section_not_table.toml",
     {
         "bad/section_not_table.toml:1:11: error: key 'sources': expected a table of nodes "
         "([sources.ID] sections), got array",
         "bad/section_not_table.toml:1:11: error: the pipeline has no source; declare one under "
         "[sources.ID] (source types: from_iterable, from_textfile)",
     }},
    {"self_cycle.toml",
     {
         "bad/self_cycle.toml:7:20: error: node 'loop': key 'inputs': cycle: loop -> loop; a "
         "pipeline must not feed a node's output back into itself",
     }},
    {"sink_in_operators.toml",
     {
         "bad/sink_in_operators.toml:5:1: warning: node 'out': output is not read by any node; add "
         "'out' to the inputs of an operator or sink, or remove it",
         "bad/sink_in_operators.toml:6:8: error: node 'out': key 'type': 'print' is a sink: "
         "declare it under [sinks.out]",
     }},
    {"syntax_error.toml",
     {
         "bad/syntax_error.toml:2:7: error: invalid TOML: Error while parsing key-value pair: "
         "expected value, saw '\\n'",
     }},
    {"too_few_inputs.toml",
     {
         "bad/too_few_inputs.toml:7:10: error: node 'z': key 'inputs': type 'zip' takes at least 2 "
         "inputs, got 1",
     }},
    {"too_many_inputs.toml",
     {
         "bad/too_many_inputs.toml:11:10: error: node 'm': key 'inputs': type 'map' takes exactly "
         "1 input, got 2",
         "bad/too_many_inputs.toml:16:10: error: node 'out': key 'inputs': type 'collect' takes at "
         "most 3 inputs, got 4",
         "bad/too_many_inputs.toml:16:26: error: node 'out': key 'inputs': unknown node 'm2'; did "
         "you mean 'm'? valid inputs (sources and operators) are: a, b, m",
     }},
    {"top_level_typo.toml",
     {
         "bad/top_level_typo.toml:1:1: error: key 'plugin_dir': unknown top-level key "
         "'plugin_dir'; did you mean 'plugin_dirs'? valid top-level keys are: name, plugin_dirs, "
         "runtime, admin, checkpoint, sources, operators, sinks, tests",
         "bad/top_level_typo.toml:3:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"type_not_string.toml",
     {
         "bad/type_not_string.toml:1:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
         "bad/type_not_string.toml:2:8: error: node 'lines': key 'type': expected string (a source "
         "type), got int; valid source types are: from_iterable, from_textfile",
     }},
    {"unknown_function.toml",
     {
         "bad/unknown_function.toml:8:12: error: node 'words': key 'function': unknown function "
         "'splt'; did you mean 'split'? valid functions are: add, div, is_even, split, sum",
     }},
    {"unknown_input.toml",
     {
         "bad/unknown_input.toml:1:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
         "bad/unknown_input.toml:7:11: error: node 'out': key 'inputs': unknown node 'lins'; did "
         "you mean 'lines'? valid inputs (sources and operators) are: lines",
     }},
    {"unknown_param.toml",
     {
         "bad/unknown_param.toml:1:1: error: node 'lines': key 'path': missing; type "
         "'from_textfile' requires it (string: file to read)",
         "bad/unknown_param.toml:1:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
         "bad/unknown_param.toml:3:1: error: node 'lines': key 'pth': unknown key 'pth'; did you "
         "mean 'path'? valid keys for type 'from_textfile' are: type, path, encoding",
     }},
    {"unknown_param_no_suggestion.toml",
     {
         "bad/unknown_param_no_suggestion.toml:1:1: warning: node 'lines': output is not read by "
         "any node; add 'lines' to the inputs of an operator or sink, or remove it",
         "bad/unknown_param_no_suggestion.toml:4:1: error: node 'lines': key 'compression': "
         "unknown key 'compression'; valid keys for type 'from_iterable' are: type, values",
     }},
    {"unknown_top_level.toml",
     {
         "bad/unknown_top_level.toml:3:2: error: key 'checkpointing': unknown top-level key "
         "'checkpointing'; did you mean 'checkpoint'? valid top-level keys are: name, "
         "plugin_dirs, runtime, admin, checkpoint, sources, operators, sinks, tests",
         "bad/unknown_top_level.toml:6:1: warning: node 'lines': output is not read by any node; "
         "add 'lines' to the inputs of an operator or sink, or remove it",
     }},
    {"unknown_type.toml",
     {
         "bad/unknown_type.toml:1:1: warning: node 'lines': output is not read by any node; add "
         "'lines' to the inputs of an operator or sink, or remove it",
         "bad/unknown_type.toml:3:8: error: node 'lines': key 'type': unknown source type "
         "'from_iterabel'; did you mean 'from_iterable'? valid source types are: from_iterable, "
         "from_textfile",
     }},
    {"unknown_type_no_suggestion.toml",
     {
         "bad/unknown_type_no_suggestion.toml:1:1: warning: node 'lines': output is not read by "
         "any node; add 'lines' to the inputs of an operator or sink, or remove it",
         "bad/unknown_type_no_suggestion.toml:2:8: error: node 'lines': key 'type': unknown source "
         "type 'kafka'; valid source types are: from_iterable, from_textfile",
     }},
    {"wrong_param_type.toml",
     {
         "bad/wrong_param_type.toml:8:5: error: node 'w': key 'n': expected int, got string",
     }},
};

class BadConfig : public ::testing::TestWithParam<BadCase> {
 protected:
  void SetUp() override { testing::register_test_plugin(registry_); }
  PluginRegistry registry_;
};

TEST_P(BadConfig, ReportsExactDiagnostics) {
  const BadCase& c = GetParam();
  auto result = load_config(k_dir / "bad" / c.file, registry_);
  EXPECT_FALSE(result.ok());
  EXPECT_TRUE(result.has_errors());
  const std::string prefix = k_dir.string() + "/";
  std::vector<std::string> got;
  for (const auto& d : result.diagnostics) {
    std::string text = d.to_string();
    ASSERT_EQ(text.rfind(prefix, 0), 0u) << text;
    got.push_back(text.substr(prefix.size()));
  }
  EXPECT_EQ(got, c.expected);
}

INSTANTIATE_TEST_SUITE_P(Files, BadConfig, ::testing::ValuesIn(k_cases),
                         [](const ::testing::TestParamInfo<BadCase>& param_info) {
                           std::string name = param_info.param.file;
                           name = name.substr(0, name.find('.'));
                           return name;
                         });

// Every file under bad/ has a case, so a new file cannot go unchecked.
TEST(BadConfigFiles, AllHaveExpectations) {
  std::vector<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(k_dir / "bad")) {
    on_disk.push_back(entry.path().filename().string());
  }
  std::sort(on_disk.begin(), on_disk.end());
  std::vector<std::string> listed;
  for (const auto& c : k_cases) listed.push_back(c.file);
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(on_disk, listed);
}

TEST(BadConfigFiles, MissingFileSaysWhy) {
  PluginRegistry registry;
  testing::register_test_plugin(registry);
  auto result = load_config(k_dir / "bad" / "does_not_exist.toml", registry);
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].to_string(),
            (k_dir / "bad" / "does_not_exist.toml").string() +
                ": error: cannot read config file: No such file or directory");
}

}  // namespace
}  // namespace sluice::host
