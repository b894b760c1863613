#include "value/json.hpp"

#include <gtest/gtest.h>

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

TEST(Json, DisplayStringShowsTextRawAndEverythingElseAsJson) {
  EXPECT_EQ(display_string(Value::string("plain").raw()), "plain");
  EXPECT_EQ(display_string(sl_int(3)), "3");
}

}  // namespace
}  // namespace sluice::host
