#include "value/json.hpp"

#include <gtest/gtest.h>
#include <sluice/detail/utf8.hpp>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

std::string roundtrip(std::string_view text) {
  auto v = json_parse(text);
  EXPECT_TRUE(v.is_ok()) << v.status().message();
  return v.is_ok() ? json_dump(v->raw()) : "";
}

TEST(Json, RoundTripsEveryKind) {
  EXPECT_EQ(roundtrip(R"({"a":[1,2.5,"x",null,true,false],"b":{}})"),
            R"({"a":[1,2.5,"x",null,true,false],"b":{}})");
}

TEST(Json, IntegersStayExactAndFloatsStayFloats) {
  EXPECT_EQ(roundtrip("9007199254740993"), "9007199254740993");
  EXPECT_EQ(roundtrip("1.0"), "1.0");
  EXPECT_EQ(roundtrip("-0.25"), "-0.25");
  EXPECT_EQ(roundtrip("1e300"), "1e+300");
}

TEST(Json, EscapesControlCharactersAndQuotes) {
  Value s = Value::string(std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(json_dump(s.raw()), R"("a\"b\\c\n\u0001")");
  EXPECT_EQ(roundtrip(R"("a\"b\\c\n\u0001")"), R"("a\"b\\c\n\u0001")");
}

TEST(Json, BytesBecomeBase64) {
  Value b = Value::bytes("hi!");
  EXPECT_EQ(json_dump(b.raw()), R"("aGkh")");
  EXPECT_EQ(json_dump(Value::bytes("h").raw()), R"("aA==")");
}

TEST(Json, ReportsInvalidDocuments) {
  auto v = json_parse("{\"a\": ");
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), SL_INVALID_ARGUMENT);
  EXPECT_NE(v.status().message().find("invalid JSON"), std::string::npos);
}

// The rules of docs/ARCHITECTURE.md, "Numbers".
TEST(JsonNumbers, IntegersPastInt64AreAnErrorNotAFloat) {
  EXPECT_EQ(roundtrip("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(roundtrip("-9223372036854775808"), "-9223372036854775808");
  for (std::string_view text :
       {"9223372036854775808", "18446744073709551615", "18446744073709551616",
        "-9223372036854775809", "[1,{\"id\":100000000000000000000000}]",
        "123456789012345678901234567890123456789012345678901234567890"}) {
    auto v = json_parse(text);
    ASSERT_FALSE(v.is_ok()) << text << " gave " << json_dump(v->raw());
    EXPECT_EQ(v.status().code(), SL_INVALID_ARGUMENT);
    EXPECT_NE(v.status().message().find("out of range"), std::string::npos) << v.status().message();
  }
  // Too long to echo whole.
  auto long_one = json_parse(std::string(5000, '9'));
  ASSERT_FALSE(long_one.is_ok());
  EXPECT_LT(long_one.status().message().size(), 400u);
  // Written as floats, they are floats.
  EXPECT_EQ(roundtrip("9223372036854775808.0"), "9.223372036854776e+18");
  EXPECT_EQ(roundtrip("1e19"), "1e+19");
  // Digits inside strings and keys are not numbers.
  EXPECT_EQ(roundtrip(R"({"-0":"-0","99999999999999999999":[-0.5,0]})"),
            R"({"-0":"-0","99999999999999999999":[-0.5,0]})");
}

TEST(JsonNumbers, MinusZeroKeepsItsSignAsAFloat) {
  auto v = json_parse("-0");
  ASSERT_TRUE(v.is_ok());
  ASSERT_EQ(v->raw().kind, SL_KIND_FLOAT);
  EXPECT_TRUE(std::signbit(v->raw().as.f));
  EXPECT_EQ(roundtrip("-0"), "-0.0");
  EXPECT_EQ(roundtrip("-0.0"), "-0.0");
  EXPECT_EQ(roundtrip("0"), "0");
  EXPECT_EQ(roundtrip(R"(["2024-01-05",0,-0,"a\"-0",-0,10])"),
            R"(["2024-01-05",0,-0.0,"a\"-0",-0.0,10])");
}

TEST(JsonNumbers, NonFiniteFloatsAreWrittenAsStrings) {
  EXPECT_EQ(json_dump(sl_float(std::numeric_limits<double>::quiet_NaN())), R"("NaN")");
  EXPECT_EQ(json_dump(sl_float(std::numeric_limits<double>::infinity())), R"("Infinity")");
  EXPECT_EQ(json_dump(sl_float(-std::numeric_limits<double>::infinity())), R"("-Infinity")");
  EXPECT_EQ(json_dump(sl_float(-0.0)), "-0.0");
}

TEST(JsonUtf8, InvalidUtf8InAStringIsWrittenAsReplacementCharacters) {
  // Lone continuation byte, truncated 3-byte sequence (one U+FFFD for its maximal
  // subpart), overlong "/", a surrogate, and a valid "é" after them.
  Value s =
      Value::string(std::string("a\x80"
                                "b\xE2\x82"
                                "c\xC0\xAF\xED\xA0\x80\xC3\xA9"));
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  EXPECT_EQ(json_dump(s.raw()), "\"a" + r + "b" + r + "c" + r + r + r + r + r + "\xC3\xA9\"");
  // Keys too.
  std::vector<std::pair<std::string, Value>> entries;
  entries.emplace_back(std::string("k\xFF"), Value::integer(1));
  Value o = Value::object(entries);
  EXPECT_EQ(json_dump(o.raw()), "{\"k" + r + "\":1}");
  // What comes out parses again.
  EXPECT_TRUE(json_parse(json_dump(s.raw())).is_ok());
}

TEST(JsonUtf8, EscapedLoneSurrogatesDecodeToReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  // A pair is one character; a lone half is not UTF-8 and becomes U+FFFD (or an error).
  EXPECT_EQ(roundtrip(R"("\ud83d\ude00")"), "\"\xF0\x9F\x98\x80\"");
  for (std::string_view text : {R"("\ud800")", R"("x\udc00")", R"({"\ud800":1})"}) {
    auto v = json_parse(text);
    if (!v.is_ok()) continue;  // refusing it is fine too
    EXPECT_TRUE(sdk::valid_utf8(json_dump(v->raw()))) << text;
  }
}

// The one UTF-8 check of the host (Lua strings, JSON) and the plugins (from_textfile,
// from_tcp, from_http_server, ...): well-formed means no overlong form, no surrogate, nothing
// past U+10FFFF and no truncated sequence.
TEST(Utf8, ValidationRejectsOverlongsSurrogatesAndCodePointsPastTheLast) {
  EXPECT_TRUE(sdk::valid_utf8(""));
  EXPECT_TRUE(sdk::valid_utf8("plain"));
  EXPECT_TRUE(sdk::valid_utf8("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(sdk::valid_utf8("\xc2\x80\xdf\xbf"));                  // U+0080, U+07FF
  EXPECT_TRUE(sdk::valid_utf8("\xe0\xa0\x80\xef\xbf\xbf"));          // U+0800, U+FFFF
  EXPECT_TRUE(sdk::valid_utf8("\xed\x9f\xbf\xee\x80\x80"));          // U+D7FF, U+E000
  EXPECT_TRUE(sdk::valid_utf8("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"));  // U+10000, U+10FFFF
  EXPECT_FALSE(sdk::valid_utf8("\xc3"));                             // truncated
  EXPECT_FALSE(sdk::valid_utf8("\xf0\x9f\x98"));                     // truncated
  EXPECT_FALSE(sdk::valid_utf8("\xc0\xaf"));                         // overlong '/'
  EXPECT_FALSE(sdk::valid_utf8("\xc1\xbf"));                         // overlong
  EXPECT_FALSE(sdk::valid_utf8("\xe0\x9f\xbf"));                     // overlong U+07FF
  EXPECT_FALSE(sdk::valid_utf8("\xf0\x8f\xbf\xbf"));                 // overlong U+FFFF
  EXPECT_FALSE(sdk::valid_utf8("\xed\xa0\x80"));                     // surrogate
  EXPECT_FALSE(sdk::valid_utf8("\xed\xbf\xbf"));                     // surrogate
  EXPECT_FALSE(sdk::valid_utf8("\xf4\x90\x80\x80"));                 // past U+10FFFF
  EXPECT_FALSE(sdk::valid_utf8("\xf5\x80\x80\x80"));                 // past U+10FFFF
  EXPECT_FALSE(sdk::valid_utf8("\xf8\x88\x80\x80\x80"));
  EXPECT_FALSE(sdk::valid_utf8("\x80"));
  EXPECT_FALSE(sdk::valid_utf8("\xff"));
}

// sdk::valid_utf8 checks ASCII 16 and 8 bytes at a time: a non-ASCII byte at every
// position of strings up to 40 bytes must be found as a sequence-by-sequence check does.
TEST(JsonUtf8, FastAsciiPathAgreesWithTheSequenceCheck) {
  const auto reference = [](std::string_view s) {
    size_t bad = 0;
    for (size_t at = 0; at < s.size();) {
      const size_t n = sdk::utf8_sequence_at(s, at, bad);
      if (n == 0) return false;
      at += n;
    }
    return true;
  };
  for (const char* insert : {"\x80", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xFF",
                             "\xE2\x82", "\xED\xA0\x80"}) {
    for (size_t len = 0; len <= 40; ++len) {
      for (size_t pos = 0; pos <= len; ++pos) {
        std::string s(len, 'a');
        s.insert(pos, insert);
        EXPECT_EQ(sdk::valid_utf8(s), reference(s)) << "len " << len << " pos " << pos;
      }
    }
  }
}

TEST(JsonUtf8, ParserRejectsInvalidUtf8) {
  auto v = json_parse("\"a\xFF\"");
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("UTF-8"), std::string::npos) << v.status().message();
}

TEST(Json, DeepNestingIsAnErrorNotAStackOverflow) {
  const size_t depth = 100000;
  auto v = json_parse(std::string(depth, '[') + std::string(depth, ']'));
  ASSERT_FALSE(v.is_ok());
  EXPECT_NE(v.status().message().find("deep"), std::string::npos) << v.status().message();
  EXPECT_TRUE(json_parse(std::string(1000, '[') + std::string(1000, ']')).is_ok());
}

// A plugin can build a value deeper than the parser accepts; json_dump (what sinks write)
// must not recurse once per level: 10,000 levels overflowed the stack under ASan
// (`sluiced plugin-check`'s hostile elements found it).
TEST(Json, DumpsDeeplyNestedValuesWithoutRecursion) {
  const size_t depth = 20000;
  Value arrays = Value::integer(1), objects = Value::integer(1);
  for (size_t i = 0; i < depth; ++i) {
    arrays = Value::array(std::span(&arrays, 1));
    std::pair<std::string, Value> entry{"a", std::move(objects)};
    objects = Value::object(std::span(&entry, 1));
  }
  EXPECT_EQ(json_dump(arrays.raw()), std::string(depth, '[') + "1" + std::string(depth, ']'));
  std::string expected;
  for (size_t i = 0; i < depth; ++i) expected += R"({"a":)";
  expected += "1" + std::string(depth, '}');
  EXPECT_EQ(json_dump(objects.raw()), expected);
  EXPECT_EQ(json_dump(Value::array({}).raw()), "[]");
  EXPECT_EQ(json_dump(Value::object({}).raw()), "{}");
}

TEST(Json, DisplayStringShowsTextRawAndEverythingElseAsJson) {
  EXPECT_EQ(display_string(Value::string("plain").raw()), "plain");
  EXPECT_EQ(display_string(sl_int(3)), "3");
}

}  // namespace
}  // namespace sluice::host
