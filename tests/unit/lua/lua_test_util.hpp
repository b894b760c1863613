// Shared helpers of the Lua unit tests: compile a source into a runtime and
// call it on values written as JSON.
#pragma once

#include "lua/lua_function.hpp"
#include "lua/lua_runtime.hpp"
#include "value/json.hpp"
#include "value/value.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace sluice::host::lua::testing {

inline Value json(std::string_view text) {
  auto parsed = json_parse(text);
  EXPECT_TRUE(parsed.is_ok()) << text << ": " << parsed.status().message();
  return parsed.is_ok() ? std::move(parsed).value() : Value();
}

class LuaTest : public ::testing::Test {
 protected:
  explicit LuaTest(Limits limits = {}) : runtime_(limits) {}

  // Compiles `code` as if written at test.toml:line (column 1); fails the test
  // when it does not compile.
  std::unique_ptr<LuaFunction> compile(const std::string& code, int64_t line = 1) {
    auto fn = LuaFunction::compile(runtime_, LuaSource{code, "test.toml", line, 1});
    EXPECT_TRUE(fn.is_ok()) << code << ": " << fn.status().to_string();
    return fn.is_ok() ? std::move(fn).value() : nullptr;
  }

  // f(args...) for a freshly compiled `code`.
  Result<Value> call(const std::string& code, std::initializer_list<Value> args) {
    auto fn = compile(code);
    if (!fn) return Status(SL_INTERNAL, "did not compile");
    return call(*fn, args);
  }
  static Result<Value> call(LuaFunction& fn, std::initializer_list<Value> args) {
    std::vector<sl_value> argv;
    for (const Value& a : args) argv.push_back(a.raw());
    return fn.call(argv.data(), static_cast<uint32_t>(argv.size()));
  }

  // The JSON text of f(args...), or "error: STATUS: message".
  std::string call_json(const std::string& code, std::initializer_list<Value> args) {
    auto out = call(code, args);
    if (!out.is_ok()) return "error: " + out.status().to_string();
    return json_dump(out->raw());
  }

  LuaRuntime runtime_;
};

}  // namespace sluice::host::lua::testing
