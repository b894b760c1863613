// A plugin descriptor for config tests, registered through the real
// PluginRegistry::add_plugin path. The callbacks are never run: validation
// only reads the declarations.
#pragma once

#include "registry/plugin_registry.hpp"

namespace sluice::host::testing {

// Registers "config_test_plugin" with:
//   sources:   from_iterable (values: array, required)
//              from_textfile (path: string, required; encoding: string = "utf-8")
//   operators: map (function: function, required)
//              filter (function: function, optional, no default)
//              accumulate (reducer: function, required; start: any = 0; returns_state: bool =
//              false) apply (function: function = "split") zip (2..unlimited inputs) window (n:
//              int, required; interval_ms: duration = 1000; ratio: float; options: table)
//   sinks:     print (prefix: string = "")
//              collect (1..3 inputs)
//   bounded:   an operator (1..3 inputs) with ABI 1.2 constraints (n: int 1..10 = 1; ratio:
//              float > 0 = 0.5; mode: "fast"|"safe"; items: non-empty array = [1]; fn: a map
//              or predicate function, optional; pick: int = 0, checked against the input
//              count by its validate callback)
//   functions: add (map; value: any, required), split (map; sep: string = " "),
//              sum (reducer), is_even (predicate), div (map; value: int, required; its
//              validate callback refuses 0)
void register_test_plugin(PluginRegistry& registry);

// Registers "config_test_state_plugin" (after register_test_plugin), with:
//   from_partitions (a keyed source, SL_NODE_STATEFUL | SL_NODE_KEYED_STATE, as a
//              grouped from_kafka: group_id: string, optional), from_keyed (a keyed source
//              without group_id), from_counter (a source, SL_NODE_STATEFUL only),
//              count_state (an operator, SL_NODE_STATEFUL only), keyed_count (an operator,
//              keyed), file_sink (a sink, SL_NODE_STATEFUL only)
void register_state_test_plugin(PluginRegistry& registry);

}  // namespace sluice::host::testing
