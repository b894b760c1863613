// Values crossing into Lua and back: kinds and exact values survive, arrays and
// objects stay what they were (even when empty), null has a sentinel, and what
// Lua code builds converts by clear rules or fails with a path to the culprit.
#include "lua/lua_values.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace sluice::host::lua {
namespace {

using testing::json;

class LuaValues : public testing::LuaTest {};

TEST_F(LuaValues, ScalarsRoundTripWithTheirKinds) {
  auto fn = compile("x");
  ASSERT_TRUE(fn);
  const Value cases[] = {
      Value::null(),
      Value::boolean(true),
      Value::boolean(false),
      Value::integer(9007199254740993),  // 2^53 + 1: not representable as a double
      Value::integer(std::numeric_limits<int64_t>::min()),
      Value::integer(std::numeric_limits<int64_t>::max()),
      Value::floating(3.0),
      Value::floating(0.1),
      Value::string("h\xc3\xa9llo"),
      Value::string(""),
  };
  for (const Value& v : cases) {
    auto out = call(*fn, {v});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(out->kind(), v.kind()) << json_dump(v.raw());
    EXPECT_EQ(json_dump(out->raw()), json_dump(v.raw()));
  }
  EXPECT_EQ(call(*fn, {Value::integer(9007199254740993)})->as_int(), 9007199254740993);
}

TEST_F(LuaValues, IntegersStayIntegersInLuaArithmetic) {
  EXPECT_EQ(call_json("x + 1", {Value::integer(9007199254740993)}), "9007199254740994");
  EXPECT_EQ(call_json("math.type(x)", {Value::integer(2)}), "\"integer\"");
  EXPECT_EQ(call_json("math.type(x)", {Value::floating(2.0)}), "\"float\"");
  EXPECT_EQ(call_json("x * 2", {Value::floating(1.5)}), "3.0");
  EXPECT_EQ(call_json("x // 2", {Value::integer(7)}), "3");
  EXPECT_EQ(call_json("x / 2", {Value::integer(8)}), "4.0");  // Lua's / always gives a float
}

TEST_F(LuaValues, NestedArraysAndObjectsRoundTripInOrder) {
  const char* text = R"({"z":[1,[2.5,{"c":null,"a":"s"}],[]],"a":{},"m":[[],{}]})";
  EXPECT_EQ(call_json("x", {json(text)}), text);
}

TEST_F(LuaValues, EmptyArrayAndEmptyObjectStayDistinct) {
  auto fn = compile("x");
  ASSERT_TRUE(fn);
  EXPECT_TRUE(call(*fn, {json("[]")})->is_array());
  EXPECT_TRUE(call(*fn, {json("{}")})->is_object());
  EXPECT_EQ(call_json("getmetatable(x)", {json("[]")}), "\"sluice.array\"");
  EXPECT_EQ(call_json("getmetatable(x)", {json("{}")}), "\"sluice.object\"");
}

TEST_F(LuaValues, NullIsTheSentinelInsideContainers) {
  EXPECT_EQ(call_json("x", {json("[1,null,3]")}), "[1,null,3]");
  EXPECT_EQ(call_json("#x", {json("[1,null,3]")}), "3");
  EXPECT_EQ(call_json("x[2] == sluice.null", {json("[1,null,3]")}), "true");
  EXPECT_EQ(call_json("x.a == sluice.null and x.b == nil", {json(R"({"a":null})")}), "true");
  EXPECT_EQ(call_json("x == sluice.null", {Value::null()}), "true");
  EXPECT_EQ(call_json("tostring(sluice.null)", {Value::null()}), "\"null\"");
  EXPECT_EQ(call_json("{sluice.null, 2}", {Value::null()}), "[null,2]");
}

TEST_F(LuaValues, TablesBuiltInLuaFollowTheirKeys) {
  EXPECT_EQ(call_json("{1, 'two', {3}}", {Value::null()}), R"([1,"two",[3]])");
  EXPECT_EQ(call_json("{b = 1, a = {c = true}}", {Value::null()}), R"({"a":{"c":true},"b":1})");
  EXPECT_EQ(call_json("{}", {Value::null()}), "[]");  // unmarked and empty: an array
  EXPECT_EQ(call_json("sluice.object()", {Value::null()}), "{}");
  EXPECT_EQ(call_json("sluice.array({})", {Value::null()}), "[]");
  EXPECT_EQ(call_json("sluice.object({k = 1})", {Value::null()}), R"({"k":1})");
}

TEST_F(LuaValues, ObjectsKeepTheirKeyOrderAndAddedKeysComeSorted) {
  const char* code = "function(x) x.m = 3; x.b = 4; x.a = nil; return x end";
  EXPECT_EQ(call_json(code, {json(R"({"z":1,"a":2,"y":0})")}), R"({"z":1,"y":0,"b":4,"m":3})");
}

TEST_F(LuaValues, ArraysEditedInLuaStayArrays) {
  EXPECT_EQ(call_json("function(x) x[#x + 1] = 'new'; return x end", {json("[]")}), R"(["new"])");
  EXPECT_EQ(call_json("function(x) table.remove(x, 1); return x end", {json("[1]")}), "[]");
}

TEST_F(LuaValues, TablesThatAreNeitherArrayNorObjectAreErrors) {
  EXPECT_EQ(call_json("{1, a = 2}", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: the function's result is not a value: a "
            "table mixes integer keys (an array) and string keys (an object), e.g. [1] and 'a'; "
            "use one kind");
  EXPECT_EQ(call_json("{1, nil, 3}", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: the function's result is not a value: an "
            "array's keys must be 1..n without holes; found key 3 where 2 was expected (use "
            "sluice.null, not nil, for a missing item)");
  EXPECT_NE(call_json("{[1.5] = 1}", {Value::null()}).find("a table has a non-integer number key"),
            std::string::npos);
  EXPECT_NE(call_json("function(x) x.k = 1; return x end", {json("[]")})
                .find("an array (sluice.array) has a string key 'k'"),
            std::string::npos);
  EXPECT_NE(call_json("function(x) x[1] = 1; return x end", {json("{}")})
                .find("an object (sluice.object) has a number key"),
            std::string::npos);
}

TEST_F(LuaValues, ConversionErrorsNameThePathAndTheKind) {
  EXPECT_EQ(call_json("{a = {1, {b = print}}}", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: the function's result is not a value: at "
            ".a[2].b: a Lua function is not a value (return null, a boolean, a number, a string "
            "or a table)");
  EXPECT_NE(call_json("function(x) local t = {} t[1] = t return t end", {Value::null()})
                .find("nested deeper than 200 levels (does a table contain itself?)"),
            std::string::npos);
}

TEST_F(LuaValues, BytesArriveAsStringsAndLeaveByContent) {
  auto fn = compile("x");
  ASSERT_TRUE(fn);
  // Not UTF-8: comes back as bytes, unchanged.
  const std::string binary("\xff\x00\x01", 3);
  auto out = call(*fn, {Value::bytes(binary)});
  ASSERT_TRUE(out.is_ok());
  EXPECT_EQ(out->kind(), SL_KIND_BYTES);
  EXPECT_EQ(out->as_str(), binary);
  // Valid UTF-8 bytes come back as a string (documented).
  EXPECT_EQ(call(*fn, {Value::bytes("text")})->kind(), SL_KIND_STRING);
  EXPECT_EQ(call_json("type(x) .. #x", {Value::bytes(binary)}), "\"string3\"");
  // sluice.bytes forces bytes.
  auto forced = call("sluice.bytes(x)", {Value::string("text")});
  ASSERT_TRUE(forced.is_ok());
  EXPECT_EQ(forced->kind(), SL_KIND_BYTES);
  EXPECT_EQ(forced->as_str(), "text");
  EXPECT_EQ(call_json("#sluice.bytes('abc') .. tostring(sluice.bytes('abc'))", {Value::null()}),
            "\"3abc\"");
  // A Lua string that is not UTF-8 is bytes.
  EXPECT_EQ(call("'\\xff'", {Value::null()})->kind(), SL_KIND_BYTES);
}

TEST_F(LuaValues, ResultCountRules) {
  EXPECT_EQ(call_json("function(x) end", {Value::integer(1)}), "null");
  EXPECT_EQ(call_json("nil", {Value::integer(1)}), "null");
  // One argument: extra results are dropped, as Lua does (gsub returns a count too).
  EXPECT_EQ(call_json("x:gsub('a', 'o')", {Value::string("banana")}), "\"bonono\"");
  // Two arguments (a reducer): two results are [state, emitted].
  EXPECT_EQ(call_json("acc + x, acc * x", {Value::integer(3), Value::integer(4)}), "[7,12]");
  EXPECT_EQ(call_json("acc + x", {Value::integer(3), Value::integer(4)}), "7");
  EXPECT_EQ(call_json("acc, x, 0", {Value::integer(3), Value::integer(4)}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: the function's result is not a value: "
            "returned 3 values; a function of (acc, x) returns one value (the new state) or two "
            "(state, emitted)");
}

}  // namespace
}  // namespace sluice::host::lua
