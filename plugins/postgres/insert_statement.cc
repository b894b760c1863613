// INSERT / upsert statements; see insert_statement.hpp.
#include "insert_statement.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "pg_connection.hpp"

namespace sluice::postgres {

std::string quote_table(const std::string& table) {
  const size_t dot = table.find('.');
  auto part_ok = [](std::string_view p) {
    return !p.empty() && p.size() <= 63 && p.find('\0') == std::string_view::npos;
  };
  if (dot == std::string::npos) return part_ok(table) ? quote_identifier(table) : std::string();
  const std::string_view schema(table.data(), dot);
  const std::string_view name(table.data() + dot + 1, table.size() - dot - 1);
  if (!part_ok(schema) || !part_ok(name) || name.find('.') != std::string_view::npos) return {};
  return quote_identifier(schema) + "." + quote_identifier(name);
}

InsertStatement::InsertStatement(const std::string& table, const RowMapping& mapping)
    : table_(quote_table(table)), width_(mapping.columns.size()) {
  head_ = "INSERT INTO " + table_ + " (";
  for (size_t c = 0; c < mapping.columns.size(); ++c) {
    head_ += (c == 0 ? "" : ", ") + quote_identifier(mapping.columns[c].column);
  }
  head_ += ") VALUES ";
  if (mapping.key_indexes.empty()) return;
  tail_ = " ON CONFLICT (";
  for (size_t k = 0; k < mapping.key_indexes.size(); ++k) {
    tail_ +=
        (k == 0 ? "" : ", ") + quote_identifier(mapping.columns[mapping.key_indexes[k]].column);
  }
  std::string sets;
  for (size_t c = 0; c < mapping.columns.size(); ++c) {
    if (std::find(mapping.key_indexes.begin(), mapping.key_indexes.end(), c) !=
        mapping.key_indexes.end()) {
      continue;
    }
    const std::string col = quote_identifier(mapping.columns[c].column);
    sets += (sets.empty() ? "" : ", ") + col + " = EXCLUDED." + col;
  }
  tail_ += sets.empty() ? ") DO NOTHING" : ") DO UPDATE SET " + sets;
}

std::string InsertStatement::sql(size_t rows) const {
  std::string out = head_;
  out.reserve(head_.size() + tail_.size() + rows * width_ * 7);
  size_t n = 1;
  for (size_t r = 0; r < rows; ++r) {
    out += r == 0 ? "(" : ", (";
    for (size_t c = 0; c < width_; ++c, ++n) {
      if (c != 0) out += ", ";
      out += '$';
      out += std::to_string(n);
    }
    out += ')';
  }
  out += tail_;
  return out;
}

std::vector<size_t> rows_to_send(const RowBuffer& buf, const RowMapping& mapping, size_t begin,
                                 size_t end) {
  std::vector<size_t> out;
  out.reserve(end - begin);
  if (mapping.key_indexes.empty()) {
    for (size_t r = begin; r < end; ++r) out.push_back(r);
    return out;
  }
  // Key text of each row (the columns' texts joined with a separator no text can make
  // ambiguous: each part is prefixed by its length).
  std::unordered_map<std::string, size_t> last;
  std::vector<std::string> keys(end - begin);
  for (size_t r = begin; r < end; ++r) {
    std::string& key = keys[r - begin];
    for (size_t k : mapping.key_indexes) {
      const std::string& t = buf.texts[r * buf.width + k];
      key += std::to_string(t.size());
      key += ':';
      key += t;
    }
    last[key] = r;
  }
  for (size_t r = begin; r < end; ++r) {
    if (last[keys[r - begin]] == r) out.push_back(r);
  }
  return out;
}

}  // namespace sluice::postgres
