#include "value/json_ondemand.hpp"

#include <simdjson.h>
#include <boost/container/small_vector.hpp>

#include <sluice/detail/utf8.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

namespace sluice::host {
namespace {

namespace od = simdjson::ondemand;

constexpr double k_two_pow_63 = 9223372036854775808.0;
// Deeper documents go to the DOM decoder: each level here is a stack frame holding its
// container's entries, and executor threads have ordinary stacks.
constexpr int k_max_depth = 64;

// One container's entries while it is read; the references not handed to a value block
// are released (an error half-way through leaks nothing).
class Entries {
 public:
  Entries() = default;
  Entries(const Entries&) = delete;
  Entries& operator=(const Entries&) = delete;
  ~Entries() {
    for (sl_value v : values_) value_release(v);
  }
  void push(sl_value v) { values_.push_back(v); }
  void push(std::string_view key, sl_value v) {
    keys_.push_back({key.data(), key.size()});
    values_.push_back(v);
  }
  sl_value array() { return take(array_adopt(values_.data(), values_.size())); }
  sl_value object() { return take(object_adopt(keys_.data(), values_.data(), values_.size())); }

 private:
  sl_value take(sl_value made) noexcept {
    values_.clear();  // the block holds them now
    return made;
  }
  boost::container::small_vector<sl_str, 16> keys_;
  boost::container::small_vector<sl_value, 16> values_;
};

// The token's text without the whitespace raw_json_token() leaves after it.
std::string_view trimmed(std::string_view token) noexcept {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' ||
                            token.back() == '\r')) {
    token.remove_suffix(1);
  }
  return token;
}

class Reader {
 public:
  explicit Reader(bool may_have_escapes) : may_have_escapes_(may_have_escapes) {}

  // False: not decided here (an error, or a case the DOM decoder words or converts).
  bool read(od::value v, sl_value& out, int depth) {
    od::json_type type;
    if (v.type().get(type)) return false;
    switch (type) {
      case od::json_type::object: {
        if (depth >= k_max_depth) return false;
        od::object object;
        if (v.get_object().get(object)) return false;
        Entries entries;
        for (auto field_or_error : object) {
          od::field field;
          if (std::move(field_or_error).get(field)) return false;
          std::string_view key;
          if (field.unescaped_key().get(key) || !plain(key)) return false;
          sl_value item;
          if (!read(field.value(), item, depth + 1)) return false;
          entries.push(key, item);
        }
        out = entries.object();
        return true;
      }
      case od::json_type::array: {
        if (depth >= k_max_depth) return false;
        od::array array;
        if (v.get_array().get(array)) return false;
        Entries entries;
        for (auto item_or_error : array) {
          od::value item_value;
          if (std::move(item_or_error).get(item_value)) return false;
          sl_value item;
          if (!read(item_value, item, depth + 1)) return false;
          entries.push(item);
        }
        out = entries.array();
        return true;
      }
      case od::json_type::string: {
        std::string_view text;
        if (v.get_string().get(text) || !plain(text)) return false;
        out = string_create(text.data(), text.size());
        return true;
      }
      case od::json_type::number: return number(v, out);
      case od::json_type::boolean: {
        // The literal exactly (the type is read from the first character only).
        const std::string_view token = trimmed(v.raw_json_token());
        bool b = false;
        if (v.get_bool().get(b) || token != (b ? "true" : "false")) return false;
        out = sl_bool(b ? 1 : 0);
        return true;
      }
      case od::json_type::null: {
        const std::string_view token = trimmed(v.raw_json_token());
        bool is_null = false;
        if (v.is_null().get(is_null) || !is_null || token != "null") return false;
        out = sl_null();
        return true;
      }
    }
    return false;
  }

 private:
  // The DOM decoder's number rules, where they need the literal ("-0", past int64), are
  // left to it.
  static bool number(od::value v, sl_value& out) {
    const std::string_view token = v.raw_json_token();
    od::number_type type;
    if (v.get_number_type().get(type)) return false;
    if (type == od::number_type::signed_integer) {
      int64_t i = 0;
      if (v.get_int64().get(i) || (i == 0 && !token.empty() && token.front() == '-')) {
        return false;
      }
      out = sl_int(i);
      return true;
    }
    if (type == od::number_type::floating_point_number) {
      // Over 19 significant digits simdjson takes a slower route, whose rounding differs
      // between On-Demand and the DOM (the fuzz target found 0.19223372036854775808): the
      // DOM decoder, the reference, decides those.
      if (significant_digits(token) > 19) return false;
      double d = 0;
      if (v.get_double().get(d)) return false;
      if (std::fabs(d) >= k_two_pow_63 && token.find_first_of(".eE") == std::string_view::npos) {
        return false;  // an integer literal past int64
      }
      out = sl_float(d);
      return true;
    }
    return false;  // unsigned_integer: past int64
  }

  // The digits of a number literal's mantissa, leading zeros not counted.
  static size_t significant_digits(std::string_view token) noexcept {
    size_t count = 0;
    bool leading = true;
    for (char c : token) {
      if (c == 'e' || c == 'E') break;
      if (c < '0' || c > '9') continue;
      if (leading && c == '0') continue;
      leading = false;
      ++count;
    }
    return count;
  }

  // simdjson lets an escaped lone surrogate through as ill-formed bytes; the DOM decoder
  // replaces them (json.cc, text_of). Only text with a \u escape can hold one.
  [[nodiscard]] bool plain(std::string_view s) const noexcept {
    return !may_have_escapes_ || sdk::valid_utf8(s);
  }

  bool may_have_escapes_;
};

// The document, copied behind simdjson's required padding; one per thread, grown as needed.
class PaddedBuffer {
 public:
  const char* fill(std::string_view text) {
    const size_t need = text.size() + simdjson::SIMDJSON_PADDING;
    if (need > capacity_) {
      capacity_ = std::max(need, 2 * capacity_);
      data_ = std::make_unique<char[]>(capacity_);
    }
    if (!text.empty()) std::memcpy(data_.get(), text.data(), text.size());
    std::memset(data_.get() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    return data_.get();
  }
  [[nodiscard]] size_t capacity() const noexcept { return capacity_; }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

}  // namespace

std::optional<Value> json_parse_ondemand(std::string_view text) {
  thread_local od::parser parser;
  thread_local PaddedBuffer buffer;
  const char* padded = buffer.fill(text);
  od::document doc;
  if (parser.iterate(padded, text.size(), buffer.capacity()).get(doc)) return std::nullopt;
  od::json_type type;
  if (doc.type().get(type) || (type != od::json_type::object && type != od::json_type::array)) {
    return std::nullopt;  // scalar documents: the DOM decoder
  }
  od::value root;
  if (doc.get_value().get(root)) return std::nullopt;
  sl_value out;
  Reader reader(text.find("\\u") != std::string_view::npos);
  if (!reader.read(root, out, 0)) return std::nullopt;
  Value value = Value::adopt(out);
  // Anything after the root value (a second document, stray text) is the DOM decoder's error.
  if (!doc.current_location().error()) return std::nullopt;
  return value;
}

}  // namespace sluice::host
