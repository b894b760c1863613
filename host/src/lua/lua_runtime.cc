#include "lua/lua_runtime.hpp"

#include "lua/lua_patterns.hpp"
#include "lua/lua_tables.hpp"

#include <fmt/format.h>
#include <lua.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>

namespace sluice::host::lua {
namespace {

// The count hook runs every k_hook_interval VM instructions.
constexpr int k_hook_interval = 1000;

// The time budget's clock: the coarse monotonic clock (a few ms of resolution
// against a budget of seconds), read at the start of every call. steady_clock
// cost 10 % of a call of `x % 2 == 0` (perf, issue 20); the coarse one reads
// a value the kernel keeps, without the TSC.
int64_t steady_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// print(...) writes to the log (info level), not to the daemon's stdout.
int sandbox_print(lua_State* L) {
  const int n = lua_gettop(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; ++i) {
    if (i > 1) luaL_addchar(&b, '\t');
    luaL_tolstring(L, i, nullptr);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  size_t len = 0;
  const char* text = lua_tolstring(L, -1, &len);
  // No Lua call follows, so no longjmp can skip a destructor from here on.
  try {
    spdlog::info("lua print: {}", std::string_view(text, len));
  } catch (...) {  // logging must not take the task down
  }
  return 0;
}

// Registry keys private to this file: the metatable every function's
// environment shares, and the marker a read-only view's metatable carries.
constexpr char k_env_meta_key = 0;
constexpr char k_readonly_key = 0;

// setmetatable(t, mt) as Lua's, but a metatable with a __gc field is refused:
// Lua 5.4 runs finalizers with hooks off, so a looping __gc would run outside
// the instruction limit (during any allocation, or when the state closes at
// validation or at the end of a task). Lua marks an object for finalization
// only when its metatable has __gc at setmetatable time, so refusing here is
// enough: a __gc added to the metatable later is never called.
int sandbox_setmetatable(lua_State* L) {
  const int t = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (t == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL) {
      return luaL_error(L,
                        "setmetatable: __gc metamethods are not allowed in the sandbox (a "
                        "finalizer runs outside the instruction limit)");
    }
    lua_pop(L, 1);
  }
  if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL) {
    return luaL_error(L, "cannot change a protected metatable");
  }
  lua_settop(L, 2);
  lua_setmetatable(L, 1);
  return 1;
}

// Whether the table at `index` is a read-only view (its real metatable, not
// the one getmetatable() answers, carries k_readonly_key).
bool is_readonly(lua_State* L, int index) {
  if (lua_getmetatable(L, index) == 0) return false;
  const bool marked = lua_rawgetp(L, -1, &k_readonly_key) != LUA_TNIL;
  lua_pop(L, 2);
  return marked;
}

// rawset(t, k, v) as Lua's, refused on read-only views: a raw write would
// land in the view itself, which every function of the task shares.
int sandbox_rawset(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checkany(L, 2);
  luaL_checkany(L, 3);
  if (is_readonly(L, 1)) {
    return luaL_error(L,
                      "rawset: the table is a read-only library, shared by every function "
                      "of the task");
  }
  lua_settop(L, 3);
  lua_rawset(L, 1);
  return 1;
}

// __newindex of a read-only view; upvalue 1 is the library's name.
int readonly_newindex(lua_State* L) {
  const char* library = lua_tostring(L, lua_upvalueindex(1));
  if (lua_type(L, 2) == LUA_TSTRING) {
    return luaL_error(L,
                      "cannot assign %s.%s: the library is read-only (shared by every function "
                      "of the task); use a local variable instead",
                      library, lua_tostring(L, 2));
  }
  return luaL_error(L,
                    "cannot assign to %s: the library is read-only (shared by every function of "
                    "the task); use a local variable instead",
                    library);
}

// next() over the table behind a read-only view (argument 1), which is never
// handed out: __pairs returns this function and the view itself.
int readonly_next(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  // The function escapes (`local next_ = pairs(string)`): on any other table
  // it would walk the hidden __index of a protected metatable (the shared
  // globals behind an environment).
  if (!is_readonly(L, 1)) return luaL_argerror(L, 1, "not a read-only library");
  lua_settop(L, 2);
  if (lua_getmetatable(L, 1) == 0 || lua_getfield(L, -1, "__index") != LUA_TTABLE) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushvalue(L, 2);
  if (lua_next(L, -2) == 0) {
    lua_pushnil(L);
    return 1;
  }
  return 2;
}

int readonly_pairs(lua_State* L) {
  lua_pushcfunction(L, readonly_next);
  lua_pushvalue(L, 1);
  lua_pushnil(L);
  return 3;
}

// Pushes a read-only view of the table at `real`: an empty table whose reads
// fall through to `real` (no C call on the way: __index is a table) and whose
// writes raise an error naming `name`. getmetatable() on it answers
// "sluice.readonly", so its metatable cannot be reached or replaced.
void push_readonly(lua_State* L, int real, const char* name) {
  real = lua_absindex(L, real);
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 5);
  lua_pushvalue(L, real);
  lua_setfield(L, -2, "__index");
  lua_pushstring(L, name);
  lua_pushcclosure(L, readonly_newindex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pushcfunction(L, readonly_pairs);
  lua_setfield(L, -2, "__pairs");
  lua_pushliteral(L, "sluice.readonly");
  lua_setfield(L, -2, "__metatable");
  lua_pushboolean(L, 1);
  lua_rawsetp(L, -2, &k_readonly_key);
  lua_setmetatable(L, -2);
}

int null_tostring(lua_State* L) {
  lua_pushliteral(L, "null");
  return 1;
}

int bytes_tostring(lua_State* L) {
  auto* data = static_cast<const char*>(lua_touserdata(L, 1));
  lua_pushlstring(L, data, lua_rawlen(L, 1));
  return 1;
}

int bytes_len(lua_State* L) {
  lua_pushinteger(L, static_cast<lua_Integer>(lua_rawlen(L, 1)));
  return 1;
}

// sluice.array(t) / sluice.object(t): marks (and returns) t, or a new empty table.
int mark_table(lua_State* L, const char* key, const char* what) {
  if (lua_isnoneornil(L, 1)) {
    lua_settop(L, 0);
    lua_newtable(L);
  }
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (lua_getmetatable(L, 1)) {
    const void* mt = lua_topointer(L, -1);
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &k_array_meta_key);
    const bool ours = mt == lua_topointer(L, -1);
    lua_pop(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &k_object_meta_key);
    const bool ours_too = mt == lua_topointer(L, -1);
    lua_pop(L, 1);
    if (!ours && !ours_too)
      return luaL_error(L, "sluice.%s: the table already has a metatable", what);
  }
  lua_rawgetp(L, LUA_REGISTRYINDEX, key);
  lua_setmetatable(L, 1);
  return 1;
}

int sluice_array(lua_State* L) { return mark_table(L, &k_array_meta_key, "array"); }
int sluice_object(lua_State* L) { return mark_table(L, &k_object_meta_key, "object"); }

// sluice.bytes(s): a value that becomes bytes (not a string) when returned.
int sluice_bytes(lua_State* L) {
  size_t len = 0;
  const char* s = luaL_checklstring(L, 1, &len);
  void* data = lua_newuserdatauv(L, len, 0);
  if (len > 0) std::memcpy(data, s, len);
  lua_rawgetp(L, LUA_REGISTRYINDEX, &k_bytes_meta_key);
  lua_setmetatable(L, -2);
  return 1;
}

// A protected metatable named `name`, left on the stack and stored under `key`.
void new_marker_meta(lua_State* L, const void* key, const char* name) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__name");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__metatable");  // getmetatable() answers the name; setmetatable refuses
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

// The message handler of every pcall: makes the message a string and gives it
// the position (chunk:line) of the innermost Lua frame when it has none, as
// errors raised by C functions (string.rep, error(x, 0)) do.
int message_handler(lua_State* L) {
  if (lua_type(L, 1) != LUA_TSTRING) {
    if (lua_type(L, 1) == LUA_TNUMBER) {
      lua_pushstring(L, lua_tostring(L, 1));
    } else if (luaL_getmetafield(L, 1, "__tostring") != LUA_TNIL) {
      lua_pop(L, 1);
      luaL_tolstring(L, 1, nullptr);
    } else {
      lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    lua_replace(L, 1);
  }
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar) != 0; ++level) {
    lua_getinfo(L, "Sl", &ar);
    if (ar.currentline <= 0) continue;
    const char* msg = lua_tostring(L, 1);
    const size_t src_len = std::strlen(ar.short_src);
    const bool positioned = std::strncmp(msg, ar.short_src, src_len) == 0 && msg[src_len] == ':';
    if (!positioned) lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
    return 1;
  }
  lua_settop(L, 1);
  return 1;
}

}  // namespace

LuaRuntime::LuaRuntime(Limits limits)
    : limits_(limits),
      tick_budget_(std::max<uint64_t>(1, limits.instructions_per_call / k_hook_interval)),
      time_budget_ns_(static_cast<int64_t>(
          std::min<uint64_t>(limits.time_per_call_ms, uint64_t{1} << 40) * 1'000'000)) {
  L_ = lua_newstate(&LuaRuntime::allocate, this);
  if (L_ == nullptr) {
    init_status_ = Status(SL_RESOURCE_EXHAUSTED, "could not create a Lua state (out of memory)");
    return;
  }
  *static_cast<LuaRuntime**>(lua_getextraspace(L_)) = this;
  lua_pushcfunction(L_, &LuaRuntime::open_sandbox);
  if (lua_pcall(L_, 0, 0, 0) != LUA_OK) {
    const char* msg = lua_tostring(L_, -1);
    init_status_ = Status(SL_RESOURCE_EXHAUSTED,
                          std::string("could not set up the Lua sandbox: ") + (msg ? msg : "?"));
    lua_close(L_);
    L_ = nullptr;
    return;
  }
  lua_sethook(L_, &LuaRuntime::instruction_hook, LUA_MASKCOUNT, k_hook_interval);
}

LuaRuntime::~LuaRuntime() {
  if (L_ != nullptr) lua_close(L_);
}

Result<lua_State*> LuaRuntime::state() const {
  if (L_ == nullptr) return init_status_;
  return L_;
}

LuaRuntime& LuaRuntime::of(lua_State* L) {
  return **static_cast<LuaRuntime**>(lua_getextraspace(L));
}

void* LuaRuntime::allocate(void* ud, void* ptr, size_t osize, size_t nsize) noexcept {
  auto* self = static_cast<LuaRuntime*>(ud);
  // For a new block Lua passes a type tag in osize, not a size.
  const size_t old_size = ptr != nullptr ? osize : 0;
  if (nsize == 0) {
    std::free(ptr);
    self->used_ -= old_size;
    return nullptr;
  }
  // Growing past the limit fails (Lua then collects garbage and retries once
  // before raising "not enough memory"); shrinking must never fail.
  if (nsize > old_size && self->used_ - old_size + nsize > self->limits_.memory_bytes) {
    self->memory_limit_hit_ = true;
    return nullptr;
  }
  void* p = std::realloc(ptr, nsize);
  if (p == nullptr) return nsize <= old_size ? ptr : nullptr;
  self->used_ = self->used_ - old_size + nsize;
  return p;
}

void LuaRuntime::instruction_hook(lua_State* L, lua_Debug* ar) { tick(L, ar); }

void LuaRuntime::charge_tick(lua_State* L) {
  lua_Debug ar;
  // Level 1: the Lua function that called the library function.
  tick(L, lua_getstack(L, 1, &ar) != 0 ? &ar : nullptr);
}

void LuaRuntime::charge_steps(lua_State* L, size_t steps) {
  LuaRuntime& self = of(L);
  self.steps_ += steps;
  if (self.steps_ < 1000) return;
  // Ticks beyond the budget change nothing: charge at most one past it.
  const uint64_t ticks = self.steps_ / 1000;
  self.steps_ %= 1000;
  if (ticks > 1) self.ticks_ += std::min<uint64_t>(ticks - 1, self.tick_budget_);
  charge_tick(L);
}

void LuaRuntime::tick(lua_State* L, lua_Debug* ar) {
  LuaRuntime& self = of(L);
  // Once a budget is spent, every later tick raises again until the host's
  // pcall returns: a pcall, an xpcall message handler or a __close handler
  // that catches the error only buys itself another k_hook_interval
  // instructions (and sandbox_pcall re-raises at once).
  if (!self.limit_hit_) {
    const bool instructions = ++self.ticks_ > self.tick_budget_;
    if (!instructions && steady_ns() - self.call_start_ns_ <= self.time_budget_ns_) return;
    self.limit_hit_ = true;
    char where[LUA_IDSIZE + 24] = "";
    if (ar != nullptr && lua_getinfo(L, "Sl", ar) != 0 && ar->currentline > 0) {
      std::snprintf(where, sizeof where, "%s:%d: ", ar->short_src, ar->currentline);
    }
    if (instructions) {
      std::snprintf(self.limit_message_, sizeof self.limit_message_,
                    "%sinstruction limit exceeded (%d million per call); an endless loop?", where,
                    static_cast<int>(self.limits_.instructions_per_call / 1'000'000));
    } else {
      std::snprintf(self.limit_message_, sizeof self.limit_message_,
                    "%stime limit exceeded (%llu ms per call); expensive library calls in a loop?",
                    where, static_cast<unsigned long long>(self.limits_.time_per_call_ms));
    }
  }
  lua_pushstring(L, self.limit_message_);
  lua_error(L);
}

void LuaRuntime::rethrow_if_limit(lua_State* L, int status) {
  LuaRuntime& self = of(L);
  if (status == LUA_ERRMEM) self.memory_error_ = true;
  if (self.limit_hit_ || self.memory_error_) lua_error(L);  // the error object on top
}

// pcall(f, ...) as Lua's, except that the instruction, time and memory limits pass
// through: they end the host's call, whatever the function catches.
int LuaRuntime::sandbox_pcall(lua_State* L) {
  luaL_checkany(L, 1);
  const int status = lua_pcall(L, lua_gettop(L) - 1, LUA_MULTRET, 0);
  if (status != LUA_OK) {
    rethrow_if_limit(L, status);
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
  }
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  return lua_gettop(L);
}

// xpcall(f, msgh, ...) likewise, but msgh runs after the stack unwound, as a
// plain call, rather than as Lua's message handler: an error raised by the
// count hook calls the message handler from inside the hook, where hooks are
// off, so a looping handler would never be stopped. Without the debug
// library a handler cannot inspect the stack, so only its errors differ:
// xpcall returns false and the handler's own error.
int LuaRuntime::sandbox_xpcall(lua_State* L) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_rotate(L, 1, 1);  // msgh, f, msgh, args
  lua_remove(L, 3);     // msgh, f, args
  int status = lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0);
  if (status == LUA_OK) {
    lua_pushboolean(L, 1);
    lua_replace(L, 1);
    return lua_gettop(L);
  }
  rethrow_if_limit(L, status);
  lua_pushvalue(L, 1);
  lua_insert(L, -2);  // msgh, msgh, error
  status = lua_pcall(L, 1, 1, 0);
  if (status != LUA_OK) rethrow_if_limit(L, status);
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

// load(chunk [, chunkname [, mode [, env]]]) for source text only: a binary
// chunk can break the VM's invariants (mode is always "t"), and a reader
// function would run inside the parser's protected call, where the limits
// could be caught. Without `env` the chunk gets the environment of the
// function that owns this `load` (upvalue 1), not the shared globals.
int LuaRuntime::sandbox_load(lua_State* L) {
  if (lua_type(L, 1) != LUA_TSTRING) {
    return luaL_error(L, "load: the sandbox loads a string of source text only, not a %s",
                      luaL_typename(L, 1));
  }
  size_t len = 0;
  const char* text = lua_tolstring(L, 1, &len);
  const char* chunkname = luaL_optstring(L, 2, text);
  const bool has_env = !lua_isnone(L, 4);
  const int status = luaL_loadbufferx(L, text, len, chunkname, "t");
  if (status != LUA_OK) {
    rethrow_if_limit(L, status);
    luaL_pushfail(L);
    lua_insert(L, -2);
    return 2;
  }
  lua_pushvalue(L, has_env ? 4 : lua_upvalueindex(1));
  if (lua_setupvalue(L, -2, 1) == nullptr) lua_pop(L, 1);
  return 1;
}

void LuaRuntime::push_function_env(lua_State* L) {
  // The shared globals are copied in (a few dozen references: the base
  // functions and the library views), so a global read is one table lookup,
  // as fast as before the libraries became views. A name the function
  // assigns nil falls back to the shared value through __index.
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  lua_createtable(L, 0, 48);
  lua_pushnil(L);
  while (lua_next(L, -3) != 0) {
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, -4);
  }
  lua_remove(L, -2);
  lua_pushvalue(L, -1);
  lua_setfield(L, -2, "_G");
  lua_pushvalue(L, -1);
  lua_pushcclosure(L, &LuaRuntime::sandbox_load, 1);
  lua_setfield(L, -2, "load");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &k_env_meta_key);
  lua_setmetatable(L, -2);
}

int LuaRuntime::open_sandbox(lua_State* L) {
  LuaRuntime& self = of(L);
  luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
  luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
  lua_settop(L, 0);

  // The shared globals: no function ever holds this table (each has its own
  // environment, whose reads fall through to it), so only the libraries in
  // it, which a function can reach, need read-only views.
  lua_pushglobaltable(L);  // 1
  // _G and load are per function (push_function_env).
  for (const char* name : {"dofile", "loadfile", "collectgarbage", "load", "_G"}) {
    lua_pushnil(L);
    lua_setfield(L, 1, name);
  }
  lua_pushcfunction(L, sandbox_print);
  lua_setfield(L, 1, "print");
  lua_pushcfunction(L, &LuaRuntime::sandbox_pcall);
  lua_setfield(L, 1, "pcall");
  lua_pushcfunction(L, &LuaRuntime::sandbox_xpcall);
  lua_setfield(L, 1, "xpcall");
  lua_pushcfunction(L, sandbox_setmetatable);
  lua_setfield(L, 1, "setmetatable");
  lua_pushcfunction(L, sandbox_rawset);
  lua_setfield(L, 1, "rawset");
  lua_getfield(L, 1, LUA_STRLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  install_bounded_patterns(L, -1);  // the string metatable's __index is this table too
  lua_pop(L, 1);
  lua_getfield(L, 1, LUA_TABLIBNAME);
  install_bounded_tables(L, -1);
  lua_pop(L, 1);

  // The sluice table: null, array(), object(), bytes().
  lua_createtable(L, 0, 4);  // 2
  new_marker_meta(L, &k_null_key, "sluice.null");
  lua_pushcfunction(L, null_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_newuserdatauv(L, 0, 0);
  lua_pushvalue(L, -2);
  lua_setmetatable(L, -2);
  self.null_ = lua_touserdata(L, -1);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &k_null_key);
  lua_setfield(L, 2, "null");
  lua_pop(L, 1);

  new_marker_meta(L, &k_array_meta_key, "sluice.array");
  self.array_mt_ = lua_topointer(L, -1);
  lua_pop(L, 1);
  new_marker_meta(L, &k_object_meta_key, "sluice.object");
  self.object_mt_ = lua_topointer(L, -1);
  lua_pop(L, 1);
  new_marker_meta(L, &k_bytes_meta_key, "sluice.bytes");
  lua_pushcfunction(L, bytes_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, bytes_len);
  lua_setfield(L, -2, "__len");
  self.bytes_mt_ = lua_topointer(L, -1);
  lua_pop(L, 1);

  lua_pushcfunction(L, sluice_array);
  lua_setfield(L, 2, "array");
  lua_pushcfunction(L, sluice_object);
  lua_setfield(L, 2, "object");
  lua_pushcfunction(L, sluice_bytes);
  lua_setfield(L, 2, "bytes");
  lua_setfield(L, 1, "sluice");

  // The libraries a function reaches are read-only views, so that no
  // function can change what another sees (docs/LUA.md, "The sandbox").
  for (const char* name :
       {LUA_STRLIBNAME, LUA_TABLIBNAME, LUA_MATHLIBNAME, LUA_UTF8LIBNAME, "sluice"}) {
    lua_getfield(L, 1, name);
    push_readonly(L, -1, name);
    lua_setfield(L, 1, name);
    lua_pop(L, 1);
  }
  // The string metatable stays the real one, whose __index is the real string
  // table (method calls as fast as before), but getmetatable('') answers a
  // read-only view of { __index = <the string view> }.
  lua_pushliteral(L, "");
  lua_getmetatable(L, -1);  // 2: "", 3: the string metatable
  lua_createtable(L, 0, 1);
  lua_getfield(L, 1, LUA_STRLIBNAME);
  lua_setfield(L, -2, "__index");
  push_readonly(L, -1, "getmetatable('')");
  lua_setfield(L, 3, "__metatable");
  lua_settop(L, 1);

  // What every function's environment shares as its metatable: reads fall
  // through to the globals; getmetatable(_ENV) does not hand them out.
  lua_createtable(L, 0, 2);
  lua_pushvalue(L, 1);
  lua_setfield(L, -2, "__index");
  lua_pushliteral(L, "sluice.env");
  lua_setfield(L, -2, "__metatable");
  lua_rawsetp(L, LUA_REGISTRYINDEX, &k_env_meta_key);

  // Objects from the host remember their key order here (weak keys), so a
  // table passed through or edited keeps the order the user saw.
  lua_createtable(L, 0, 0);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &k_key_order_key);
  lua_settop(L, 0);
  return 0;
}

void LuaRuntime::begin_element() {
  ticks_ = 0;
  steps_ = 0;
  call_start_ns_ = steady_ns();
}

Status LuaRuntime::pcall(int nargs) {
  lua_State* L = L_;
  const int fn_index = lua_gettop(L) - nargs;
  lua_pushcfunction(L, message_handler);
  lua_insert(L, fn_index);
  ticks_ = 0;
  steps_ = 0;
  call_start_ns_ = steady_ns();
  limit_hit_ = false;
  memory_limit_hit_ = false;
  memory_error_ = false;
  const int rc = lua_pcall(L, nargs, LUA_MULTRET, fn_index);
  if (rc == LUA_OK) {
    lua_remove(L, fn_index);
    return {};
  }
  const char* raw = lua_tostring(L, -1);
  std::string message = raw != nullptr ? raw : "(error object is not a string)";
  lua_settop(L, fn_index - 1);
  if (limit_hit_) {
    // The hook's own message: what reached here may be a later re-raise or
    // Lua's "error in error handling" from a handler the hook interrupted.
    return Status(SL_INVALID_ARGUMENT, limit_message_);
  }
  if (rc == LUA_ERRMEM || memory_error_ || (rc == LUA_ERRERR && memory_limit_hit_)) {
    if (memory_limit_hit_) {
      message = fmt::format("memory limit exceeded ({} MiB per task)", limits_.memory_bytes >> 20);
    }
    return Status(SL_RESOURCE_EXHAUSTED, std::move(message));
  }
  return Status(SL_INVALID_ARGUMENT, std::move(message));
}

}  // namespace sluice::host::lua
