// Elements to rows of text parameters; see row_mapping.hpp.
#include "row_mapping.hpp"

#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

namespace sluice::postgres {

using sdk::Config;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

// PostgreSQL truncates longer identifiers (NAMEDATALEN - 1): refuse them instead, so that
// two long names never become the same column silently.
constexpr size_t k_max_identifier = 63;

void check_identifier(const Config& cfg, std::string_view key, std::string_view name) {
  if (name.empty()) cfg.fail(key, "has an empty column name");
  if (name.size() > k_max_identifier) {
    cfg.fail(key, "column name \"" + std::string(name.substr(0, 80)) +
                      "\" is longer than PostgreSQL's 63 bytes");
  }
  if (name.find('\0') != std::string_view::npos) cfg.fail(key, "column name holds a NUL byte");
}

ColumnSource parse_source(const Config& cfg, std::string_view column, const Value& spec) {
  ColumnSource src;
  src.column = std::string(column);
  const std::string where = "columns";
  auto bad = [&](const std::string& why) {
    cfg.fail(where, "entry '" + src.column + "' " + why +
                        " (a field name, an array index, a path [\"a\", 0, ...], or one of "
                        "\"@value\", \"@json\", \"@key\", \"@event_time\")");
  };
  if (spec.is_string()) {
    const std::string_view s = spec.as_str();
    if (!s.empty() && s.front() == '@') {
      if (s == "@value") {
        src.kind = ColumnSource::Kind::value;
      } else if (s == "@json") {
        src.kind = ColumnSource::Kind::json;
      } else if (s == "@key") {
        src.kind = ColumnSource::Kind::key;
      } else if (s == "@event_time") {
        src.kind = ColumnSource::Kind::event_time;
      } else {
        bad("names no special source \"" + std::string(s) + "\"");
      }
      return src;
    }
    if (s.empty()) bad("is an empty field name");
    src.path.push_back(spec);
    return src;
  }
  if (spec.is_int()) {
    if (spec.as_int() < 0) bad("is a negative index");
    src.path.push_back(spec);
    return src;
  }
  if (spec.is_array()) {
    if (spec.size() == 0) bad("is an empty path");
    for (size_t i = 0; i < spec.size(); ++i) {
      Value seg = spec[i];
      if (!seg.is_string() && !(seg.is_int() && seg.as_int() >= 0)) {
        bad("has a path step that is neither a field name nor an index >= 0: " + seg.to_json());
      }
      src.path.push_back(std::move(seg));
    }
    return src;
  }
  bad("must be a string, an int or an array (got " + std::string(spec.kind_name()) + ")");
  return src;  // not reached: fail throws
}

// ns since the Unix epoch as "YYYY-MM-DD HH:MM:SS.ffffff+00" (timestamptz and timestamp
// both parse it; microseconds are PostgreSQL's resolution).
void append_event_time(std::string& out, int64_t ns) {
  int64_t secs = ns / 1'000'000'000;
  int64_t sub = ns % 1'000'000'000;
  if (sub < 0) {
    sub += 1'000'000'000;
    secs -= 1;
  }
  const time_t t = static_cast<time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  out.append(buf, n);
  char frac[16];
  const int m = std::snprintf(frac, sizeof frac, ".%06lld+00", static_cast<long long>(sub / 1000));
  out.append(frac, static_cast<size_t>(m));
}

}  // namespace

RowMapping RowMapping::from_config(const Config& cfg) {
  RowMapping mapping;
  const Value columns = cfg.get_value("columns");
  if (!columns.is_object()) cfg.fail("columns", "must be a table { column = source, ... }");
  if (columns.size() == 0) cfg.fail("columns", "must name at least one column");
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string_view name = columns.key_at(i);
    check_identifier(cfg, "columns", name);
    mapping.columns.push_back(parse_source(cfg, name, columns[i]));
  }
  if (std::optional<Value> keys = cfg.find_value("key_columns")) {
    if (!keys->is_array() || keys->size() == 0) {
      cfg.fail("key_columns", "must be a non-empty array of column names");
    }
    for (size_t k = 0; k < keys->size(); ++k) {
      const Value name = (*keys)[k];
      if (!name.is_string()) cfg.fail("key_columns", "must hold column names (strings)");
      size_t found = mapping.columns.size();
      for (size_t c = 0; c < mapping.columns.size(); ++c) {
        if (mapping.columns[c].column == name.as_str()) found = c;
      }
      if (found == mapping.columns.size()) {
        std::string list;
        for (const auto& c : mapping.columns) list += (list.empty() ? "\"" : "\", \"") + c.column;
        cfg.fail("key_columns", "names \"" + std::string(name.as_str()) +
                                    "\", which is not a key of `columns` (" + list + "\")");
      }
      for (size_t seen : mapping.key_indexes) {
        if (seen == found) {
          cfg.fail("key_columns", "names \"" + std::string(name.as_str()) + "\" twice");
        }
      }
      mapping.key_indexes.push_back(found);
    }
  }
  return mapping;
}

void append_text(std::string& out, ValueRef v) {
  switch (v.kind()) {
    case SL_KIND_BOOL: out += v.as_bool() ? "true" : "false"; return;
    case SL_KIND_INT: {
      char buf[24];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.as_int());
      out.append(buf, end);
      return;
    }
    case SL_KIND_FLOAT: {
      const double d = v.as_float();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d > 0 ? "Infinity" : "-Infinity";
      } else {
        char buf[32];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);  // shortest round-trip
        out.append(buf, end);
      }
      return;
    }
    case SL_KIND_STRING: out += v.as_str(); return;
    case SL_KIND_BYTES: {
      static constexpr char k_hex[] = "0123456789abcdef";
      out += "\\x";
      for (unsigned char c : v.as_str()) {
        out.push_back(k_hex[c >> 4]);
        out.push_back(k_hex[c & 15]);
      }
      return;
    }
    default: out += v.to_json(); return;  // arrays, objects (null never gets here)
  }
}

Status RowBuffer::append(const RowMapping& mapping, const sl_message& m) {
  const size_t first = texts.size();
  for (const ColumnSource& col : mapping.columns) {
    std::string text;
    bool null = false;
    switch (col.kind) {
      case ColumnSource::Kind::value:
        null = ValueRef(m.value).is_null();
        if (!null) append_text(text, ValueRef(m.value));
        break;
      case ColumnSource::Kind::json: text = ValueRef(m.value).to_json(); break;
      case ColumnSource::Kind::key:
        null = ValueRef(m.key).is_null();
        if (!null) append_text(text, ValueRef(m.key));
        break;
      case ColumnSource::Kind::event_time:
        null = m.timestamp_ns == SL_NO_TIMESTAMP;
        if (!null) append_event_time(text, m.timestamp_ns);
        break;
      case ColumnSource::Kind::path: {
        Value at = Value::borrow(m.value);
        for (const Value& seg : col.path) {
          std::optional<Value> next;
          if (seg.is_string() && at.is_object()) {
            next = at.get(seg.as_str());
          } else if (seg.is_int() && at.is_array() &&
                     static_cast<size_t>(seg.as_int()) < at.size()) {
            next = at[static_cast<size_t>(seg.as_int())];
          }
          if (!next) {
            null = true;
            break;
          }
          at = std::move(*next);
        }
        null = null || at.is_null();
        if (!null) append_text(text, at);
        break;
      }
    }
    texts.push_back(std::move(text));
    is_null.push_back(null ? 1 : 0);
  }
  for (size_t k : mapping.key_indexes) {
    if (is_null[first + k] != 0) {
      const std::string column = mapping.columns[k].column;
      texts.resize(first);
      is_null.resize(first);
      return sdk::invalid_argument("to_postgres: key column \"" + column +
                                   "\" would be NULL for the element " +
                                   ValueRef(m.value).to_json().substr(0, 200));
    }
  }
  return {};
}

}  // namespace sluice::postgres
