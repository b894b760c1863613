// Fuzz target: the Lua sandbox (host/src/lua/). The input is the code of a Lua
// function (any of the three forms, docs/LUA.md), compiled into a fresh runtime
// with small limits and called on a few values, as a task would.
//
// What must hold for any code: no crash, no hang (every call ends within the
// instruction and time limits; libFuzzer's -timeout catches the rest), memory
// within the limit; and isolation: a function compiled before it into the same
// runtime still sees the built-in libraries (the probe's result is unchanged)
// and still runs.
#include "lua/lua_function.hpp"
#include "lua/lua_runtime.hpp"
#include "value/value.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace lua = sluice::host::lua;
using sluice::host::Value;

namespace {

constexpr lua::Limits k_limits{.memory_bytes = size_t{16} << 20,
                               .instructions_per_call = 1'000'000,
                               .time_per_call_ms = 1'000};

// Reads what the attacks of the seeds try to change.
constexpr std::string_view k_probe =
    "function(x) return string.upper('a') .. ('b'):upper() .. math.floor(2.5) .. "
    "table.concat({1, 2}, '-') .. utf8.char(65) .. tostring(sluice.null) .. "
    "getmetatable(sluice.object()) .. type(getmetatable('').__index.upper) end";
constexpr std::string_view k_expected = "AB21-2Anullsluice.objectfunction";

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "lua_sandbox_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

void check_probe(lua::LuaFunction& probe, lua::LuaRuntime& runtime, const char* when) {
  const sl_value arg = Value::null().raw();
  auto out = probe.call(&arg, 1);
  if (!out.is_ok()) fail(when, "the probe failed: " + out.status().to_string());
  if (!out->is_string() || out->as_str() != k_expected) fail(when, "the probe's result changed");
  if (runtime.memory_used() > k_limits.memory_bytes) fail(when, "memory beyond the limit");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  spdlog::set_level(spdlog::level::off);  // print() logs
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lua::LuaRuntime runtime(k_limits);
  auto probe = lua::LuaFunction::compile(runtime, lua::LuaSource{std::string(k_probe)});
  if (!probe.is_ok()) fail("probe", probe.status().to_string());
  const std::string code(reinterpret_cast<const char*>(data), size);
  auto fn = lua::LuaFunction::compile(runtime, lua::LuaSource{code, "fuzz.toml", 1, 1});
  check_probe(**probe, runtime, "after compiling");
  if (!fn.is_ok()) return 0;
  const Value args[] = {Value::integer(7), Value::string("text")};
  const sl_value one[] = {args[0].raw()};
  const sl_value two[] = {args[0].raw(), args[1].raw()};
  static_cast<void>((*fn)->call(one, 1));
  check_probe(**probe, runtime, "after one call");
  static_cast<void>((*fn)->call(two, 2));
  check_probe(**probe, runtime, "after a second call");
  return 0;
}
