// The sinks' line text (plugins/sinks/line_text.hpp): the kinds it writes itself must be
// spelled exactly as the host's json_dump spells them (the general path it falls back to),
// and print's display form must be the raw string or that JSON.
#include "line_text.hpp"  // plugins/sinks

#include "executor/host_api.hpp"
#include "value/json.hpp"
#include "value/value.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

class LineText : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sdk::set_host(host_api_table()); }
};

std::vector<Value> edge_values() {
  std::vector<Value> v = {
      Value::integer(0),
      Value::integer(-1),
      Value::integer(1),
      Value::integer(std::numeric_limits<int64_t>::max()),
      Value::integer(std::numeric_limits<int64_t>::min()),
      Value::integer(9007199254740993),
      Value::boolean(true),
      Value::boolean(false),
      Value::null(),
      Value::floating(1.0),
      Value::floating(-0.0),
      Value::floating(1e300),
      Value::floating(std::numeric_limits<double>::quiet_NaN()),
      Value::floating(std::numeric_limits<double>::infinity()),
      Value::string(""),
      Value::string("plain ascii ~!@#$%^&*()"),
      Value::string("a\"b"),
      Value::string("back\\slash"),
      Value::string("tab\there"),
      Value::string("crlf\r\n"),
      Value::string(std::string("nul\0byte", 8)),
      Value::string("\x7f"
                    " del"),
      Value::string("zoë"),
      Value::string("北京"),
      Value::string("😀"),
      Value::string("\xff\xfe not utf-8"),
      Value::bytes("bytes\x01"),
  };
  auto parsed = json_parse(R"({"a":[1,"x",null],"b":{"c":true}})");
  EXPECT_TRUE(parsed.is_ok());
  v.push_back(*parsed);
  v.push_back(Value::array(std::vector<Value>{Value::integer(1), Value::string("é")}));
  return v;
}

TEST_F(LineText, JsonIsTheHostsJsonDump) {
  for (const Value& v : edge_values()) {
    std::string out = "prefix:";
    sinks::append_json(out, sdk::ValueRef(v.raw()));
    EXPECT_EQ(out, "prefix:" + json_dump(v.raw())) << json_dump(v.raw());
  }
}

TEST_F(LineText, DisplayIsTheRawStringOrTheJson) {
  for (const Value& v : edge_values()) {
    std::string out;
    sinks::append_display(out, sdk::ValueRef(v.raw()));
    EXPECT_EQ(out, display_string(v.raw())) << json_dump(v.raw());
  }
}

TEST_F(LineText, PlainStringsAreExactlyTheOnesWithoutEscapes) {
  EXPECT_TRUE(sinks::json_plain(""));
  EXPECT_TRUE(sinks::json_plain(" ~azAZ09"));
  for (const char* s : {"\"", "\\", "\x1f", "\x7f", "\n", "é", "\x80"}) {
    EXPECT_FALSE(sinks::json_plain(s)) << s;
  }
}

}  // namespace
}  // namespace sluice::host
