// Helpers over toml++ shared by the config loader and validator.
#pragma once

#include "graph/graph_spec.hpp"
#include "value/value.hpp"

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

namespace sluice::host::config_detail {

// A position for diagnostics from a toml++ source region (its begin), in the file the
// region was parsed from (`file` when it does not say).
SourcePos pos_of(const std::string& file, const toml::source_region& region);

// The config-facing name of a TOML value's type: "string", "int", "float",
// "bool", "array", "table", "date", "time", "date-time".
std::string_view toml_type_name(const toml::node& node);

// TOML value -> host value: int, float, bool and string map directly, arrays
// to arrays, tables to objects in file order, dates and times to their ISO
// 8601 text.
Value to_value(const toml::node& node);

struct TableEntry {
  const toml::key* key;
  const toml::node* node;
};

// The entries of a table in file order. toml++ keeps tables as maps sorted by
// key, but users expect nodes, object keys and diagnostics in the order they
// wrote them; ties (implicit tables share a position) fall back to the key.
std::vector<TableEntry> entries_in_file_order(const toml::table& table);

}  // namespace sluice::host::config_detail
