// JSON text <-> values. Parsing uses simdjson; writing is a small compact
// writer (simdjson does not serialise our values).
#pragma once

#include "common/result.hpp"
#include "value/value.hpp"

#include <string>
#include <string_view>

namespace sluice::host {

// Parse one JSON document (the number rules are docs/ARCHITECTURE.md's "Numbers"): an
// integer literal is an int, one outside int64 is an error (never a float that silently
// lost digits); "-0" is the float -0.0; a number with a fraction or exponent is a float.
// Nesting deeper than 1024 arrays/objects is an error (simdjson's limit), not a stack
// overflow. Strings come out valid UTF-8 (simdjson checks).
// Objects and arrays take the On-Demand fast path (json_ondemand.hpp); what it leaves
// undecided (errors, scalars, the rare number and string cases) goes to json_parse_dom.
[[nodiscard]] Result<Value> json_parse(std::string_view text);
// The general path: simdjson's DOM, then a walk of its tape. The reference the fast path is
// tested against; json_parse calls it for what the fast path leaves.
[[nodiscard]] Result<Value> json_parse_dom(std::string_view text);

// Append the compact JSON form of `v` to `out`, always valid UTF-8. Bytes become base64
// strings; NaN and infinities the strings "NaN", "Infinity" and "-Infinity" (JSON has
// no such numbers; Protocol Buffers' JSON mapping writes them so); an ill-formed part of
// a string (which should not exist) becomes U+FFFD.
void json_append(std::string& out, sl_value v);
[[nodiscard]] std::string json_dump(sl_value v);

// Append `s` as a quoted JSON string: quotes, backslashes and control characters
// escaped, each ill-formed UTF-8 part written as U+FFFD, so any bytes give valid JSON.
void json_append_string(std::string& out, std::string_view s);

// Strings as their raw text, everything else as JSON: what `print` shows.
[[nodiscard]] std::string display_string(sl_value v);

}  // namespace sluice::host
