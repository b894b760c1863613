// JSON text <-> values. Parsing uses simdjson; writing is a small compact
// writer (simdjson does not serialise our values).
#pragma once

#include "common/result.hpp"
#include "value/value.hpp"

#include <string>
#include <string_view>

namespace sluice::host {

// Parse one JSON document. Integers that fit int64 stay ints; larger ones become floats.
[[nodiscard]] Result<Value> json_parse(std::string_view text);

// Append the compact JSON form of `v` to `out`. Bytes become base64 strings;
// non-finite floats become null (JSON has no NaN/Infinity).
void json_append(std::string& out, sl_value v);
[[nodiscard]] std::string json_dump(sl_value v);

// Strings as their raw text, everything else as JSON: what `print` shows.
[[nodiscard]] std::string display_string(sl_value v);

}  // namespace sluice::host
