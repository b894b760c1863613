#include "value/json.hpp"

#include <simdjson.h>

#include <cmath>
#include <vector>
#include <fmt/format.h>

namespace sluice::host {
namespace {

Result<Value> convert(simdjson::dom::element e) {
  using simdjson::dom::element_type;
  switch (e.type()) {
    case element_type::NULL_VALUE: return Value::null();
    case element_type::BOOL: return Value::boolean(bool(e.get_bool()));
    case element_type::INT64: return Value::integer(int64_t(e.get_int64()));
    case element_type::UINT64:
      return Value::floating(static_cast<double>(uint64_t(e.get_uint64())));
    case element_type::DOUBLE: return Value::floating(double(e.get_double()));
    case element_type::STRING: return Value::string(std::string_view(e.get_string()));
    case element_type::ARRAY: {
      std::vector<Value> items;
      for (simdjson::dom::element item : e.get_array()) {
        SLUICE_ASSIGN_OR_RETURN(Value v, convert(item));
        items.push_back(std::move(v));
      }
      return Value::array(items);
    }
    case element_type::OBJECT: {
      std::vector<std::pair<std::string, Value>> entries;
      for (simdjson::dom::key_value_pair kv : e.get_object()) {
        SLUICE_ASSIGN_OR_RETURN(Value v, convert(kv.value));
        entries.emplace_back(std::string(kv.key), std::move(v));
      }
      return Value::object(entries);
    }
  }
  return Status(SL_INTERNAL, "unknown JSON element type");
}

void append_escaped(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void append_base64(std::string& out, std::string_view s) {
  static constexpr char k_alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out.push_back('"');
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[k])); };
  for (; i + 3 <= s.size(); i += 3) {
    uint32_t n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(k_alphabet[(n >> shift) & 63]);
  }
  if (size_t rest = s.size() - i; rest > 0) {
    uint32_t n = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out.push_back(k_alphabet[(n >> 18) & 63]);
    out.push_back(k_alphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? k_alphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  out.push_back('"');
}

}  // namespace

Result<Value> json_parse(std::string_view text) {
  // One parser per thread: it keeps its buffers between documents.
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (auto error = parser.parse(padded).get(root); error) {
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("invalid JSON: {}", simdjson::error_message(error)));
  }
  return convert(root);
}

void json_append(std::string& out, sl_value v) {
  switch (v.kind) {
    case SL_KIND_NULL: out += "null"; return;
    case SL_KIND_BOOL: out += v.as.i ? "true" : "false"; return;
    case SL_KIND_INT: fmt::format_to(std::back_inserter(out), "{}", v.as.i); return;
    case SL_KIND_FLOAT: {
      if (!std::isfinite(v.as.f)) {
        out += "null";
        return;
      }
      size_t start = out.size();
      fmt::format_to(std::back_inserter(out), "{}", v.as.f);
      // Keep floats recognisable as floats, as Python's json does ("1.0").
      if (out.find_first_of(".e", start) == std::string::npos) out += ".0";
      return;
    }
    case SL_KIND_STRING: {
      sl_str s = value_str(v);
      append_escaped(out, {s.data, s.size});
      return;
    }
    case SL_KIND_BYTES: {
      sl_str s = value_str(v);
      append_base64(out, {s.data, s.size});
      return;
    }
    case SL_KIND_ARRAY: {
      out.push_back('[');
      for (size_t i = 0, n = value_size(v); i < n; ++i) {
        if (i) out.push_back(',');
        json_append(out, value_at(v, i));
      }
      out.push_back(']');
      return;
    }
    case SL_KIND_OBJECT: {
      out.push_back('{');
      for (size_t i = 0, n = value_size(v); i < n; ++i) {
        if (i) out.push_back(',');
        sl_str k = object_key_at(v, i);
        append_escaped(out, {k.data, k.size});
        out.push_back(':');
        json_append(out, value_at(v, i));
      }
      out.push_back('}');
      return;
    }
    default: out += "null"; return;
  }
}

std::string json_dump(sl_value v) {
  std::string out;
  json_append(out, v);
  return out;
}

std::string display_string(sl_value v) {
  if (v.kind == SL_KIND_STRING) {
    sl_str s = value_str(v);
    return {s.data, s.size};
  }
  return json_dump(v);
}

}  // namespace sluice::host
