// The text of one element's line, appended to a batch's buffer: what print and
// sink_to_textfile write, each batch in one write.
//
// Why here and not only the host's json_dump: json_dump answers with a new string value (an
// allocation, a copy and a call across the ABI per element). The kinds whose JSON has one
// spelling that needs no escaping (ints, bools, null, strings of printable ASCII without '"'
// or '\') are written here directly; everything else still goes through json_dump, so the
// text is the same as before (tests/unit/sinks/line_text_test.cc checks it against
// json_dump on edge values).
#pragma once

#include <sluice/sluice.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::sinks {

/// True when `s` is written in JSON as itself between quotes: printable ASCII only (0x20 to
/// 0x7e), without '"' and '\'. Checks 8 bytes at a time.
inline bool json_plain(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0, n = s.size(); i < n; ++i) {
    const unsigned char c = p[i];
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

/// Appends the compact JSON text of `v` (the host's json_dump spelling).
inline void append_json(std::string& out, sdk::ValueRef v) {
  const sl_value raw = v.raw();
  switch (raw.kind) {
    case SL_KIND_INT: {
      char digits[24];
      const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, raw.as.i);
      out.append(digits, end);
      return;
    }
    case SL_KIND_BOOL: out.append(raw.as.i != 0 ? "true" : "false"); return;
    case SL_KIND_NULL: out.append("null"); return;
    case SL_KIND_STRING: {
      const std::string_view s = v.as_str();
      if (json_plain(s)) {
        out.push_back('"');
        out.append(s);
        out.push_back('"');
        return;
      }
      break;
    }
    default: break;
  }
  const sdk::Value text = v.json_dump();
  out.append(text.as_str());
}

/// Appends what print shows: a string raw, anything else as compact JSON.
inline void append_display(std::string& out, sdk::ValueRef v) {
  if (v.is_string()) {
    out.append(v.as_str());
  } else {
    append_json(out, v);
  }
}

}  // namespace sluice::sinks
