// The Lua sandbox under attack (issue 18, items 6 and 7): every way found to
// outrun the instruction or memory limit ends the call with the limit's
// error, and no function can change what another function of the same task
// (the same Lua state) sees. Each case would hang or leak without the fix;
// the ctest TIMEOUT (CMakeLists.txt) bounds a regression.
#include "lua/lua_function.hpp"
#include "lua_test_util.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sluice::host::lua {
namespace {

constexpr const char* k_limit_error =
    "instruction limit exceeded (2 million per call); an endless loop?";

class LuaEscapes : public testing::LuaTest {
 protected:
  // The time limit is far away, so that the instruction limit ends every case
  // even under valgrind or a sanitizer (LuaTimeLimit tests the time limit).
  LuaEscapes()
      : LuaTest(Limits{.memory_bytes = size_t{4} << 20,
                       .instructions_per_call = 2'000'000,
                       .time_per_call_ms = 50'000}) {}

  // Calls `code` once and expects the instruction limit's error.
  void expect_instruction_limit(const std::string& code) {
    auto out = call(code, {Value::null()});
    ASSERT_FALSE(out.is_ok()) << code << " returned " << json_dump(out->raw());
    EXPECT_EQ(out.status().code(), SL_INVALID_ARGUMENT) << code;
    EXPECT_NE(out.status().message().find(k_limit_error), std::string::npos)
        << code << ": " << out.status().message();
    // The state lives on with a fresh budget.
    EXPECT_EQ(call_json("x + 1", {Value::integer(1)}), "2") << code;
  }
  void expect_memory_limit(const std::string& code) {
    auto out = call(code, {Value::null()});
    ASSERT_FALSE(out.is_ok()) << code << " returned " << json_dump(out->raw());
    EXPECT_EQ(out.status().code(), SL_RESOURCE_EXHAUSTED) << code;
    EXPECT_EQ(out.status().message(), "Lua: memory limit exceeded (4 MiB per task)") << code;
    EXPECT_LE(runtime_.memory_used(), size_t{4} << 20);
    EXPECT_EQ(call_json("x + 1", {Value::integer(1)}), "2") << code;
  }
};

TEST_F(LuaEscapes, PcallCannotCatchTheInstructionLimit) {
  expect_instruction_limit(
      "function(x) while true do pcall(function() while true do end end) end end");
  // Caught once, then returning normally: the limit still fails the call.
  expect_instruction_limit(
      "function(x) local ok = pcall(function() while true do end end) return ok end");
  expect_instruction_limit("function(x) while true do pcall(error, 'e') end end");
  // Nested pcalls, each catching.
  expect_instruction_limit(
      "function(x) while true do pcall(pcall, pcall, function() while true do end end) end end");
  // The message points at the loop (file:line).
  auto out = call("function(x)\n  while true do pcall(function() while true do end end) end\nend",
                  {Value::null()});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().message(), std::string("Lua: test.toml:2: ") + k_limit_error);
}

TEST_F(LuaEscapes, XpcallAndItsMessageHandlerAreBounded) {
  // An endless message handler (Lua runs handlers of errors raised by the
  // count hook with hooks off: the original hang).
  expect_instruction_limit(
      "function(x) return xpcall(error, function() while true do end end) end");
  expect_instruction_limit(
      "function(x) return xpcall(function() while true do end end, function() while true do end "
      "end) end");
  expect_instruction_limit(
      "function(x) while true do xpcall(function() while true do end end, function(e) return e "
      "end) end end");
  expect_instruction_limit(
      "function(x) return xpcall(error, function() while true do pcall(function() while true do "
      "end end) end end) end");
  // xpcall still works: the handler sees the error and its result is returned.
  EXPECT_EQ(call_json("function(x) return select(2, xpcall(error, function(e) return 'handled: ' "
                      ".. e end, 'boom', 0)) end",
                      {Value::null()}),
            "\"handled: boom\"");
  EXPECT_EQ(call_json("function(x) return select(2, xpcall(function(a) return a + 1 end, print, "
                      "x)) end",
                      {Value::integer(41)}),
            "42");
  // A handler that fails: xpcall returns false and the handler's error.
  EXPECT_EQ(call_json("function(x) local ok, e = xpcall(error, function() error('again', 0) end) "
                      "return {ok, e} end",
                      {Value::null()}),
            "[false,\"again\"]");
}

TEST_F(LuaEscapes, GcMetamethodsAreRefused) {
  auto out = call("function(x) setmetatable({}, {__gc = function() while true do end end}) end",
                  {Value::null()});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(
      out.status().message().find("setmetatable: __gc metamethods are not allowed in the sandbox"),
      std::string::npos)
      << out.status().message();
  // __gc = true (any value) marks the object for finalization in Lua 5.4:
  // refused too, so a function stored in the metatable later is never run.
  EXPECT_FALSE(call("function(x) local mt = {__gc = true} setmetatable({}, mt) mt.__gc = "
                    "function() while true do end end end",
                    {Value::null()})
                   .is_ok());
  // A __gc added after setmetatable never runs: garbage is collected, the
  // call returns, and closing the state (the test's end) does not hang.
  EXPECT_EQ(call_json("function(x) local mt = {} for i = 1, 1000 do setmetatable({}, mt) end "
                      "mt.__gc = function() while true do end end for i = 1, 20000 do local t = "
                      "{i, i, i} end return 'done' end",
                      {Value::null()}),
            "\"done\"");
  // Other metamethods work.
  EXPECT_EQ(call_json("function(x) return setmetatable({}, {__index = function(t, k) return k .. "
                      "'!' end}).hi end",
                      {Value::null()}),
            "\"hi!\"");
}

TEST_F(LuaEscapes, GcChunksAreRefusedAtValidation) {
  auto err = check_source(
      runtime_, LuaSource{"local keep = setmetatable({}, {__gc = function() while true do end "
                          "end})\nreturn function(x) return x end",
                          "v.toml", 3, 1});
  ASSERT_TRUE(err);
  EXPECT_EQ(err->line, 3);
  EXPECT_NE(err->message.find("__gc"), std::string::npos) << err->message;
}

TEST_F(LuaEscapes, CloseHandlersAreBounded) {
  // A looping __close on the way out of a loop stopped by the limit.
  expect_instruction_limit(
      "function(x) local c <close> = setmetatable({}, {__close = function() while true do end "
      "end}) while true do end end");
  // On a normal exit from the block.
  expect_instruction_limit(
      "function(x) do local c <close> = setmetatable({}, {__close = function() while true do "
      "end end}) end end");
  // A __close that catches in a loop.
  expect_instruction_limit(
      "function(x) local c <close> = setmetatable({}, {__close = function() while true do "
      "pcall(function() while true do end end) end end}) while true do end end");
}

TEST_F(LuaEscapes, ErrorObjectsWithLoopingTostringAreBounded) {
  expect_instruction_limit(
      "function(x) error(setmetatable({}, {__tostring = function() while true do end end})) "
      "end");
  expect_instruction_limit(
      "function(x) while true do pcall(error, setmetatable({}, {__tostring = function() while "
      "true do end end})) end end");
}

TEST_F(LuaEscapes, LoadTakesStringsOnly) {
  // A reader function would run inside the parser's protected call.
  auto out = call("function(x) while true do load(function() while true do end end) end end",
                  {Value::null()});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find(
                "load: the sandbox loads a string of source text only, not a function"),
            std::string::npos)
      << out.status().message();
  // A loaded chunk that loops is limited like any code.
  expect_instruction_limit("function(x) return pcall(load('while true do end')) end");
}

TEST_F(LuaEscapes, PatternMatchingCountsItsSteps) {
  // Backtracking: O(n^20) steps inside one string.find.
  expect_instruction_limit(
      "function(x) return string.rep('a', 10000):find(string.rep('a*', 20) .. 'b') end");
  expect_instruction_limit(
      "function(x) return pcall(string.match, string.rep('a', 10000), string.rep('.-', 20) .. "
      "'b') end");
  expect_instruction_limit(
      "function(x) return (string.rep('a', 10000):gsub(string.rep('a-', 20) .. 'b', '')) end");
  expect_instruction_limit(
      "function(x) for m in string.rep('(', 5000):gmatch(string.rep('%b()', 3) .. '?x') do end "
      "end");
  // A plain find is quadratic in the needle's length.
  expect_instruction_limit(
      "function(x) local s = string.rep('a', 1 << 20) return s:find(string.rep('a', 1 << 19) .. "
      "'b', 1, true) end");
  // Method calls go through the same matcher, and patterns still work.
  EXPECT_EQ(call_json("function(x) local out = {} for k, v in ('a=1, b=2'):gmatch('(%w+)=(%w+)') "
                      "do out[#out + 1] = k .. v end return table.concat(out, ' ') .. ' ' .. "
                      "select(1, ('  hi  '):match('^%s*(.-)%s*$')) .. ' ' .. ('x-y'):gsub('-', "
                      "'+') .. ' ' .. ('hello'):find('l+') end",
                      {Value::null()}),
            "\"a1 b2 hi x+y 3\"");
}

TEST_F(LuaEscapes, TableFunctionsAreBounded) {
  // table.move touches every index in the range, present or not.
  EXPECT_EQ(call_json("function(x) table.move({}, 1, 1e15, 2) end", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: table.move: at most 16777216 elements "
            "per call in the sandbox");
  // A table whose length is 2^50: a positional insert or remove shifts 2^50
  // elements (raw accesses, no Lua runs).
  const std::string sparse = "local t = setmetatable({}, {__len = function() return 1 << 50 end}) ";
  EXPECT_EQ(call_json("function(x) " + sparse + "table.insert(t, 1, 0) end", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: table.insert: at most 16777216 elements "
            "per call in the sandbox");
  EXPECT_EQ(call_json("function(x) " + sparse + "return select(2, pcall(table.remove, t, 1)) end",
                      {Value::null()}),
            "\"table.remove: at most 16777216 elements per call in the sandbox\"");
  // The default order of table.sort counts its comparisons and the bytes it
  // compares: 100,000 references to one 1 MiB string.
  expect_instruction_limit(
      "function(x) local s, t = string.rep('a', 1 << 20), {} for i = 1, 100000 do t[i] = s "
      "end table.sort(t) end");
  // They still work.
  EXPECT_EQ(call_json("function(x) local t = {5, 3, 1, 4, 2} table.sort(t) table.insert(t, 1, "
                      "0) table.insert(t, 9) table.remove(t, 2) table.remove(t) local u = "
                      "table.move(t, 1, 3, 1, {}) table.sort(t, function(a, b) return a > b end) "
                      "return {t, u} end",
                      {Value::null()}),
            "[[5,4,3,2,0],[0,2,3]]");
}

TEST_F(LuaEscapes, PcallCannotCatchTheMemoryLimit) {
  expect_memory_limit("function(x) while true do pcall(string.rep, 'x', 8 * 1024 * 1024) end end");
  expect_memory_limit("function(x) return (pcall(string.rep, 'x', 1 << 30)) end");
  expect_memory_limit(
      "function(x) local ok = xpcall(function() local t = {} for i = 1, 1e9 do t[i] = i end end, "
      "function(e) return e end) return ok end");
  // table.concat and string.rep beyond the limit.
  expect_memory_limit(
      "function(x) local s, t = string.rep('x', 100000), {} for i = 1, 64 do t[i] = s end "
      "return #table.concat(t) end");
  expect_memory_limit("function(x) return #string.rep('ab', 1 << 22, ',') end");
  // A memory error inside load's parse.
  expect_memory_limit(
      "function(x) local s = string.rep('a', 1 << 20) return pcall(load, 'return \"' .. s .. "
      "'\"') end");
}

class LuaTimeLimit : public testing::LuaTest {
 protected:
  LuaTimeLimit()
      : LuaTest(Limits{.memory_bytes = size_t{64} << 20,
                       .instructions_per_call = 2'000'000,
                       .time_per_call_ms = 200}) {}
};

TEST_F(LuaTimeLimit, LoopsOfExpensiveLibraryCallsStopAtTheTimeLimit) {
  // Each find scans 16 MiB but counts as one instruction: within the
  // instruction budget this loop would run for minutes.
  auto out = call(
      "function(x)\n  local s = string.rep('x', 1 << 24)\n  for i = 1, 1e9 do pcall(string.find, "
      "s, 'y', 1, true) end\nend",
      {Value::null()});
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.status().code(), SL_INVALID_ARGUMENT);
  EXPECT_EQ(out.status().message(),
            "Lua: test.toml:3: time limit exceeded (200 ms per call); expensive library calls "
            "in a loop?");
  // The next call has a fresh budget.
  EXPECT_EQ(call_json("x + 1", {Value::integer(1)}), "2");
}

class LuaIsolation : public testing::LuaTest {
 protected:
  // Runs `attack` in one function, then `probe` (an expression of x) in
  // another function of the same runtime; returns the probe's JSON.
  std::string after(const std::string& attack, const std::string& probe, Value x) {
    auto probe_fn = compile(probe);
    auto attack_fn = compile("function(x) " + attack + " end");
    if (!probe_fn || !attack_fn) return "did not compile";
    attack_result_ = call(*attack_fn, {Value::null()});
    auto out = call(*probe_fn, {x});
    return out.is_ok() ? json_dump(out->raw()) : "error: " + out.status().to_string();
  }
  Result<Value> attack_result_ = Value::null();
};

TEST_F(LuaIsolation, AFunctionCannotChangeTheLibrariesAnotherSees) {
  const Value abc = Value::string("abc");
  struct Case {
    const char* attack;
    const char* probe;
    Value x;
    const char* expected;
  };
  const Case cases[] = {
      {"string.upper = function() return 'pwned' end", "string.upper(x) .. x:upper()", abc,
       "\"ABCABC\""},
      {"getmetatable('').__index.upper = function() return 'pwned' end", "x:upper()", abc,
       "\"ABC\""},
      {"getmetatable('').__index = {upper = function() return 'pwned' end}", "x:upper()", abc,
       "\"ABC\""},
      {"rawset(getmetatable('').__index, 'upper', function() return 'pwned' end)", "x:upper()", abc,
       "\"ABC\""},
      {"rawset(string, 'upper', function() return 'pwned' end)", "string.upper(x)", abc, "\"ABC\""},
      {"math.floor = function() return 0 end", "math.floor(x)", Value::floating(2.5), "2"},
      {"table.concat = function() return 'pwned' end", "table.concat({x, x}, '-')", abc,
       "\"abc-abc\""},
      {"sluice.null = 'pwned'", "x == sluice.null", Value::null(), "true"},
      {"sluice.object = function() return {} end", "sluice.object()", Value::null(), "{}"},
      {"utf8.char = nil", "utf8.char(233)", Value::null(), "\"\xc3\xa9\""},
      {"table.insert(math, 'pwned')", "#math", Value::null(), "0"},
      {"setmetatable(string, {__index = function() return 'pwned' end})", "string.nope", abc,
       "null"},
      {"load('string.upper = nil')()", "x:upper()", abc, "\"ABC\""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(after(c.attack, c.probe, c.x), c.expected) << c.attack;
    // The attack itself fails with a clear error.
    ASSERT_FALSE(attack_result_.is_ok()) << c.attack;
    EXPECT_EQ(attack_result_.status().code(), SL_INVALID_ARGUMENT) << c.attack;
  }
  EXPECT_NE(attack_result_.status().message().find(
                "cannot assign string.upper: the library is read-only (shared by every "
                "function of the task); use a local variable instead"),
            std::string::npos)
      << attack_result_.status().message();
}

TEST_F(LuaIsolation, ReadOnlyErrorsNameTheLibraryAndKey) {
  EXPECT_EQ(call_json("function(x) math.floor = nil end", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: cannot assign math.floor: the library is "
            "read-only (shared by every function of the task); use a local variable instead");
  EXPECT_EQ(call_json("function(x) getmetatable('').__index = {} end", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: cannot assign getmetatable('').__index: "
            "the library is read-only (shared by every function of the task); use a local "
            "variable instead");
  EXPECT_EQ(call_json("function(x) rawset(sluice, 'null', 1) end", {Value::null()}),
            "error: INVALID_ARGUMENT: Lua: test.toml:1: rawset: the table is a read-only "
            "library, shared by every function of the task");
}

TEST_F(LuaIsolation, GlobalsAndEnvironmentsStayPrivate) {
  // _G is the function's own environment: assigning through it, or to a
  // global of a library's name, changes only that function.
  EXPECT_EQ(after("_G.string = {upper = function() return 'pwned' end}",
                  "x:upper() .. "
                  "string.upper(x)",
                  Value::string("a")),
            "\"AA\"");
  EXPECT_TRUE(attack_result_.is_ok());
  EXPECT_EQ(after("string = nil math = nil", "math.abs(-1)", Value::null()), "1");
  EXPECT_EQ(after("load('shared = 1')() rawset(_G, 'shared2', 2)",
                  "shared == nil and shared2 "
                  "== nil",
                  Value::null()),
            "true");
  // The shared globals behind an environment cannot be reached.
  EXPECT_EQ(call_json("getmetatable(_ENV)", {Value::null()}), "\"sluice.env\"");
  EXPECT_EQ(call_json("getmetatable(string)", {Value::null()}), "\"sluice.readonly\"");
  EXPECT_EQ(after("setmetatable(_ENV, nil) pairs = nil", "type(pairs)", Value::null()),
            "\"function\"");
  // The iterator pairs returns for a library walks libraries only.
  EXPECT_EQ(call_json("function(x) local walk = pairs(string) return select(2, pcall(walk, "
                      "_ENV)) end",
                      {Value::null()}),
            "\"bad argument #1 to '?' (not a read-only library)\"");
  // A function keeps its own global state and can shadow a library locally.
  EXPECT_EQ(call_json("function(x) local string = {upper = function() return 'mine' end} return "
                      "string.upper(x) end",
                      {Value::string("a")}),
            "\"mine\"");
}

TEST_F(LuaIsolation, ReadOnlyLibrariesStillIterate) {
  // pairs goes through __pairs; next() on the view itself sees nothing.
  EXPECT_EQ(call_json("function(x) local n = 0 for k, v in pairs(math) do n = n + 1 end return n "
                      "> 20 and math.pi > 3 and next(math) == nil end",
                      {Value::null()}),
            "true");
  EXPECT_EQ(call_json("function(x) local t = {} for k in pairs(sluice) do t[#t + 1] = k end "
                      "table.sort(t) return table.concat(t, ',') end",
                      {Value::null()}),
            "\"array,bytes,null,object\"");
}

}  // namespace
}  // namespace sluice::host::lua
