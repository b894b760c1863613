// The standard function library, part 2: paths (get), strings and conversions.
#include <sluice/sluice.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "functions.hpp"

namespace sluice::core_ops {

using sdk::Args;
using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

namespace {

Status wrong_kind(const char* fn, const char* expected, ValueRef x) {
  return sdk::invalid_argument(std::string(fn) + ": expected " + expected + ", got " +
                               std::string(x.kind_name()));
}

// --- UTF-8 ---------------------------------------------------------------------------------

constexpr uint32_t k_invalid = 0xFFFFFFFF;

/// The code point starting at s[i] and its length in bytes; an invalid or truncated
/// sequence reads as k_invalid of length 1 (never whitespace, never matches a char).
std::pair<uint32_t, size_t> decode_at(std::string_view s, size_t i) noexcept {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return {b, 1};
  size_t n = 0;
  uint32_t cp = 0;
  if ((b & 0xE0) == 0xC0) {
    n = 2;
    cp = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    cp = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    cp = b & 0x07;
  } else {
    return {k_invalid, 1};
  }
  if (i + n > s.size()) return {k_invalid, 1};
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return {k_invalid, 1};
    cp = (cp << 6) | (c & 0x3F);
  }
  return {cp, n};
}

/// The start of the code point that ends at s[end - 1] (end > 0).
size_t start_before(std::string_view s, size_t end) noexcept {
  size_t i = end - 1;
  while (i > 0 && end - i < 4 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  if (decode_at(s, i).second != end - i) return end - 1;  // not one well-formed sequence
  return i;
}

/// Python's str.isspace() for one code point.
constexpr bool is_space(uint32_t c) noexcept {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// --- float text as Python's repr -----------------------------------------------------------

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form: [-]D[.DDD]e[+-]XX.
  std::array<char, 64> buf{};
  auto [end, ec] =
      std::to_chars(buf.data(), buf.data() + buf.size(), d, std::chars_format::scientific);
  std::string_view sci(buf.data(), static_cast<size_t>(end - buf.data()));
  std::string sign;
  if (sci.front() == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  int exp = std::atoi(std::string(sci.substr(e + 1)).c_str());
  // Python's float_repr_style 'r': fixed notation when -4 <= exp < 16, else scientific.
  // Built by appending: GCC 12 at -O3 reports a false -Wrestrict on `"literal" + string`
  // (operator+ inserting at the front), which -Werror turns into a failed Release build.
  std::string out = sign;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out.append("0.").append(static_cast<size_t>(-exp - 1), '0').append(digits);
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out.append(digits).append(static_cast<size_t>(exp) + 1 - digits.size(), '0').append(".0");
    } else {
      const size_t point = static_cast<size_t>(exp) + 1;
      out.append(digits, 0, point).append(".").append(digits, point);
    }
    return out;
  }
  out.append(digits, 0, 1);
  if (digits.size() > 1) out.append(".").append(digits, 1);
  out.append(exp < 0 ? "e-" : "e+");
  const int abs_exp = exp < 0 ? -exp : exp;
  if (abs_exp < 10) out.push_back('0');
  out.append(std::to_string(abs_exp));
  return out;
}

/// Python's rule for underscores in numeric literals: single, and only between digits.
/// Returns the text without them, or nullopt when one is misplaced.
std::optional<std::string> drop_underscores(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '_') {
      out.push_back(t[i]);
      continue;
    }
    const bool digit_before = i > 0 && std::isdigit(static_cast<unsigned char>(t[i - 1]));
    const bool digit_after = i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i + 1]));
    if (!digit_before || !digit_after) return std::nullopt;
  }
  return out;
}

/// Text without leading and trailing Python whitespace.
std::string_view trim_space(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e) {
    auto [cp, n] = decode_at(s, b);
    if (!is_space(cp)) break;
    b += n;
  }
  while (e > b) {
    const size_t st = start_before(s, e);
    if (!is_space(decode_at(s, st).first)) break;
    e = st;
  }
  return s.substr(b, e - b);
}

std::string quoted(std::string_view s) {
  constexpr size_t k_max = 40;
  std::string out(1, '"');  // appended, not "\"" + ...: see py_float_repr
  out.append(s.substr(0, k_max)).append(s.size() > k_max ? "...\"" : "\"");
  return out;
}

}  // namespace

// --- Path and string_form ------------------------------------------------------------------

Path::Path(const Config& cfg, std::string_view key) {
  const Value spec = cfg.get_value(key);
  auto add = [&](const Value& step) {
    if (step.is_string()) {
      steps_.emplace_back(std::string(step.as_str()));
    } else if (step.is_int()) {
      steps_.emplace_back(step.as_int());
    } else {
      cfg.fail(key, "must be a key (string), an index (int) or an array of them (got " +
                        std::string(step.kind_name()) + ")");
    }
  };
  if (spec.is_array()) {
    for (size_t i = 0; i < spec.size(); ++i) add(spec[i]);
  } else {
    add(spec);
  }
}

std::optional<Value> Path::lookup(ValueRef x) const {
  Value cur = Value::borrow(x);
  for (const auto& step : steps_) {
    if (const auto* key = std::get_if<std::string>(&step)) {
      std::optional<Value> next = cur.get(*key);
      if (!next) return std::nullopt;
      cur = std::move(*next);
    } else {
      if (!cur.is_array()) return std::nullopt;
      int64_t i = std::get<int64_t>(step);
      const auto n = static_cast<int64_t>(cur.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      cur = cur[static_cast<size_t>(i)];
    }
  }
  return cur;
}

std::string string_form(ValueRef x) {
  switch (x.kind()) {
    case SL_KIND_STRING:
    case SL_KIND_BYTES: return std::string(x.as_str());
    case SL_KIND_INT: return std::to_string(x.raw().as.i);
    case SL_KIND_FLOAT: return py_float_repr(x.raw().as.f);
    default: return x.to_json();
  }
}

// --- get -----------------------------------------------------------------------------------

Get::Get(const Config& args)
    : path_(args, "path"), default_(args.find_value("default").value_or(Value())) {}

Value Get::call(ValueRef x) const { return path_.lookup(x).value_or(default_); }

Status Get::call_batch(Context /*ctx*/, Args in, std::span<Value> out) const {
  for (size_t i = 0; i < in.size(); ++i) out[i] = call(in[i]);
  return {};
}

// --- case ----------------------------------------------------------------------------------

template <bool ToUpper>
Result<Value> ChangeCase<ToUpper>::call(ValueRef x) {
  if (!x.is_string()) return wrong_kind(k_name, "a string", x);
  const auto changes = [](char c) {
    return ToUpper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z');
  };
  const std::string_view s = x.as_str();
  const auto first = std::find_if(s.begin(), s.end(), changes);
  if (first == s.end()) return Value::borrow(x);  // nothing to change: share, don't copy
  std::string t(s);
  for (auto it = t.begin() + (first - s.begin()); it != t.end(); ++it) {
    if (changes(*it)) *it = static_cast<char>(*it ^ 0x20);
  }
  return Value::string(t);
}

template struct ChangeCase<true>;
template struct ChangeCase<false>;

// --- split ---------------------------------------------------------------------------------

Split::Split(const Config& args)
    : sep_(args.find_string("sep")), maxsplit_(args.find_int("maxsplit").value_or(-1)) {
  if (sep_ && sep_->empty()) args.fail("sep", "must not be empty (omit it to split on whitespace)");
}

Result<Value> Split::call(ValueRef x) const {
  if (!x.is_string()) return wrong_kind(k_name, "a string", x);
  const std::string_view s = x.as_str();
  std::vector<Value>& parts = parts_;
  parts.clear();
  int64_t splits = 0;
  if (sep_) {
    size_t from = 0;
    for (;;) {
      const size_t at =
          (maxsplit_ >= 0 && splits >= maxsplit_) ? std::string_view::npos : s.find(*sep_, from);
      if (at == std::string_view::npos) break;
      parts.push_back(Value::string(s.substr(from, at - from)));
      from = at + sep_->size();
      ++splits;
    }
    parts.push_back(Value::string(s.substr(from)));
  } else {
    size_t i = 0;
    for (;;) {
      while (i < s.size()) {  // skip a run of whitespace
        auto [cp, n] = decode_at(s, i);
        if (!is_space(cp)) break;
        i += n;
      }
      if (i >= s.size()) break;
      if (maxsplit_ >= 0 && splits >= maxsplit_) {  // the rest, trailing whitespace kept
        parts.push_back(Value::string(s.substr(i)));
        break;
      }
      const size_t start = i;
      while (i < s.size()) {
        auto [cp, n] = decode_at(s, i);
        if (is_space(cp)) break;
        i += n;
      }
      parts.push_back(Value::string(s.substr(start, i - start)));
      ++splits;
    }
  }
  Value array = Value::array(parts);
  parts.clear();  // the array holds its own references
  return array;
}

// --- strip ---------------------------------------------------------------------------------

Strip::Strip(const Config& args) {
  if (std::optional<std::string> chars = args.find_string("chars")) {
    std::vector<uint32_t> cps;
    for (size_t i = 0; i < chars->size();) {
      auto [cp, n] = decode_at(*chars, i);
      cps.push_back(cp);
      i += n;
    }
    chars_ = std::move(cps);
  }
}

Result<Value> Strip::call(ValueRef x) const {
  if (!x.is_string()) return wrong_kind(k_name, "a string", x);
  const std::string_view s = x.as_str();
  std::string_view t;
  if (!chars_) {
    t = trim_space(s);
  } else {
    const auto strip_it = [&](uint32_t cp) {
      return cp != k_invalid && std::find(chars_->begin(), chars_->end(), cp) != chars_->end();
    };
    size_t b = 0;
    size_t e = s.size();
    while (b < e) {
      auto [cp, n] = decode_at(s, b);
      if (!strip_it(cp)) break;
      b += n;
    }
    while (e > b) {
      const size_t st = start_before(s, e);
      if (!strip_it(decode_at(s, st).first)) break;
      e = st;
    }
    t = s.substr(b, e - b);
  }
  if (t.size() == s.size()) return Value::borrow(x);
  return Value::string(t);
}

// --- len -----------------------------------------------------------------------------------

Result<Value> Len::call(ValueRef x) {
  switch (x.kind()) {
    case SL_KIND_STRING: {
      const std::string_view s = x.as_str();
      const auto n = std::count_if(s.begin(), s.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
      });
      return Value::integer(n);
    }
    case SL_KIND_BYTES:
    case SL_KIND_ARRAY:
    case SL_KIND_OBJECT: return Value::integer(static_cast<int64_t>(x.size()));
    default: return wrong_kind(k_name, "a string, bytes, an array or an object", x);
  }
}

Status Len::call_batch(Context /*ctx*/, Args in, std::span<Value> out) {
  for (size_t i = 0; i < in.size(); ++i) {
    SLUICE_SDK_ASSIGN_OR_RETURN(out[i], call(in[i]));
  }
  return {};
}

// --- conversions ---------------------------------------------------------------------------

namespace {

// The common case of to_int on text, decided without the general path's whitespace,
// underscore and range handling: 1 to 18 ASCII digits, with an optional '-' (18 digits
// cannot overflow an int64). Anything else (nullopt) goes the general way, which gives the
// same int for these texts (tests/unit/functions/functions_test.cc, ToIntFastPath).
std::optional<int64_t> plain_decimal(std::string_view s) noexcept {
  const bool negative = !s.empty() && s.front() == '-';
  if (negative) s.remove_prefix(1);
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (const char c : s) {
    const auto digit = static_cast<unsigned>(c - '0');
    if (digit > 9) return std::nullopt;
    v = v * 10 + static_cast<int64_t>(digit);
  }
  return negative ? -v : v;
}

}  // namespace

Result<Value> ToInt::call(ValueRef x) {
  switch (x.kind()) {
    case SL_KIND_INT: return Value::borrow(x);
    case SL_KIND_BOOL: return Value::integer(x.raw().as.i != 0 ? 1 : 0);
    case SL_KIND_FLOAT: {
      const double d = x.raw().as.f;
      if (std::isnan(d)) return sdk::invalid_argument("to_int: cannot convert float NaN to int");
      const double t = std::trunc(d);
      // [-2^63, 2^63): both bounds are exact doubles.
      if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) {
        return sdk::out_of_range("to_int: float " + py_float_repr(d) +
                                 " does not fit in a 64-bit int");
      }
      return Value::integer(static_cast<int64_t>(t));
    }
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      if (std::optional<int64_t> i = plain_decimal(x.as_str())) return Value::integer(*i);
      const std::string_view text = trim_space(x.as_str());
      std::optional<std::string> t = drop_underscores(text);
      std::string_view digits = t ? std::string_view(*t) : std::string_view();
      const bool negative = !digits.empty() && digits.front() == '-';
      if (!digits.empty() && (negative || digits.front() == '+')) digits.remove_prefix(1);
      if (!t || digits.empty() ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return sdk::invalid_argument("to_int: not a decimal integer: " + quoted(x.as_str()) + " (" +
                                     std::string(x.kind_name()) + ")");
      }
      uint64_t magnitude = 0;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
      const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
      if (ec != std::errc() || magnitude > limit) {
        return sdk::out_of_range("to_int: " + quoted(text) + " does not fit in a 64-bit int");
      }
      // -(2^63) is representable: negate in unsigned arithmetic, then convert.
      return Value::integer(negative ? static_cast<int64_t>(~magnitude + 1)
                                     : static_cast<int64_t>(magnitude));
    }
    default: return wrong_kind(k_name, "a number, a bool or a string", x);
  }
}

Result<Value> ToFloat::call(ValueRef x) {
  switch (x.kind()) {
    case SL_KIND_FLOAT: return Value::borrow(x);
    case SL_KIND_INT: return Value::floating(static_cast<double>(x.raw().as.i));
    case SL_KIND_BOOL: return Value::floating(x.raw().as.i != 0 ? 1.0 : 0.0);
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      const std::string_view text = trim_space(x.as_str());
      std::optional<std::string> t = drop_underscores(text);
      std::string_view num = t ? std::string_view(*t) : std::string_view();
      const bool negative = !num.empty() && num.front() == '-';
      if (!num.empty() && (num.front() == '+' || negative)) num.remove_prefix(1);
      const auto bad = [&] {
        return sdk::invalid_argument("to_float: not a number: " + quoted(x.as_str()) + " (" +
                                     std::string(x.kind_name()) + ")");
      };
      // from_chars takes no sign and no hex in `general` format; it does take "nan(...)",
      // which Python refuses.
      if (!t || num.empty() || num.front() == '-' || num.front() == '+' ||
          num.find('(') != std::string_view::npos) {
        return bad();
      }
      double d = 0;
      auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), d);
      if (end != num.data() + num.size()) return bad();
      if (ec == std::errc::result_out_of_range) {
        d = std::strtod(std::string(num).c_str(), nullptr);  // inf or 0, as Python
      } else if (ec != std::errc()) {
        return bad();
      }
      return Value::floating(negative ? -d : d);
    }
    default: return wrong_kind(k_name, "a number, a bool or a string", x);
  }
}

Value ToString::call(ValueRef x) {
  if (x.is_string()) return Value::borrow(x);
  return Value::string(string_form(x));
}

}  // namespace sluice::core_ops
