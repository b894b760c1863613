#include "value/json.hpp"

#include "value/json_ondemand.hpp"

#include <simdjson.h>
#include <boost/container/small_vector.hpp>

#include <sluice/detail/utf8.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <vector>
#include <fmt/format.h>

namespace sluice::host {
namespace {

constexpr double k_two_pow_63 = 9223372036854775808.0;

// simdjson's DOM turns an integer literal past int64 into a uint64 or a double, and "-0"
// into the int 0; the rules of docs/ARCHITECTURE.md ("Numbers") need the literal in
// those rare cases. The numbers of the text are found in document order (the order in
// which convert() visits them), only when a case needs it.
class Decoder {
 public:
  explicit Decoder(std::string_view text)
      : text_(text),
        may_have_minus_zero_(has_minus_zero_token(text)),
        may_have_escapes_(text.find("\\u") != std::string_view::npos) {}

  Result<Value> convert(simdjson::dom::element e) {
    using simdjson::dom::element_type;
    switch (e.type()) {
      case element_type::NULL_VALUE: return Value::null();
      case element_type::BOOL: return Value::boolean(bool(e.get_bool()));
      case element_type::INT64: {
        const size_t index = numbers_++;
        const int64_t i = int64_t(e.get_int64());
        // -0: int64 has no negative zero, so it is the float -0.0 (its sign kept).
        if (i == 0 && may_have_minus_zero_ && number_token(index) == "-0") {
          return Value::floating(-0.0);
        }
        return Value::integer(i);
      }
      case element_type::UINT64: return out_of_range(number_token(numbers_++));
      case element_type::DOUBLE: {
        const size_t index = numbers_++;
        const double d = double(e.get_double());
        // An integer literal past int64 that simdjson read as a double (over 2^64).
        if (std::fabs(d) >= k_two_pow_63) {
          const std::string_view token = number_token(index);
          if (token.find_first_of(".eE") == std::string_view::npos) return out_of_range(token);
        }
        return Value::floating(d);
      }
      case element_type::STRING: {
        const std::string_view text(e.get_string());
        return Value::string(may_have_escapes_ ? text_of(text) : text);
      }
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
          entries.emplace_back(std::string(may_have_escapes_ ? text_of(kv.key) : kv.key),
                               std::move(v));
        }
        return Value::object(entries);
      }
    }
    return Status(SL_INTERNAL, "unknown JSON element type");
  }

  // The error for the first integer literal outside int64, if the text has one.
  std::optional<Status> first_integer_out_of_range() {
    if (!scanned_) scan();
    for (std::string_view token : tokens_) {
      if (token.find_first_of(".eE") != std::string_view::npos) continue;
      int64_t ignored = 0;
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), ignored);
      if (ec == std::errc::result_out_of_range) return out_of_range(token);
    }
    return std::nullopt;
  }

 private:
  // "-0" not followed by a digit, '.' or an exponent: what a "-0" literal looks like (a
  // date's "-05" or a "-0.5" is not). Also true for such text inside a string (rare): the
  // scan then decides.
  static bool has_minus_zero_token(std::string_view text) {
    for (size_t at = text.find("-0"); at != std::string_view::npos; at = text.find("-0", at + 2)) {
      if (at + 2 == text.size()) return true;
      const char next = text[at + 2];
      if (!std::isdigit(static_cast<unsigned char>(next)) && next != '.' && next != 'e' &&
          next != 'E') {
        return true;
      }
    }
    return false;
  }

  // simdjson checks the UTF-8 of the text but lets an escaped lone surrogate ("\ud800")
  // through as the bytes of one: strings are valid UTF-8, so that becomes U+FFFD.
  // Valid until the next call.
  std::string_view text_of(std::string_view s) {
    if (sdk::valid_utf8(s)) return s;
    fixed_.clear();
    sdk::append_utf8_replacing(fixed_, s);
    return fixed_;
  }

  static Status out_of_range(std::string_view token) {
    constexpr size_t k_shown = 40;
    const std::string shown =
        token.size() <= k_shown
            ? std::string(token)
            : fmt::format("{}... ({} digits)", token.substr(0, k_shown), token.size());
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("invalid JSON: the integer {} is out of range: integers are 64-bit "
                              "signed (-9223372036854775808 to 9223372036854775807); write it "
                              "as a float (with a fraction or an exponent) or as a string",
                              shown));
  }

  // The index-th number literal of the (valid) text, in document order.
  std::string_view number_token(size_t index) {
    if (!scanned_) scan();
    return index < tokens_.size() ? tokens_[index] : std::string_view();
  }

  void scan() {
    scanned_ = true;
    bool in_string = false;
    for (size_t i = 0; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '-' || (c >= '0' && c <= '9')) {  // outside strings: only numbers
        size_t end = i + 1;
        while (end < text_.size() &&
               (std::isdigit(static_cast<unsigned char>(text_[end])) || text_[end] == '.' ||
                text_[end] == 'e' || text_[end] == 'E' || text_[end] == '+' || text_[end] == '-')) {
          ++end;
        }
        tokens_.push_back(text_.substr(i, end - i));
        i = end - 1;
      }
    }
  }

  std::string_view text_;
  bool may_have_minus_zero_;
  bool may_have_escapes_;
  size_t numbers_ = 0;  // numbers converted so far
  bool scanned_ = false;
  std::vector<std::string_view> tokens_;
  std::string fixed_;  // text_of's replaced string
};

}  // namespace

// A string as JSON: always valid UTF-8 out. Strings are valid UTF-8 by the data model;
// should one not be (a plugin's value_string is not checked), each ill-formed part is
// written as U+FFFD rather than as raw bytes no JSON parser accepts.
void json_append_string(std::string& out, std::string_view s) {
  out.push_back('"');
  size_t bad = 0;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const size_t n = sdk::utf8_sequence_at(s, i, bad);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD itself, as the decoder gives it back
        i += bad;
      } else {
        out.append(s.data() + i, n);
        i += n;
      }
      continue;
    }
    ++i;
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

namespace {

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
  if (std::optional<Value> fast = json_parse_ondemand(text)) return std::move(*fast);
  return json_parse_dom(text);
}

Result<Value> json_parse_dom(std::string_view text) {
  // One parser per thread: it keeps its buffers between documents.
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (auto error = parser.parse(padded).get(root); error) {
    // simdjson refuses an integer literal past 2^64 itself: say which rule it broke.
    if (error == simdjson::NUMBER_ERROR) {
      if (auto big = Decoder(text).first_integer_out_of_range()) return *big;
    }
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("invalid JSON: {}", simdjson::error_message(error)));
  }
  return Decoder(text).convert(root);
}

namespace {

// One value that is not an array or object.
void append_scalar(std::string& out, sl_value v) {
  switch (v.kind) {
    case SL_KIND_NULL: out += "null"; return;
    case SL_KIND_BOOL: out += v.as.i ? "true" : "false"; return;
    case SL_KIND_INT: fmt::format_to(std::back_inserter(out), "{}", v.as.i); return;
    case SL_KIND_FLOAT: {
      // JSON has no NaN or infinity: written as strings, as Protocol Buffers' JSON
      // mapping does, rather than as a null that loses what they were.
      if (std::isnan(v.as.f)) {
        out += "\"NaN\"";
        return;
      }
      if (std::isinf(v.as.f)) {
        out += v.as.f > 0 ? "\"Infinity\"" : "\"-Infinity\"";
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
      json_append_string(out, {s.data, s.size});
      return;
    }
    case SL_KIND_BYTES: {
      sl_str s = value_str(v);
      append_base64(out, {s.data, s.size});
      return;
    }
    default: out += "null"; return;
  }
}

}  // namespace

// Iterative, with an explicit stack of the open containers: a value nested 10,000 deep
// (a plugin can build one; `sluiced plugin-check` feeds one) overflowed the thread's stack
// when each level was a call.
void json_append(std::string& out, sl_value v) {
  struct Open {
    sl_value container;
    size_t next;
    size_t size;
  };
  boost::container::small_vector<Open, 16> open;
  for (;;) {
    if (v.kind == SL_KIND_ARRAY || v.kind == SL_KIND_OBJECT) {
      out.push_back(v.kind == SL_KIND_ARRAY ? '[' : '{');
      open.push_back({v, 0, value_size(v)});
    } else {
      append_scalar(out, v);
    }
    for (;;) {  // the next value to write, closing the containers that are done
      if (open.empty()) return;
      Open& o = open.back();
      if (o.next == o.size) {
        out.push_back(o.container.kind == SL_KIND_ARRAY ? ']' : '}');
        open.pop_back();
        continue;
      }
      if (o.next) out.push_back(',');
      if (o.container.kind == SL_KIND_OBJECT) {
        sl_str k = object_key_at(o.container, o.next);
        json_append_string(out, {k.data, k.size});
        out.push_back(':');
      }
      v = value_at(o.container, o.next++);
      break;
    }
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
