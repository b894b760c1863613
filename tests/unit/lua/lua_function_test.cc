// Lua functions: the three source forms, argument names, errors that carry the
// config file's line, the sandbox (no way out to the OS), and the memory and
// instruction limits (a failing call, never a crash or a hang).
#include "lua/lua_function.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::host::lua {
namespace {

using testing::json;

class LuaFunctions : public testing::LuaTest {};

TEST(LuaClassify, FormsFollowTheFirstToken) {
  EXPECT_EQ(classify("x % 2 == 0").form, LuaForm::expression);
  EXPECT_EQ(classify("  (function() return 1 end)()").form, LuaForm::expression);
  EXPECT_EQ(classify("function_name(x)").form, LuaForm::expression);
  EXPECT_EQ(classify("function(x) return x end").form, LuaForm::function);
  EXPECT_EQ(classify("-- doubles\n--[[ long\ncomment ]] function (x) return 2 * x end").form,
            LuaForm::function);
  EXPECT_EQ(classify("local n = 2\nreturn function(x) return n * x end").form, LuaForm::chunk);
  EXPECT_EQ(classify("function f(x) return x end return f").form, LuaForm::chunk);
  EXPECT_EQ(classify("return function(x) return x end").form, LuaForm::chunk);
  EXPECT_TRUE(classify("  -- nothing\n").empty);
  EXPECT_TRUE(classify("").empty);
  EXPECT_FALSE(classify("x").empty);
}

TEST_F(LuaFunctions, ExpressionArgumentNames) {
  EXPECT_EQ(call_json("x % 2 == 0", {Value::integer(4)}), "true");
  EXPECT_EQ(call_json("x.user", {json(R"({"user":"ann"})")}), "\"ann\"");
  // Two arguments: acc and x (a reducer).
  EXPECT_EQ(call_json("acc .. x", {Value::string("a"), Value::string("b")}), "\"ab\"");
  // Three or more (starmap): x is the first, all are in `...`.
  EXPECT_EQ(call_json("x * 100 + select(2, ...) * 10 + select(3, ...)",
                      {Value::integer(1), Value::integer(2), Value::integer(3)}),
            "123");
  EXPECT_EQ(call_json("select('#', ...)",
                      {Value::integer(1), Value::integer(2), Value::integer(3), Value::integer(4)}),
            "4");
}

TEST_F(LuaFunctions, FunctionAndChunkForms) {
  EXPECT_EQ(call_json("function(a, b, c) return a + b + c end",
                      {Value::integer(1), Value::integer(2), Value::integer(3)}),
            "6");
  const char* chunk = R"(local function clamp(v) return math.min(math.max(v, 0), 10) end
return function(x) return clamp(x) end)";
  EXPECT_EQ(call_json(chunk, {Value::integer(42)}), "10");
  EXPECT_EQ(call_json(chunk, {Value::integer(-3)}), "0");
}

TEST_F(LuaFunctions, GlobalsAreThePrivateStateOfOneFunction) {
  auto counter = compile("function(x) n = (n or 0) + 1 return n end");
  auto reader = compile("n == nil and math.pi > 3");
  ASSERT_TRUE(counter && reader);
  EXPECT_EQ(json_dump(call(*counter, {Value::null()})->raw()), "1");
  EXPECT_EQ(json_dump(call(*counter, {Value::null()})->raw()), "2");
  EXPECT_EQ(json_dump(call(*reader, {Value::null()})->raw()), "true");
}

TEST_F(LuaFunctions, RuntimeErrorsCarryTheFileLine) {
  // Source starting at line 10 of test.toml; the failing line is the third.
  auto fn = compile("function(x)\n  local y = x.a\n  return y.b + 1\nend", 10);
  ASSERT_TRUE(fn);
  auto out = call(*fn, {json("{}")});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), SL_INVALID_ARGUMENT);
  EXPECT_EQ(out.status().message(), "Lua: test.toml:12: attempt to index a nil value (local 'y')");

  auto thrown = compile("function(x)\n\n  error('bad element ' .. x)\nend", 4);
  ASSERT_TRUE(thrown);
  EXPECT_EQ(call(*thrown, {Value::integer(7)}).status().message(),
            "Lua: test.toml:6: bad element 7");
}

TEST_F(LuaFunctions, ErrorsRaisedByLibraryFunctionsAndNonStringsGetAPosition) {
  EXPECT_EQ(call_json("\n\nstring.rep()", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:3: bad argument #1 to 'rep' (string "
            "expected, got no value)");
  EXPECT_EQ(call_json("error({})", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: (error object is a table value)");
  EXPECT_EQ(call_json("error('plain', 0)", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: plain");
}

TEST_F(LuaFunctions, CompileErrorsNameFileAndLine) {
  auto fn =
      LuaFunction::compile(runtime_, LuaSource{"function(x)\n  return x +\nend", "f.toml", 7, 9});
  ASSERT_FALSE(fn.is_ok());
  EXPECT_EQ(fn.status().message(), "Lua: f.toml:9: unexpected symbol near 'end'");
  auto not_fn = LuaFunction::compile(runtime_, LuaSource{"local y = 1", "f.toml", 3, 1});
  ASSERT_FALSE(not_fn.is_ok());
  EXPECT_EQ(not_fn.status().message(),
            "Lua: f.toml:3: code that starts with a statement must return the function (e.g. "
            "'return function(x) ... end'); it returned nil");
}

TEST_F(LuaFunctions, CheckSourceMapsSyntaxErrorsToFilePositions) {
  // `lua = "x +* 2"` at line 5, the code starting at column 9.
  auto err = check_source(runtime_, LuaSource{"x +* 2", "f.toml", 5, 9});
  ASSERT_TRUE(err);
  EXPECT_EQ(err->line, 5);
  EXPECT_EQ(err->column, 12);  // the '*'
  EXPECT_EQ(err->message,
            "unexpected symbol near '*' (this is read as an expression of x; write a full "
            "'function(x) ... end' for statements)");

  // A multi-line function whose third line is wrong: columns count from 1 there.
  err = check_source(
      runtime_,
      LuaSource{"function(x)\n  local a = 1\n  local b = ) 2\n  return a\nend", "f.toml", 20, 1});
  ASSERT_TRUE(err);
  EXPECT_EQ(err->line, 22);
  EXPECT_EQ(err->column, 13);
  EXPECT_EQ(err->message, "unexpected symbol near ')'");

  // An unfinished expression is reported on its own last line, not past it.
  err = check_source(runtime_, LuaSource{"(x + 1", "f.toml", 2, 7});
  ASSERT_TRUE(err);
  EXPECT_EQ(err->line, 2);
  EXPECT_EQ(err->column, 13);
  EXPECT_EQ(err->message,
            "')' expected (to close '(' at line 2) at the end of the code (this is read as an "
            "expression of x; write a full 'function(x) ... end' for statements)");

  err = check_source(runtime_, LuaSource{"  ", "f.toml", 2, 7});
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "empty Lua code; write an expression of x (e.g. \"x + 1\") or a function(x) ... end");

  EXPECT_FALSE(check_source(runtime_, LuaSource{"x.a.b", "f.toml", 1, 1}));
}

TEST_F(LuaFunctions, SandboxHasNoWayToTheSystem) {
  EXPECT_EQ(call_json("os == nil and io == nil and package == nil and debug == nil and require "
                      "== nil and dofile == nil and loadfile == nil and collectgarbage == nil and "
                      "coroutine == nil and string.dump == nil",
                      {Value::null()}),
            "true");
  EXPECT_EQ(call_json("os.execute('touch /tmp/sluice-lua-escape')", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: attempt to index a nil value (global "
            "'os')");
  EXPECT_EQ(call_json("io.open('/etc/passwd')", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: attempt to index a nil value (global "
            "'io')");
  EXPECT_EQ(call_json("require('os')", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: attempt to call a nil value (global "
            "'require')");
  // The string metatable is the string table: dump is gone there too.
  EXPECT_EQ(call_json("getmetatable('').__index.dump == nil", {Value::null()}), "true");
  // load takes text only: a binary chunk (precompiled bytecode) is refused.
  EXPECT_EQ(call_json("select(2, load('\\27Lua\\x54\\0', 'b', 'b'))", {Value::null()}),
            "\"attempt to load a binary chunk (mode is 't')\"");
  EXPECT_EQ(call_json("load('return 1 + 1')()", {Value::null()}), "2");
  // The standard libraries that remain work; print logs and returns nothing.
  EXPECT_EQ(call_json("string.format('%05.1f', x) .. utf8.char(233) .. table.concat({1, 2}, '-')",
                      {Value::floating(3.14159)}),
            "\"003.1\xc3\xa9"
            "1-2\"");
  EXPECT_EQ(call_json("print('hello from a test', x)", {Value::integer(1)}), "null");
}

class LuaLimits : public testing::LuaTest {
 protected:
  LuaLimits()
      : LuaTest(Limits{.memory_bytes = size_t{4} << 20, .instructions_per_call = 2'000'000}) {}
};

TEST_F(LuaLimits, MemoryBeyondTheLimitFailsTheCallAndTheStateLivesOn) {
  auto out = call("string.rep('x', 8 * 1024 * 1024)", {Value::null()});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), SL_RESOURCE_EXHAUSTED);
  EXPECT_EQ(out.status().message(), "Lua: memory limit exceeded (4 MiB per task)");
  auto grow = call("function(x) local t = {} for i = 1, 1e9 do t[i] = i end end", {Value::null()});
  ASSERT_FALSE(grow.is_ok());
  EXPECT_EQ(grow.status().code(), SL_RESOURCE_EXHAUSTED);
  EXPECT_LE(runtime_.memory_used(), size_t{4} << 20);
  EXPECT_EQ(call_json("x + 1", {Value::integer(1)}), "2");
  // A big input value counts too (string.len: a call, so not on the native fast path,
  // which reads the argument in place and so takes it: docs/LUA.md, "The fast path").
  const std::string big(size_t{5} << 20, 'a');
  auto in = call("string.len(x)", {Value::string(big)});
  EXPECT_EQ(in.status().code(), SL_RESOURCE_EXHAUSTED);
  EXPECT_EQ(call_json("#x", {Value::string(big)}), std::to_string(big.size()));
}

TEST_F(LuaLimits, EndlessLoopsStopAtTheInstructionLimit) {
  auto fn = compile("function(x)\n  while true do end\nend", 30);
  ASSERT_TRUE(fn);
  auto out = call(*fn, {Value::null()});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), SL_INVALID_ARGUMENT);
  EXPECT_EQ(out.status().message(),
            "Lua: test.toml:31: instruction limit exceeded (2 million per call); an endless "
            "loop?");
  // The budget is per call: the next calls run normally.
  EXPECT_EQ(call_json("function(x) local s = 0 for i = 1, 10000 do s = s + i end return s end",
                      {Value::null()}),
            "50005000");
  EXPECT_FALSE(call(*fn, {Value::null()}).is_ok());
}

TEST_F(LuaLimits, ChunksRunningAtBindTimeAreLimitedToo) {
  auto fn = LuaFunction::compile(runtime_, LuaSource{"while true do end", "f.toml", 1, 1});
  ASSERT_FALSE(fn.is_ok());
  EXPECT_NE(fn.status().message().find("instruction limit exceeded"), std::string::npos);
}

}  // namespace
}  // namespace sluice::host::lua
