// Fuzz target: the JSON decoder and encoder (host/src/value/json.cc), which read what
// Kafka, HTTP clients, files and json_parse hand to sluice.
//
// Whatever decodes must encode to valid UTF-8 JSON that decodes again, and that second
// encoding must be the same text: the writer has one spelling per value and the number
// rules (docs/ARCHITECTURE.md, "Numbers") keep every decoded number as it was. A failure
// to decode must be a clean error, never a crash, a hang or a stack overflow. The fast path
// (On-Demand, json_ondemand.cc) must agree with the general one (the DOM decoder): the same
// value, or the same error.
#include "value/json.hpp"

#include <sluice/detail/utf8.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "json_decode_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto decoded = sluice::host::json_parse(text);
  auto general = sluice::host::json_parse_dom(text);
  check(decoded.is_ok() == general.is_ok(),
        "the fast path and the DOM decoder disagree on "
        "whether the text is valid");
  if (decoded.is_ok()) {
    check(sluice::host::json_dump(decoded->raw()) == sluice::host::json_dump(general->raw()),
          "the fast path and the DOM decoder decode different values");
  } else {
    check(decoded.status().message() == general.status().message(),
          "the fast path and the DOM decoder give different errors");
  }
  if (!decoded.is_ok()) {
    check(!decoded.status().message().empty(), "a decode error without a message");
    return 0;
  }
  const std::string once = sluice::host::json_dump(decoded->raw());
  check(sluice::sdk::valid_utf8(once), "the encoder wrote invalid UTF-8");
  auto again = sluice::host::json_parse(once);
  check(again.is_ok(), "what the encoder wrote does not decode");
  check(sluice::host::json_dump(again->raw()) == once, "the encoding is not stable");
  return 0;
}
