// The native fast path (docs/LUA.md, "The fast path"), against real Lua: every
// eligible expression is evaluated natively and by the Lua function compiled
// without the fast path, over 64-bit edge values, floats (-0.0, inf, NaN),
// null and missing fields, non-ASCII and invalid UTF-8, and mixed types.
// Where the fast path answers, its value must be exactly Lua's (kinds, float
// bits, strings vs bytes) and Lua must not have failed; where it does not,
// the function's result (or error, message included) is Lua's anyway.
#include "lua/lua_function.hpp"
#include "lua/native_expression.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace sluice::host::lua {
namespace {

using testing::json;

constexpr int64_t k_min = std::numeric_limits<int64_t>::min();
constexpr int64_t k_max = std::numeric_limits<int64_t>::max();

// The value exactly: kinds, float bits (-0.0, NaN's sign), bytes vs string.
std::string exact(sl_value v) {
  switch (v.kind) {
    case SL_KIND_NULL: return "null";
    case SL_KIND_BOOL: return v.as.i != 0 ? "true" : "false";
    case SL_KIND_INT: return "int:" + std::to_string(v.as.i);
    case SL_KIND_FLOAT: {
      uint64_t bits = 0;
      std::memcpy(&bits, &v.as.f, sizeof bits);
      return "float:" + std::to_string(bits);
    }
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      const sl_str s = value_str(v);
      return (v.kind == SL_KIND_STRING ? "string:" : "bytes:") + std::string(s.data, s.size);
    }
    case SL_KIND_ARRAY: {
      std::string out = "[";
      for (size_t i = 0; i < value_size(v); ++i) out += exact(value_at(v, i)) + ",";
      return out + "]";
    }
    default: {
      std::string out = "{";
      for (size_t i = 0; i < value_size(v); ++i) {
        const sl_str k = object_key_at(v, i);
        out += std::string(k.data, k.size) + "=" + exact(value_at(v, i)) + ",";
      }
      return out + "}";
    }
  }
}

std::string exact(const Result<Value>& r) {
  return r.is_ok() ? exact(r->raw()) : "error: " + r.status().to_string();
}

std::vector<Value> scalars() {
  std::vector<Value> out;
  for (int64_t i :
       {k_min, k_min + 1, -(int64_t{1} << 53) - 1, -(int64_t{1} << 53), int64_t{-3}, int64_t{-2},
        int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{7}, int64_t{50},
        int64_t{51}, int64_t{1} << 53, (int64_t{1} << 53) + 1, k_max - 1, k_max}) {
    out.push_back(Value::integer(i));
  }
  for (double f : {-0.0,
                   0.0,
                   0.5,
                   -0.5,
                   1.0,
                   -1.0,
                   2.0,
                   3.5,
                   -7.25,
                   50.0,
                   50.5,
                   1e308,
                   -1e308,
                   9223372036854775808.0,
                   -9223372036854775808.0,
                   9007199254740992.0,
                   9007199254740994.0,
                   5e-324,
                   HUGE_VAL,
                   -HUGE_VAL,
                   std::numeric_limits<double>::quiet_NaN(),
                   -std::numeric_limits<double>::quiet_NaN()}) {
    out.push_back(Value::floating(f));
  }
  for (const char* s :
       {"", "a", "abc", "b", "10", "0x10", " 5 ", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac"}) {
    out.push_back(Value::string(s));
  }
  out.push_back(Value::string(std::string_view("a\0b", 3)));
  out.push_back(Value::bytes("\xff\xfe"));  // not UTF-8
  out.push_back(Value::bytes("ok"));        // bytes that are UTF-8: a string from Lua
  out.push_back(Value::boolean(true));
  out.push_back(Value::boolean(false));
  out.push_back(Value::null());
  return out;
}

std::vector<Value> all_values() {
  std::vector<Value> out = scalars();
  for (const char* text :
       {R"([1, 2, 3])", R"([])", R"({})", R"([null, "x", 2.5])",
        R"({"amount": 60, "user": "ann", "n": null, "f": 1.5, "s": "x", "items": [1, 2],
            "nested": {"k": -1}, "flag": false})",
        R"({"amount": 50.5, "user": "\u00e9l\u00e8ve", "items": [], "f": -0.0})",
        R"({"amount": "60", "user": 7})",
        R"({"amount": 9223372036854775807, "f": 1e308, "items": [null]})"}) {
    out.push_back(json(text));
  }
  // An object holding bytes: returned as it came in, it would differ from Lua's.
  const std::pair<std::string, Value> with_bytes[] = {{"b", Value::bytes("ok")},
                                                      {"amount", Value::integer(3)}};
  out.push_back(Value::object(with_bytes));
  const Value items[] = {Value::object(with_bytes)};
  out.push_back(Value::array(items));
  return out;
}

// One-argument expressions (and function forms) that must take the fast path.
const char* const k_unary[] = {
    "x",
    "-x",
    "#x",
    "not x",
    "x + 1",
    "x - 1",
    "x * 2",
    "x / 2",
    "x // 2",
    "x % 2",
    "x ^ 2",
    "x ^ 0.5",
    "x % 2 == 0",
    "x // 0",
    "x % 0",
    "x // -1",
    "x % -1",
    "x // 0.0",
    "x % 0.0",
    "x % -3",
    "x // -3",
    "x % 2.5",
    "x // -2.5",
    "x % -math.huge",
    "x % math.huge",
    "x == 1",
    "x == 1.0",
    "x ~= 0",
    "x < 9007199254740993",
    "x <= 9007199254740993",
    "x > -1",
    "x >= 0.5",
    "x < 'b'",
    "x >= ''",
    "x ~= nil",
    "x == nil",
    "x == sluice.null",
    "x and 1 or 2",
    "x or 'default'",
    "not not x",
    "x .. '!'",
    "'<' .. x .. '>'",
    "x .. 1.5",
    "x .. 1e100",
    "x .. -0.0",
    "x .. 2^63",
    "x .. 12",
    "x .. math.huge",
    "x .. -(0/0)",
    "x.amount",
    "x.amount > 50",
    "x.amount * 2",
    "x['user']",
    "x.n == sluice.null",
    "x.n == nil",
    "x.n",
    "x.missing == nil",
    "x.missing",
    "x.items[2]",
    "x.items[1]",
    "x[1]",
    "x[2] + x[3]",
    "#x.items",
    "x.items",
    "x.nested",
    "x.nested.k",
    "x.user == 'ann' and x.amount or -1",
    "x.flag or x.amount",
    "-x ^ 2",
    "2 ^ -x",
    "x - -x",
    "math.maxinteger + x",
    "math.mininteger - x",
    "x * math.huge",
    "x < math.pi",
    "(x + 1) * (x - 1)",
    "x.f // 1",
    "x.f % 1",
    "x.s .. x.amount",
    "x == x",
    "x ~= x",
    "x.items == x.items",
    "x == 'abc'",
    "9223372036854775807 + 1",
    "9223372036854775808",
    "-9223372036854775808",
    "1e309 - x",
    ".5 + x",
    "3 // x",
    "3 % x",
    "-7 // x",
    "-7 % x",
    "7.5 % x",
    "x < x",
    "x <= 0",
    "0 < x and x < 100",
    "x.user .. ' paid ' .. x.amount",
    "'\\65\\t\\xff' .. x",
    "x == '\\195\\169'",
    "x > 'a' or x",
    "function(v) return v * 3 end",
    "function(a, b) return b end",
    "function(a, a) return a end",
    "function(v) return v.amount and v.amount >= 50.5 end",
    "function() return 42 end",
    "-- leading comment\nx + 1 -- trailing comment",
    "x\n+\n1",
};

// Two-argument expressions (reducers: acc, x).
const char* const k_binary[] = {
    "acc + x",
    "acc - x",
    "acc * x",
    "acc / x",
    "acc // x",
    "acc % x",
    "acc ^ x",
    "acc .. x",
    "acc == x",
    "acc ~= x",
    "acc < x",
    "acc <= x",
    "acc > x",
    "acc >= x",
    "acc and x",
    "acc or x",
    "function(a, b) return a - b end",
};

class LuaNative : public testing::LuaTest {
 protected:
  // Native and Lua agree on `code` for every argument list; returns how many
  // the fast path answered.
  size_t check(const std::string& code, const std::vector<std::vector<Value>>& calls) {
    const Classified kind = classify(code);
    auto compiled = NativeExpression::compile(code, kind.form == LuaForm::function);
    EXPECT_TRUE(std::holds_alternative<NativeExpression>(compiled))
        << code << ": " << std::get<std::string>(compiled);
    if (!std::holds_alternative<NativeExpression>(compiled)) return 0;
    NativeExpression native = std::get<NativeExpression>(std::move(compiled));
    auto lua_only = LuaFunction::compile(runtime_, LuaSource{code, "test.toml", 1, 1}, false);
    auto with_fast_path = LuaFunction::compile(runtime_, LuaSource{code, "test.toml", 1, 1});
    EXPECT_TRUE(lua_only.is_ok() && with_fast_path.is_ok()) << code;
    if (!lua_only.is_ok() || !with_fast_path.is_ok()) return 0;
    EXPECT_FALSE((*lua_only)->native());
    EXPECT_TRUE((*with_fast_path)->native()) << code;
    size_t answered = 0;
    for (const auto& args : calls) {
      std::vector<sl_value> argv;
      std::string shown;
      for (const Value& a : args) {
        argv.push_back(a.raw());
        shown += exact(a.raw()) + " ";
      }
      const auto argc = static_cast<uint32_t>(argv.size());
      const Result<Value> expected = (*lua_only)->call(argv.data(), argc);
      if (auto fast = native.evaluate(argv.data(), argc)) {
        ++answered;
        EXPECT_TRUE(expected.is_ok())
            << code << " on " << shown << ": native answered " << exact(fast->raw())
            << " where Lua fails: " << expected.status().to_string();
        EXPECT_EQ(exact(fast->raw()), exact(expected)) << code << " on " << shown;
      }
      // Through the function: native or not, the result (or error) is Lua's.
      EXPECT_EQ(exact((*with_fast_path)->call(argv.data(), argc)), exact(expected))
          << code << " on " << shown;
    }
    return answered;
  }
};

TEST_F(LuaNative, UnaryExpressionsMatchLua) {
  std::vector<std::vector<Value>> calls;
  for (const Value& v : all_values()) calls.push_back({v});
  size_t answered = 0, total = 0;
  for (const char* code : k_unary) {
    answered += check(code, calls);
    total += calls.size();
  }
  // Most calls take the fast path: the comparison above is not vacuous.
  EXPECT_GT(answered, total / 3) << answered << " of " << total;
}

TEST_F(LuaNative, BinaryExpressionsMatchLua) {
  std::vector<std::vector<Value>> calls;
  const std::vector<Value> values = scalars();
  for (const Value& a : values) {
    for (const Value& b : values) calls.push_back({a, b});
  }
  size_t answered = 0, total = 0;
  for (const char* code : k_binary) {
    answered += check(code, calls);
    total += calls.size();
  }
  EXPECT_GT(answered, total / 3) << answered << " of " << total;
}

TEST_F(LuaNative, ArgumentCountsBindAsInLua) {
  // Expression form: x is the first argument unless there are exactly two
  // (acc, x); none leaves x nil.
  const std::vector<std::vector<Value>> calls = {
      {},
      {Value::integer(5)},
      {Value::integer(5), Value::integer(7)},
      {Value::integer(5), Value::integer(7), Value::integer(9)},
  };
  for (const char* code : {"x == nil", "acc == nil", "x", "acc", "function(a, b, c) return c end",
                           "function(a) return a end"}) {
    check(code, calls);
  }
}

TEST_F(LuaNative, TheCommonCasesAreAnsweredNatively) {
  auto answered = [&](const std::string& code, const Value& arg) {
    auto fn = compile(code);
    EXPECT_TRUE(fn && fn->native()) << code;
    if (!fn) return false;
    const sl_value argv[] = {arg.raw()};
    const uint64_t before = fn->native_calls();
    EXPECT_TRUE(fn->call(argv, 1).is_ok());
    return fn->native_calls() == before + 1;
  };
  EXPECT_TRUE(answered("x % 2 == 0", Value::integer(k_min)));
  EXPECT_TRUE(answered("x * 3 + 1", Value::integer(k_max)));  // wraps, as Lua
  EXPECT_TRUE(answered("x.amount > 50", json(R"({"amount": 50.5})")));
  EXPECT_TRUE(answered("x.user", json(R"({"user": "\u00e9"})")));
  EXPECT_TRUE(answered("x.missing == nil", json(R"({})")));
}

TEST_F(LuaNative, ErrorsAreLuasThroughTheFastPath) {
  auto fn = compile("x // 0");
  ASSERT_TRUE(fn && fn->native());
  const sl_value argv[] = {sl_int(4)};
  auto out = fn->call(argv, 1);
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().message(), "Lua: test.toml:1: attempt to divide by zero");
  EXPECT_EQ(fn->native_fallbacks(), 1U);

  auto field = compile("x.amount > 50");
  auto field_in_lua =
      LuaFunction::compile(runtime_, LuaSource{"x.amount > 50", "test.toml", 1, 1}, false);
  ASSERT_TRUE(field && field_in_lua.is_ok());
  const Value missing = json(R"({"user": "ann"})");
  const sl_value args[] = {missing.raw()};
  const Status error = field->call(args, 1).status();
  EXPECT_EQ(error.code(), SL_INVALID_ARGUMENT);
  EXPECT_NE(error.message().find("attempt to compare"), std::string::npos) << error.message();
  EXPECT_EQ(error.message(), (*field_in_lua)->call(args, 1).status().message());
}

TEST_F(LuaNative, IneligibleCodeRunsInLua) {
  for (const char* code : {"select('#', ...)",
                           "x:upper()",
                           "tostring(x)",
                           "x & 1",
                           "x | 1",
                           "~x",
                           "x << 1",
                           "{x}",
                           "x, x",
                           "0x10 + x",
                           "[[long]] .. x",
                           "'\\z' .. x",
                           "string.upper(x)",
                           "math.floor(x)",
                           "y + 1",
                           "function(x) local y = x return y end",
                           "function(...) return ... end",
                           "local k = 2\nreturn function(x) return k * x end",
                           "x[x]",
                           "x[-1]",
                           "x.a.b(1)",
                           "(function() return 1 end)()"}) {
    auto fn = compile(code);
    ASSERT_TRUE(fn) << code;
    EXPECT_FALSE(fn->native()) << code;
    EXPECT_FALSE(fn->native_reason().empty()) << code;
  }
}

TEST_F(LuaNative, TheEnvironmentVariableForcesLua) {
  ASSERT_EQ(::setenv(k_fast_path_env, "0", 1), 0);
  auto off = compile("x + 1");
  ::unsetenv(k_fast_path_env);
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->native());
  EXPECT_EQ(off->native_reason(), "SLUICE_LUA_FAST_PATH=0");
  auto on = compile("x + 1");
  EXPECT_TRUE(on && on->native());
}

TEST_F(LuaNative, BatchesMatchOneCallPerElement) {
  std::vector<Value> values = all_values();
  std::vector<sl_value> in;
  for (const Value& v : values) in.push_back(v.raw());
  for (const char* code : {"x", "x.amount", "x .. ''", "#x", "function(w) return w end",
                           "function(w) local t = 0 for i = 1, #w do t = t + 1 end return t end",
                           "x == nil and 1 or x"}) {
    auto fn = compile(code);
    ASSERT_TRUE(fn);
    // All values (the batch fails as the first failing element does), then
    // only those that succeed one by one (every result as one call's).
    std::vector<sl_value> good;
    std::vector<std::string> one, good_one;
    size_t first_error = in.size();
    for (size_t i = 0; i < in.size(); ++i) {
      auto r = fn->call(&in[i], 1);
      if (!r.is_ok() && first_error == in.size()) first_error = i;
      if (r.is_ok()) {
        good.push_back(in[i]);
        good_one.push_back(exact(r));
      }
      one.push_back(exact(r));
    }
    std::vector<sl_value> out(in.size());
    Status batch = fn->call_batch(in.data(), in.size(), out.data());
    if (first_error < in.size()) {
      EXPECT_EQ("error: " + batch.to_string(), one[first_error]) << code;
      for (const sl_value& v : out) EXPECT_EQ(v.kind, SL_KIND_NULL);  // nothing owned
    } else {
      ASSERT_TRUE(batch.is_ok()) << code << ": " << batch.to_string();
      for (const sl_value& v : out) value_release(v);
    }
    ASSERT_GT(good.size(), 3U) << code;
    std::vector<sl_value> good_out(good.size());
    batch = fn->call_batch(good.data(), good.size(), good_out.data());
    ASSERT_TRUE(batch.is_ok()) << code << ": " << batch.to_string();
    for (size_t i = 0; i < good.size(); ++i) {
      EXPECT_EQ(exact(good_out[i]), good_one[i]) << code << " element " << i;
      value_release(good_out[i]);
    }
  }
}

// Each element of a batch has its own instruction budget, as a call of its own.
class LuaBatchLimits : public testing::LuaTest {
 protected:
  LuaBatchLimits() : LuaTest(Limits{k_default_memory_bytes, 200'000, k_default_time_ms}) {}
};

TEST_F(LuaBatchLimits, EachElementHasItsOwnBudget) {
  auto fn = compile("function(n) local t = 0 for i = 1, n do t = t + i end return t end");
  ASSERT_TRUE(fn);
  // About 4 instructions per iteration: 30,000 iterations fit one budget, ten
  // of them would not.
  std::vector<sl_value> in(10, sl_int(30'000));
  std::vector<sl_value> out(in.size());
  ASSERT_TRUE(fn->call_batch(in.data(), in.size(), out.data()).is_ok());
  EXPECT_EQ(out[9].as.i, int64_t{30'000} * 30'001 / 2);
  in[5] = sl_int(1'000'000);
  Status st = fn->call_batch(in.data(), in.size(), out.data());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("instruction limit exceeded"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::host::lua
