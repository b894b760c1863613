// The On-Demand fast path of json_parse (value/json_ondemand.cc) against the general path,
// the DOM decoder (json_parse_dom): the same value or the same error on every edge the
// number, string and structure rules have, and the fast path really deciding the common
// documents (else it would be tested but never used). The fuzz target json_decode checks
// the same agreement on its corpus (ctest fuzz_replay_json_decode).
#include "value/json_ondemand.hpp"
#include "value/json.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace sluice::host {
namespace {

// json_parse's answer as text: the compact JSON of the value, or "error: message".
std::string answer(const Result<Value>& r) {
  return r.is_ok() ? json_dump(r->raw()) : "error: " + std::string(r.status().message());
}

void expect_same(std::string_view text) {
  EXPECT_EQ(answer(json_parse(text)), answer(json_parse_dom(text))) << text;
}

TEST(JsonOnDemand, DecidesTheCommonDocumentsItself) {
  for (std::string_view text : {
           R"({"id":7,"user":"zoë","amount":51,"tags":["web","api"],"ok":true,"x":null})",
           R"([1,-2,3.5,-0.25,1e300,"a",[],{},[[{}]]])",
           R"({"max":9223372036854775807,"min":-9223372036854775808})",
           R"(  {"a" : { "b" : [ true , false , null ] } }  )",
           R"({"esc":"a\"b\\c\n\u00e9\ud83d\ude00"})",
           "{\"crlf\":1}\r\n",
       }) {
    std::optional<Value> fast = json_parse_ondemand(text);
    ASSERT_TRUE(fast.has_value()) << text;
    auto general = json_parse_dom(text);
    ASSERT_TRUE(general.is_ok()) << text;
    EXPECT_EQ(json_dump(fast->raw()), json_dump(general->raw())) << text;
  }
}

TEST(JsonOnDemand, LeavesTheRareCasesToTheDomDecoder) {
  for (std::string_view text : {
           "-0",
           "42",
           "\"scalar\"",
           "null",  // scalar documents
           "[-0]",
           "{\"a\":-0}",             // "-0" is the float -0.0
           "[9223372036854775808]",  // past int64: an error
           "[-9223372036854775809]",
           "[18446744073709551616]",
           "[123456789012345678901234567890]",
           R"(["\ud800"])",  // a lone surrogate: U+FFFD
           "{} {}",
           "[1] x",  // text after the document
           "[1,]",
           "{\"a\":1,}",
           "[1 2]",
           "{\"a\" 1}",
           "{1:2}",
           "[tru]",
           "[nulls]",
           "[01]",
           "[1.]",
           "[.5]",
           "[1e]",
           "[+1]",
           "{\"a\":[}",
           "[",
           "",
           "   ",
           "[\"\xff\"]",
           "[\"a\x01\"]",  // invalid UTF-8, a raw control char
       }) {
    EXPECT_FALSE(json_parse_ondemand(text).has_value()) << text;
    expect_same(text);
  }
}

TEST(JsonOnDemand, AgreesWithTheDomDecoderOnEdgeValues) {
  for (std::string_view text : {
           "[0,-1,1,9223372036854775807,-9223372036854775808,9007199254740993]",
           "[1.0,-0.0,0.0,1e-320,2.2250738585072014e-308,1.7976931348623157e308]",
           "[9223372036854775808.0,9.3e18,-9.3e18]",
           R"({"a":1,"a":2,"b":3})",  // a repeated key: first position, last value
           R"({"":"","\u0000":"\u0000"})",
           R"(["\u00e9","é","北京","\ud83d\ude00","😀","\/","\b\f\n\r\t"])",
           R"({"nested":{"deeper":{"list":[{"k":[1,{"z":null}]}]}}})",
       }) {
    expect_same(text);
    EXPECT_TRUE(json_parse(text).is_ok()) << text;
  }
  // Deeper than the fast path goes (64) and than simdjson allows (1024).
  for (int depth : {63, 64, 65, 1000, 1100}) {
    const std::string text = std::string(depth, '[') + std::string(depth, ']');
    expect_same(text);
  }
}

}  // namespace
}  // namespace sluice::host
