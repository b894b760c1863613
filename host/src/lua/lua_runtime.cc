#include "lua/lua_runtime.hpp"

#include <fmt/format.h>
#include <lua.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace sluice::host::lua {
namespace {

// The count hook runs every k_hook_interval VM instructions.
constexpr int k_hook_interval = 1000;

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

// load(chunk [, chunkname [, mode [, env]]]) with mode forced to "t": binary
// chunks can break the VM's invariants, so only source text loads.
int sandbox_load(lua_State* L) {
  const int n = lua_gettop(L);
  const int nargs = n >= 4 ? 4 : 3;  // keep "env absent" distinct from "env = nil"
  lua_settop(L, nargs);
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L);
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
      tick_budget_(std::max<uint64_t>(1, limits.instructions_per_call / k_hook_interval)) {
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

void LuaRuntime::instruction_hook(lua_State* L, lua_Debug* /*ar*/) {
  LuaRuntime& self = of(L);
  if (++self.ticks_ <= self.tick_budget_) return;
  self.instruction_limit_hit_ = true;
  self.ticks_ = 0;  // the message handler and unwinding may run a few more instructions
  lua_pushfstring(L, "instruction limit exceeded (%d million per call); an endless loop?",
                  static_cast<int>(self.limits_.instructions_per_call / 1'000'000));
  lua_error(L);
}

int LuaRuntime::open_sandbox(lua_State* L) {
  LuaRuntime& self = of(L);
  luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
  luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
  luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
  luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
  luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
  lua_settop(L, 0);

  lua_pushglobaltable(L);  // 1
  for (const char* name : {"dofile", "loadfile", "collectgarbage"}) {
    lua_pushnil(L);
    lua_setfield(L, 1, name);
  }
  lua_getfield(L, 1, "load");
  lua_pushcclosure(L, sandbox_load, 1);
  lua_setfield(L, 1, "load");
  lua_pushcfunction(L, sandbox_print);
  lua_setfield(L, 1, "print");
  lua_getfield(L, 1, LUA_STRLIBNAME);
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
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

Status LuaRuntime::pcall(int nargs) {
  lua_State* L = L_;
  const int fn_index = lua_gettop(L) - nargs;
  lua_pushcfunction(L, message_handler);
  lua_insert(L, fn_index);
  ticks_ = 0;
  instruction_limit_hit_ = false;
  memory_limit_hit_ = false;
  const int rc = lua_pcall(L, nargs, LUA_MULTRET, fn_index);
  if (rc == LUA_OK) {
    lua_remove(L, fn_index);
    return {};
  }
  const char* raw = lua_tostring(L, -1);
  std::string message = raw != nullptr ? raw : "(error object is not a string)";
  lua_settop(L, fn_index - 1);
  if (rc == LUA_ERRMEM || (rc == LUA_ERRERR && memory_limit_hit_)) {
    if (memory_limit_hit_) {
      message = fmt::format("memory limit exceeded ({} MiB per task)", limits_.memory_bytes >> 20);
    }
    return Status(SL_RESOURCE_EXHAUSTED, std::move(message));
  }
  return Status(SL_INVALID_ARGUMENT, std::move(message));
}

}  // namespace sluice::host::lua
