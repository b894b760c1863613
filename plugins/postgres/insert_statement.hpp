// The SQL of one multi-row INSERT (or upsert) and its parameters.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "row_mapping.hpp"

namespace sluice::postgres {

/// PostgreSQL's limit of parameters per statement (a 16-bit count in the protocol).
inline constexpr size_t k_max_parameters = 65535;

/// Builds `INSERT INTO table (cols) VALUES ($1, ..), ...` for a row count, with
/// `ON CONFLICT (keys) DO UPDATE SET c = EXCLUDED.c, ...` when the mapping has key columns
/// (DO NOTHING when every column is a key).
class InsertStatement {
 public:
  /// `table` as written in the config: "name" or "schema.name", each part quoted.
  InsertStatement(const std::string& table, const RowMapping& mapping);

  /// The statement for `rows` rows.
  [[nodiscard]] std::string sql(size_t rows) const;
  /// The most rows one statement can take (k_max_parameters / columns).
  [[nodiscard]] size_t max_rows() const { return k_max_parameters / width_; }
  /// The qualified, quoted table name.
  [[nodiscard]] const std::string& table() const { return table_; }

 private:
  std::string table_;
  std::string head_;  // INSERT INTO t (cols) VALUES
  std::string tail_;  // ON CONFLICT ... or empty
  size_t width_;
};

/// "schema.name" or "name" as a quoted identifier; empty when the name is malformed (an
/// empty part, more than two parts, a part longer than 63 bytes).
std::string quote_table(const std::string& table);

/// The rows [begin, end) of `buf` to send in one upsert: when two rows have the same key
/// only the later one is kept (one statement may not update a row twice, and the later
/// change wins anyway), in the order of their last occurrence. Without keys: all of them.
std::vector<size_t> rows_to_send(const RowBuffer& buf, const RowMapping& mapping, size_t begin,
                                 size_t end);

}  // namespace sluice::postgres
