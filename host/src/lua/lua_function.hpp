// User functions written in Lua (docs/LUA.md): their source forms, checking
// at validation time, compiling into a task's runtime and calling.
//
// Source forms, told apart by the first token (after comments):
//   expression  `x % 2 == 0`, `acc + x`: the body of a function whose locals
//               are x (one argument), acc and x (two: a reducer) or x = the
//               first (three or more; all are in `...`). An expression list
//               `acc + x, acc` returns two values.
//   function    `function(a, b) ... end`: an anonymous function.
//   chunk       starts with `local`, `return` or `function name`: statements
//               run once when bound, which must return the function.
//
// Results: no value or nil -> null; one value -> that value; two values from
// a call with two arguments (a reducer, e.g. accumulate with returns_state)
// -> the array [first, second]; otherwise extra values are dropped, as Lua
// itself does (so `x:gsub(...)` in a map yields the string only).
#pragma once

#include "common/result.hpp"
#include "lua/lua_runtime.hpp"
#include "lua/native_expression.hpp"
#include "value/value.hpp"

#include <sluice/sluice.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host::lua {

// Lua source as written in a config, with where it starts in the file: Lua's
// line numbers are made to equal the file's.
struct LuaSource {
  std::string code;
  std::string file = "<lua>";
  int64_t line = 1;    // file line of the code's first line
  int64_t column = 1;  // file column of the code's first character (diagnostics only)
};

enum class LuaForm { expression, function, chunk };

// The form of `code` (see above); `empty` when it holds only spaces and comments.
struct Classified {
  LuaForm form = LuaForm::expression;
  bool empty = false;
};
[[nodiscard]] Classified classify(std::string_view code);

// A problem in Lua source, at a file position.
struct SourceError {
  int64_t line = 0;
  int64_t column = 0;
  std::string message;  // without the position
};

// For validation: compiles `source` and runs its chunk (which only builds the
// function; the function is not called) in `runtime`, reporting a syntax
// error, an error while the chunk runs, or a chunk that returns no function.
[[nodiscard]] std::optional<SourceError> check_source(LuaRuntime& runtime, const LuaSource& source);

// The normalised spec of a Lua function param: { lua, file, line }.
[[nodiscard]] Value lua_spec(const LuaSource& source);
// The source of a spec made by lua_spec (nullopt when `spec` is not one:
// not an object with a string `lua`). `file` and `line` are optional.
[[nodiscard]] std::optional<LuaSource> lua_source_of(const Value& spec);

// The environment variable that turns the native fast path off (docs/LUA.md,
// "The fast path"): "0", "off", "false" or "no" make every call run in Lua.
inline constexpr const char* k_fast_path_env = "SLUICE_LUA_FAST_PATH";
// Whether the environment allows the fast path (read at each compile).
[[nodiscard]] bool fast_path_enabled();

// A Lua function compiled into a runtime. Task thread only; must be destroyed
// before its runtime.
class LuaFunction {
 public:
  // Compiles and runs the chunk. Errors name the file and line. A simple
  // expression is compiled for the native fast path too (native_expression.hpp)
  // unless `allow_native` is false or fast_path_enabled() says no.
  [[nodiscard]] static Result<std::unique_ptr<LuaFunction>> compile(LuaRuntime& runtime,
                                                                    const LuaSource& source,
                                                                    bool allow_native = true);
  ~LuaFunction();
  LuaFunction(const LuaFunction&) = delete;
  LuaFunction& operator=(const LuaFunction&) = delete;

  // f(argv...) with borrowed arguments; see the header comment for results.
  // Errors: INVALID_ARGUMENT (a Lua error, the instruction limit, a result
  // that is no value), RESOURCE_EXHAUSTED (the memory limit); each message
  // carries file:line.
  // The native fast path answers when it can, else the Lua function runs.
  [[nodiscard]] Result<Value> call(const sl_value* argv, uint32_t argc);

  // out[i] = f(in[i]) for `count` borrowed inputs, writing owned values; on
  // failure (the first element that fails, with call's errors) nothing in
  // `out` is owned. Elements the fast path does not answer run in Lua, all of
  // them in one protected call, each with its own instruction and time budget.
  [[nodiscard]] Status call_batch(const sl_value* in, size_t count, sl_value* out);

  // "file:line" where the source starts.
  [[nodiscard]] const std::string& where() const { return where_; }
  // Whether calls take the native fast path; if not, why (for the log).
  [[nodiscard]] bool native() const { return native_.has_value(); }
  [[nodiscard]] const std::string& native_reason() const { return native_reason_; }
  // Calls answered by the fast path, and calls it left to Lua (a Lua error
  // or a case it does not model), since compile.
  [[nodiscard]] uint64_t native_calls() const { return native_calls_; }
  [[nodiscard]] uint64_t native_fallbacks() const { return native_fallbacks_; }

 private:
  LuaFunction(LuaRuntime& runtime, int ref, std::string where)
      : runtime_(runtime), ref_(ref), where_(std::move(where)) {}

  // The function in Lua, without the fast path.
  [[nodiscard]] Result<Value> call_lua(const sl_value* argv, uint32_t argc);
  // call_batch's Lua part: elements [from, count) whose out[i] the fast path
  // did not fill (`todo[i]`), in one protected call.
  [[nodiscard]] Status call_lua_batch(const sl_value* in, size_t count, sl_value* out,
                                      const std::vector<uint8_t>* todo);

  LuaRuntime& runtime_;
  int ref_;  // in the registry
  std::string where_;
  bool expression_form_ = false;  // called with the argument count first (lua_function.cc)
  std::optional<NativeExpression> native_;
  std::string native_reason_;
  uint64_t native_calls_ = 0;
  uint64_t native_fallbacks_ = 0;
  std::vector<uint8_t> todo_;  // call_batch's scratch
};

}  // namespace sluice::host::lua
