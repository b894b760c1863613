#include "config/detail/toml_util.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

namespace sluice::host::config_detail {
namespace {

bool before(const toml::source_position& a, const toml::source_position& b) {
  return a.line != b.line ? a.line < b.line : a.column < b.column;
}

// toml++ prints dates and times in ISO 8601 through operator<<.
template <class T>
std::string iso_text(const T& v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

SourcePos pos_of(const std::string& file, const toml::source_region& region) {
  // A node knows the file it was parsed from: with several config files merged into one
  // document (parse_config_files), that is not always `file`.
  if (region.path && !region.path->empty()) {
    return SourcePos{*region.path, region.begin.line, region.begin.column};
  }
  return SourcePos{file, region.begin.line, region.begin.column};
}

std::string_view toml_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "int";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "bool";
    case toml::node_type::array: return "array";
    case toml::node_type::table: return "table";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

Value to_value(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return Value::string(node.as_string()->get());
    case toml::node_type::integer: return Value::integer(node.as_integer()->get());
    case toml::node_type::floating_point: return Value::floating(node.as_floating_point()->get());
    case toml::node_type::boolean: return Value::boolean(node.as_boolean()->get());
    case toml::node_type::date: return Value::string(iso_text(node.as_date()->get()));
    case toml::node_type::time: return Value::string(iso_text(node.as_time()->get()));
    case toml::node_type::date_time: return Value::string(iso_text(node.as_date_time()->get()));
    case toml::node_type::array: {
      std::vector<Value> items;
      items.reserve(node.as_array()->size());
      for (const auto& item : *node.as_array()) items.push_back(to_value(item));
      return Value::array(items);
    }
    case toml::node_type::table: {
      std::vector<std::pair<std::string, Value>> entries;
      for (const auto& e : entries_in_file_order(*node.as_table())) {
        entries.emplace_back(std::string(e.key->str()), to_value(*e.node));
      }
      return Value::object(entries);
    }
    case toml::node_type::none: break;
  }
  return Value::null();
}

std::vector<TableEntry> entries_in_file_order(const toml::table& table) {
  std::vector<TableEntry> out;
  out.reserve(table.size());
  for (const auto& [key, node] : table) out.push_back({&key, &node});
  // Stable, and the map order (by key) breaks position ties.
  std::stable_sort(out.begin(), out.end(), [](const TableEntry& a, const TableEntry& b) {
    return before(a.key->source().begin, b.key->source().begin);
  });
  return out;
}

}  // namespace sluice::host::config_detail
