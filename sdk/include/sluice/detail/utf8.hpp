// sluice/detail/utf8.hpp — UTF-8 checks for string values. Header-only, no host calls, so
// the host uses it too. A string value is valid UTF-8 (the host does not check what a
// plugin passes to value_string: a source that reads text checks it, as from_textfile
// does, and the JSON writer replaces what is not).
// Part of sluice.hpp; include <sluice/sluice.hpp>, not this file.
#ifndef SLUICE_DETAIL_UTF8_HPP
#define SLUICE_DETAIL_UTF8_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sluice::sdk {

/// The length (1 to 4) of the well-formed UTF-8 sequence starting at `s[at]` (`at` <
/// s.size()), or 0 when the bytes there are ill-formed; then `bad` is set to the length
/// of the maximal ill-formed subpart (1 to 3 bytes), which a decoder replaces by one
/// U+FFFD as Unicode (chapter 3, "U+FFFD Substitution of Maximal Subparts"), Python and
/// browsers do. Overlong forms, surrogates and code points past U+10FFFF are ill-formed.
/// Since: SDK 1.1 (header-only, any host).
constexpr size_t utf8_sequence_at(std::string_view s, size_t at, size_t& bad) noexcept {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = byte(at);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    bad = 1;  // a continuation byte, C0/C1 (always overlong) or F5..FF
    return 0;
  }
  for (size_t i = 1; i < n; ++i) {
    const bool in_range = at + i < s.size() && byte(at + i) >= (i == 1 ? lo : 0x80) &&
                          byte(at + i) <= (i == 1 ? hi : 0xBF);
    if (!in_range) {
      bad = i;
      return 0;
    }
  }
  return n;
}

/// True when `s` is well-formed UTF-8. Thread-safe. Since: SDK 1.1 (header-only, any host).
inline bool valid_utf8(std::string_view s) noexcept {
  const char* p = s.data();
  const size_t size = s.size();
  size_t at = 0;
  // Most text is ASCII: 16 bytes at a time, the rest as one (overlapping) 8-byte load.
  constexpr uint64_t k_high = 0x8080808080808080u;
  uint64_t a = 0;
  uint64_t b = 0;
  for (; size - at >= 16; at += 16) {
    std::memcpy(&a, p + at, 8);
    std::memcpy(&b, p + at + 8, 8);
    if (((a | b) & k_high) != 0) break;
  }
  if (size - at < 16) {  // no non-ASCII byte before `at`
    if (size >= 8) {     // [at, size) is at most 15 bytes: two loads cover it
      std::memcpy(&a, p + (size - at >= 8 ? at : size - 8), 8);
      std::memcpy(&b, p + size - 8, 8);
      if (((a | b) & k_high) == 0) return true;
    } else {
      bool ascii = true;
      for (size_t i = at; i < size; ++i) ascii &= static_cast<unsigned char>(p[i]) < 0x80;
      if (ascii) return true;
    }
  }
  size_t bad = 0;
  while (at < size) {
    if (static_cast<unsigned char>(p[at]) < 0x80) {
      ++at;
      continue;
    }
    const size_t n = utf8_sequence_at(s, at, bad);
    if (n == 0) return false;
    at += n;
  }
  return true;
}

/// Appends `s` to `out` with every maximal ill-formed subpart replaced by U+FFFD (what
/// Python's `bytes.decode(errors="replace")` gives). Returns how many were replaced.
/// Thread-safe. Since: SDK 1.1 (header-only, any host).
inline size_t append_utf8_replacing(std::string& out, std::string_view s) {
  size_t replaced = 0;
  size_t bad = 0;
  for (size_t at = 0; at < s.size();) {
    const size_t n = utf8_sequence_at(s, at, bad);
    if (n > 0) {
      out.append(s.data() + at, n);
      at += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
      at += bad;
      ++replaced;
    }
  }
  return replaced;
}

}  // namespace sluice::sdk

#endif  // SLUICE_DETAIL_UTF8_HPP
