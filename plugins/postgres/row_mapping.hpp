// How an element becomes a row: one text parameter (or NULL) per configured column.
//
// `columns = { col = SOURCE, ... }` where SOURCE is
//   "field"            a field of the element (an object)
//   3                  an item of the element (an array)
//   ["a", 0, "b"]      a path of those
//   "@value"           the whole element          "@json"  the whole element as JSON text
//   "@key"             the message key            "@event_time"  the event time (UTC text)
// A missing field (or a null one) is SQL NULL. Values are sent as text and the server
// converts them to the column's type: strings as they are, numbers in decimal (floats
// round-trip exactly), bools as true/false, bytes as bytea hex (\x...), arrays and objects
// as JSON text (for json/jsonb columns).
#pragma once

#include <sluice/sluice.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::postgres {

/// Where a column's value comes from.
struct ColumnSource {
  enum class Kind { path, value, json, key, event_time };
  std::string column;  // the column's name, as written
  Kind kind = Kind::path;
  std::vector<sdk::Value> path;  // Kind::path: field names (strings) and indexes (ints)
};

/// The columns of `columns` and the key columns, checked (Config::fail on a problem: an
/// empty or too long column name, a bad SOURCE, a key column that is not a column, a key
/// column given twice). Used by validate and the constructor alike.
struct RowMapping {
  std::vector<ColumnSource> columns;  // in the config's order
  std::vector<size_t> key_indexes;    // indexes into `columns` of key_columns, in their order

  static RowMapping from_config(const sdk::Config& cfg);
};

/// One row's values, appended to a flat buffer of rows: `texts` holds column c of row r at
/// r * width + c; `is_null` the same for NULLs.
struct RowBuffer {
  size_t width = 0;
  std::vector<std::string> texts;
  std::vector<uint8_t> is_null;

  [[nodiscard]] size_t rows() const { return width == 0 ? 0 : texts.size() / width; }
  void clear() {
    texts.clear();
    is_null.clear();
  }
  /// Appends the row for `m`. A failure (an element whose key column is null, a path into
  /// a value that has no such field) is the message's: nothing is appended.
  sdk::Status append(const RowMapping& mapping, const sl_message& m);
};

/// A value as the text the server parses into the column type (see the file comment).
void append_text(std::string& out, sdk::ValueRef v);

}  // namespace sluice::postgres
