#include "lua/lua_function.hpp"

#include "lua/lua_values.hpp"

#include <fmt/format.h>
#include <lua.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <new>
#include <utility>
#include <variant>
#include <vector>

namespace sluice::host::lua {
namespace {

// What the expression form puts before the user's expression (on its first
// line, so line numbers stay those of the file) and after it.
// The host passes the argument count first (expression_form in CallFrame):
// no call of select('#', ...) per element.
constexpr std::string_view k_expression_prefix =
    "return function(sluice_argc_, ...) local acc, x if sluice_argc_ == 2 then acc, x = ... "
    "else x = ... end return ";
constexpr std::string_view k_expression_suffix = "\nend";
constexpr std::string_view k_function_prefix = "return ";
// Lines of padding put before the code are capped (a config is never this long).
constexpr int64_t k_max_line = 1'000'000;
// More arguments than Lua's stack comfortably takes in one call.
constexpr uint32_t k_max_args = 10'000;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Skips spaces and comments (`-- ...` and `--[[ ... ]]`, `--[==[ ... ]==]`).
size_t skip_blank(std::string_view s, size_t i) {
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i])) != 0) {
      ++i;
    } else if (s.substr(i, 2) == "--") {
      i += 2;
      size_t level = 0;
      if (i < s.size() && s[i] == '[') {
        size_t j = i + 1;
        while (j < s.size() && s[j] == '=') ++j;
        if (j < s.size() && s[j] == '[') {
          level = j - i;  // long comment: "]" + (level - 1) "=" + "]" closes it
          const std::string close = "]" + std::string(level - 1, '=') + "]";
          const size_t end = s.find(close, j + 1);
          i = end == std::string_view::npos ? s.size() : end + close.size();
          continue;
        }
      }
      const size_t eol = s.find('\n', i);
      i = eol == std::string_view::npos ? s.size() : eol + 1;
    } else {
      break;
    }
  }
  return i;
}

std::string_view name_at(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_name_char(s[j])) ++j;
  return s.substr(i, j - i);
}

int64_t first_line(const LuaSource& source) {
  return source.line >= 1 && source.line <= k_max_line ? source.line : 1;
}

// The chunk Lua compiles: padding newlines so that Lua's line numbers are the
// file's, then the code in its form's wrapper.
std::string chunk_text(const LuaSource& source, LuaForm form) {
  std::string text(static_cast<size_t>(first_line(source) - 1), '\n');
  switch (form) {
    case LuaForm::expression:
      text += k_expression_prefix;
      text += source.code;
      text += k_expression_suffix;
      break;
    case LuaForm::function:
      text += k_function_prefix;
      text += source.code;
      break;
    case LuaForm::chunk: text += source.code; break;
  }
  return text;
}

// Splits "chunk:LINE: rest" (Lua's positioned messages) into LINE and rest.
std::optional<std::pair<int64_t, std::string_view>> split_position(std::string_view message) {
  for (size_t i = message.find(':'); i != std::string_view::npos; i = message.find(':', i + 1)) {
    size_t j = i + 1;
    int64_t line = 0;
    while (j < message.size() && std::isdigit(static_cast<unsigned char>(message[j])) != 0 &&
           line < k_max_line * 10) {
      line = line * 10 + (message[j] - '0');
      ++j;
    }
    if (j > i + 1 && message.substr(j, 2) == ": ") return std::pair(line, message.substr(j + 2));
  }
  return std::nullopt;
}

// A Lua message as a position in the file: the line from the message, the
// column from the token it names ("near 'x'") found in that line of the code.
SourceError locate(const LuaSource& source, std::string_view message) {
  auto split = split_position(message);
  if (!split) return {source.line, source.column, std::string(message)};
  const auto [lua_line, rest] = *split;
  std::vector<std::string_view> lines;
  std::string_view code = source.code;
  for (size_t start = 0;;) {
    const size_t eol = code.find('\n', start);
    lines.push_back(code.substr(start, eol == std::string_view::npos ? eol : eol - start));
    if (eol == std::string_view::npos) break;
    start = eol + 1;
  }
  const int64_t k =
      std::clamp<int64_t>(lua_line - first_line(source), 0, static_cast<int64_t>(lines.size()) - 1);
  const bool past_code = lua_line - first_line(source) > k;
  const std::string_view text = lines[static_cast<size_t>(k)];
  size_t offset = past_code ? text.size() : 0;
  if (const size_t near = rest.rfind(" near "); near != std::string_view::npos && !past_code) {
    std::string_view token = rest.substr(near + 6);
    if (token == "<eof>") {
      offset = text.size();
    } else if (token.size() >= 2 && token.front() == '\'' && token.back() == '\'') {
      token = token.substr(1, token.size() - 2);
      if (const size_t at = text.find(token); at != std::string_view::npos) offset = at;
    }
  }
  const int64_t column = (k == 0 ? source.column : 1) + static_cast<int64_t>(offset);
  std::string bare(rest);
  if (past_code) {  // the token Lua names is the form's wrapper ("end"), not the user's
    if (const size_t near = bare.rfind(" near "); near != std::string::npos) {
      bare = bare.substr(0, near) + " at the end of the code";
    }
  }
  return {source.line + k, column, std::move(bare)};
}

struct ChunkJob {
  int ref = LUA_NOREF;
};

// Protected: gives the compiled chunk (argument 2) its own environment (reads
// fall through to the sandbox's globals, writes stay with this function), runs
// it and keeps the function it returns in the registry.
int run_chunk(lua_State* L) {
  auto* job = static_cast<ChunkJob*>(lua_touserdata(L, 1));
  LuaRuntime::push_function_env(L);
  if (lua_setupvalue(L, 2, 1) == nullptr) lua_pop(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 0, 1);
  if (lua_type(L, -1) != LUA_TFUNCTION) {
    return luaL_error(L,
                      "code that starts with a statement must return the function (e.g. "
                      "'return function(x) ... end'); it returned %s",
                      luaL_typename(L, -1));
  }
  job->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

struct LoadFailure {
  Status status;      // with the file position in the message
  SourceError where;  // the same, as a file position and a bare message
};

// Compiles `source` and runs its chunk; the function's registry ref or why not.
std::variant<int, LoadFailure> load(LuaRuntime& runtime, const LuaSource& source) {
  auto state = runtime.state();
  if (!state.is_ok()) {
    return LoadFailure{state.status(), {source.line, source.column, state.status().message()}};
  }
  lua_State* L = *state;
  const Classified kind = classify(source.code);
  if (kind.empty) {
    std::string message =
        "empty Lua code; write an expression of x (e.g. \"x + 1\") or a function(x) ... end";
    return LoadFailure{Status(SL_INVALID_ARGUMENT, message), {source.line, source.column, message}};
  }
  if (!lua_checkstack(L, 4)) {
    return LoadFailure{Status(SL_RESOURCE_EXHAUSTED, "Lua stack overflow"),
                       {source.line, source.column, "Lua stack overflow"}};
  }
  const int base = lua_gettop(L);
  const std::string text = chunk_text(source, kind.form);
  const std::string chunkname = "@" + source.file;
  // luaL_loadbufferx parses in protected mode: it returns errors, never raises.
  const int rc = luaL_loadbufferx(L, text.data(), text.size(), chunkname.c_str(), "t");
  if (rc != LUA_OK) {
    const char* raw = lua_tostring(L, -1);
    std::string message = raw != nullptr ? raw : "cannot compile";
    lua_settop(L, base);
    SourceError where = locate(source, message);
    if (kind.form == LuaForm::expression && rc == LUA_ERRSYNTAX) {
      where.message +=
          " (this is read as an expression of x; write a full "
          "'function(x) ... end' for statements)";
    }
    return LoadFailure{Status(rc == LUA_ERRMEM ? SL_RESOURCE_EXHAUSTED : SL_INVALID_ARGUMENT,
                              fmt::format("{}:{}: {}", source.file, where.line, where.message)),
                       std::move(where)};
  }
  ChunkJob job;
  lua_pushcfunction(L, run_chunk);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, &job);
  lua_insert(L, -2);  // run_chunk, job, chunk
  Status status = runtime.pcall(2);
  lua_settop(L, base);
  if (!status.is_ok()) {
    SourceError where = locate(source, status.message());
    if (!split_position(status.message())) {
      status = Status(status.code(),
                      fmt::format("{}:{}: {}", source.file, source.line, status.message()));
    }
    return LoadFailure{std::move(status), std::move(where)};
  }
  return job.ref;
}

struct CallFrame {
  const sl_value* argv;
  uint32_t argc;
  int ref;
  bool expression_form;  // the wrapper takes the argument count first
};

// Protected: converts the arguments, calls the function, leaves its results.
int call_function(lua_State* L) {
  const auto* frame = static_cast<const CallFrame*>(lua_touserdata(L, 1));
  luaL_checkstack(L, static_cast<int>(frame->argc) + 3, "too many arguments");
  lua_rawgeti(L, LUA_REGISTRYINDEX, frame->ref);
  if (frame->expression_form) lua_pushinteger(L, frame->argc);
  for (uint32_t i = 0; i < frame->argc; ++i) push_value(L, frame->argv[i]);
  lua_call(L, static_cast<int>(frame->argc) + (frame->expression_form ? 1 : 0), LUA_MULTRET);
  return lua_gettop(L) - 1;
}

// One protected call over a batch (LuaFunction::call_batch): per element, a
// fresh budget, the call with one result, and its conversion.
struct BatchFrame {
  const sl_value* in;
  size_t count;
  sl_value* out;
  const std::vector<uint8_t>* todo;  // elements to call (null: all)
  int ref;
  bool expression_form;  // the wrapper takes the argument count first
  LuaRuntime* runtime;
  const std::string* where;
  size_t at = 0;  // the element being called
  Status error;   // a result that is no value
};

// Converts the result on top of the stack into out[at]. Not inlined into
// call_batch_function: its C++ objects are gone before the next Lua call,
// which may raise (longjmp).
[[gnu::noinline]] bool store_result(lua_State* L, BatchFrame& frame) noexcept {
  try {
    auto value = to_value(L, -1);
    if (!value.is_ok()) {
      frame.error = Status(value.status().code(),
                           fmt::format("Lua: {}: the function's result is not a value: {}",
                                       *frame.where, value.status().message()));
      return false;
    }
    frame.out[frame.at] = std::move(value).value().release();
    return true;
  } catch (...) {  // bad_alloc: nothing may unwind through Lua's C frames
    frame.error = Status(SL_RESOURCE_EXHAUSTED, "Lua: out of memory converting a value");
    return false;
  }
}

// Protected: calls the function on each element of the batch.
int call_batch_function(lua_State* L) {
  auto* frame = static_cast<BatchFrame*>(lua_touserdata(L, 1));
  luaL_checkstack(L, 4, "too many arguments");
  lua_rawgeti(L, LUA_REGISTRYINDEX, frame->ref);  // 2
  for (; frame->at < frame->count; ++frame->at) {
    if (frame->todo != nullptr && (*frame->todo)[frame->at] == 0) continue;
    frame->runtime->begin_element();
    lua_pushvalue(L, 2);
    if (frame->expression_form) lua_pushinteger(L, 1);
    push_value(L, frame->in[frame->at]);
    lua_call(L, frame->expression_form ? 2 : 1, 1);
    const bool stored = store_result(L, *frame);
    lua_settop(L, 2);
    if (!stored) return 0;
  }
  return 0;
}

}  // namespace

Classified classify(std::string_view code) {
  const size_t i = skip_blank(code, 0);
  if (i >= code.size()) return {LuaForm::expression, true};
  const std::string_view word = name_at(code, i);
  if (word == "function") {
    const size_t next = skip_blank(code, i + word.size());
    const bool anonymous = next < code.size() && code[next] == '(';
    return {anonymous ? LuaForm::function : LuaForm::chunk, false};
  }
  for (std::string_view statement :
       {"local", "return", "do", "if", "for", "while", "repeat", "goto"}) {
    if (word == statement) return {LuaForm::chunk, false};
  }
  if (code.substr(i, 2) == "::") return {LuaForm::chunk, false};  // a label
  return {LuaForm::expression, false};
}

std::optional<SourceError> check_source(LuaRuntime& runtime, const LuaSource& source) {
  auto loaded = load(runtime, source);
  if (auto* failure = std::get_if<LoadFailure>(&loaded)) return std::move(failure->where);
  if (auto state = runtime.state(); state.is_ok()) {
    luaL_unref(*state, LUA_REGISTRYINDEX, std::get<int>(loaded));
  }
  return std::nullopt;
}

Value lua_spec(const LuaSource& source) {
  std::vector<std::pair<std::string, Value>> entries{{"lua", Value::string(source.code)},
                                                     {"file", Value::string(source.file)},
                                                     {"line", Value::integer(source.line)}};
  return Value::object(entries);
}

std::optional<LuaSource> lua_source_of(const Value& spec) {
  if (!spec.is_object()) return std::nullopt;
  auto code = spec.get("lua");
  if (!code || !code->is_string()) return std::nullopt;
  LuaSource source;
  source.code = std::string(code->as_str());
  if (auto file = spec.get("file"); file && file->is_string()) source.file = file->as_str();
  if (auto line = spec.get("line"); line && line->is_int()) source.line = line->as_int();
  return source;
}

bool fast_path_enabled() {
  const char* value = std::getenv(k_fast_path_env);
  if (value == nullptr) return true;
  const std::string_view v = value;
  return !(v == "0" || v == "off" || v == "false" || v == "no");
}

Result<std::unique_ptr<LuaFunction>> LuaFunction::compile(LuaRuntime& runtime,
                                                          const LuaSource& source,
                                                          bool allow_native) {
  auto loaded = load(runtime, source);
  if (auto* failure = std::get_if<LoadFailure>(&loaded)) {
    return Status(failure->status.code(), "Lua: " + failure->status.message());
  }
  std::unique_ptr<LuaFunction> fn(new LuaFunction(runtime, std::get<int>(loaded),
                                                  fmt::format("{}:{}", source.file, source.line)));
  // Lua compiled the code, so the native compiler sees valid Lua only.
  const Classified kind = classify(source.code);
  fn->expression_form_ = kind.form == LuaForm::expression;
  if (!allow_native) {
    fn->native_reason_ = "the fast path is off for this function";
  } else if (!fast_path_enabled()) {
    fn->native_reason_ = fmt::format("{}={}", k_fast_path_env, std::getenv(k_fast_path_env));
  } else if (kind.form == LuaForm::chunk) {
    fn->native_reason_ = "code with statements";
  } else {
    auto native = NativeExpression::compile(source.code, kind.form == LuaForm::function);
    if (auto* expression = std::get_if<NativeExpression>(&native)) {
      fn->native_ = std::move(*expression);
    } else {
      fn->native_reason_ = std::get<std::string>(native);
    }
  }
  return fn;
}

LuaFunction::~LuaFunction() {
  // luaL_unref only writes slots the registry already has: it cannot raise.
  if (auto state = runtime_.state(); state.is_ok()) luaL_unref(*state, LUA_REGISTRYINDEX, ref_);
}

Result<Value> LuaFunction::call(const sl_value* argv, uint32_t argc) {
  if (native_) {
    if (auto value = native_->evaluate(argv, argc)) {
      ++native_calls_;
      return std::move(*value);
    }
    ++native_fallbacks_;
  }
  return call_lua(argv, argc);
}

Status LuaFunction::call_batch(const sl_value* in, size_t count, sl_value* out) {
  std::fill(out, out + count, sl_null());
  Status status;
  try {
    if (!native_) {
      status = call_lua_batch(in, count, out, nullptr);
    } else {
      todo_.assign(count, 0);
      bool any = false;
      for (size_t i = 0; i < count; ++i) {
        if (auto value = native_->evaluate(&in[i], 1)) {
          out[i] = value->release();
          ++native_calls_;
        } else {
          todo_[i] = 1;
          any = true;
          ++native_fallbacks_;
        }
      }
      if (any) status = call_lua_batch(in, count, out, &todo_);
    }
  } catch (...) {  // bad_alloc: release what was made, then report it
    for (size_t i = 0; i < count; ++i) value_release(std::exchange(out[i], sl_null()));
    throw;
  }
  if (!status.is_ok()) {
    for (size_t i = 0; i < count; ++i) value_release(std::exchange(out[i], sl_null()));
  }
  return status;
}

Status LuaFunction::call_lua_batch(const sl_value* in, size_t count, sl_value* out,
                                   const std::vector<uint8_t>* todo) {
  auto state = runtime_.state();
  if (!state.is_ok()) return state.status();
  lua_State* L = *state;
  if (!lua_checkstack(L, 4)) return Status(SL_RESOURCE_EXHAUSTED, "Lua: stack overflow");
  const int base = lua_gettop(L);
  BatchFrame frame{in, count, out, todo, ref_, expression_form_, &runtime_, &where_, 0, Status()};
  lua_pushcfunction(L, call_batch_function);
  lua_pushlightuserdata(L, &frame);
  Status status = runtime_.pcall(1);
  lua_settop(L, base);
  if (!status.is_ok()) return Status(status.code(), "Lua: " + status.message());
  return std::move(frame.error);
}

Result<Value> LuaFunction::call_lua(const sl_value* argv, uint32_t argc) {
  auto state = runtime_.state();
  if (!state.is_ok()) return state.status();
  lua_State* L = *state;
  if (argc > k_max_args) {
    return Status(SL_INVALID_ARGUMENT,
                  fmt::format("Lua: {}: called with {} arguments; at most {} are supported", where_,
                              argc, k_max_args));
  }
  if (!lua_checkstack(L, 4)) return Status(SL_RESOURCE_EXHAUSTED, "Lua: stack overflow");
  const int base = lua_gettop(L);
  CallFrame frame{argv, argc, ref_, expression_form_};
  lua_pushcfunction(L, call_function);
  lua_pushlightuserdata(L, &frame);
  Status status = runtime_.pcall(1);
  if (!status.is_ok()) return Status(status.code(), "Lua: " + status.message());
  const int results = lua_gettop(L) - base;
  Result<Value> out = Value::null();
  if (results >= 2 && argc == 2) {
    if (results > 2) {
      out = Status(SL_INVALID_ARGUMENT,
                   fmt::format("returned {} values; a function of (acc, x) returns one value "
                               "(the new state) or two (state, emitted)",
                               results));
    } else {
      auto state_value = to_value(L, base + 1);
      auto emitted = to_value(L, base + 2);
      if (!state_value.is_ok()) {
        out = std::move(state_value);
      } else if (!emitted.is_ok()) {
        out = std::move(emitted);
      } else {
        const Value pair[] = {std::move(state_value).value(), std::move(emitted).value()};
        out = Value::array(pair);
      }
    }
  } else if (results >= 1) {
    out = to_value(L, base + 1);
  }
  lua_settop(L, base);
  if (!out.is_ok()) {
    return Status(out.status().code(), fmt::format("Lua: {}: the function's result is not a "
                                                   "value: {}",
                                                   where_, out.status().message()));
  }
  return out;
}

}  // namespace sluice::host::lua
