// The fast path of json_parse: simdjson's On-Demand API read straight into values.
//
// Why a second decoder: the DOM decoder (json.cc) builds simdjson's tape, then walks it into
// vectors of std::string keys and Values, then copies those into the value blocks: three
// passes and an allocation per container and per long key. This one walks the document once,
// each container's keys and values gathered on the stack and handed to object_create /
// array_create (keys borrowed from simdjson's string buffer), with one padded input buffer
// per thread reused for every document.
//
// It decides only the common case. Whatever it does not handle exactly as the DOM decoder
// does (an error of any kind, "-0", an integer past int64, a scalar document, a string whose
// escapes may hide a lone surrogate) makes it answer "not mine" (nullopt), and json_parse
// then runs the DOM decoder, whose value or error is the answer: the two agree by
// construction, and tests/unit/host/json_ondemand_test.cc checks it on edge cases and on the
// fuzz corpus.
#pragma once

#include "value/value.hpp"

#include <optional>
#include <string_view>

namespace sluice::host {

/// The value of `text` when it is an object or array document the fast path decides;
/// nullopt otherwise (then the DOM decoder must decide, error included). Thread-safe (one
/// parser per thread).
[[nodiscard]] std::optional<Value> json_parse_ondemand(std::string_view text);

}  // namespace sluice::host
