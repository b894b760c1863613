#include "lua/lua_tables.hpp"

#include "lua/lua_runtime.hpp"

#include <lua.hpp>

namespace sluice::host::lua {
namespace {

// Strings up to this length compare in constant time, for table.sort.
constexpr size_t k_short_string = 64;

// Calls the original library function (upvalue 1) with this call's arguments.
int call_original(lua_State* L) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

int too_many(lua_State* L, const char* what) {
  return luaL_error(L, "%s: at most %d elements per call in the sandbox", what,
                    static_cast<int>(k_max_elements_per_call));
}

// table.move(a1, f, e, t [, a2]) touches e - f + 1 elements, whatever the
// table holds: `table.move({}, 1, 1e15, 2)` looped for days.
int bounded_move(lua_State* L) {
  int f_ok = 0;
  int e_ok = 0;
  // As luaL_checkinteger reads them: 1e15 (a float) is the integer 10^15.
  const lua_Integer f = lua_tointegerx(L, 2, &f_ok);
  const lua_Integer e = lua_tointegerx(L, 3, &e_ok);
  if (f_ok != 0 && e_ok != 0 && e >= f &&
      static_cast<lua_Unsigned>(e) - static_cast<lua_Unsigned>(f) >=
          static_cast<lua_Unsigned>(k_max_elements_per_call)) {
    return too_many(L, "table.move");
  }
  return call_original(L);
}

// table.insert(t, pos, v) and table.remove(t, pos) shift the elements from
// pos to #t, and #t of a sparse table can be 2^50 (t[1], t[2], t[4], ...
// t[2^50] make a border there).
int check_shift(lua_State* L, const char* what) {
  int pos_ok = 0;
  const lua_Integer pos = lua_tointegerx(L, 2, &pos_ok);
  if (lua_type(L, 1) == LUA_TTABLE && pos_ok != 0) {
    const lua_Integer size = luaL_len(L, 1);  // may run __len: hooked
    if (size > pos && static_cast<lua_Unsigned>(size) - static_cast<lua_Unsigned>(pos) >=
                          static_cast<lua_Unsigned>(k_max_elements_per_call)) {
      return too_many(L, what);
    }
  }
  return 0;
}

int bounded_insert(lua_State* L) {
  if (lua_gettop(L) == 3) check_shift(L, "table.insert");
  return call_original(L);
}

int bounded_remove(lua_State* L) {
  if (lua_gettop(L) >= 2) check_shift(L, "table.remove");
  return call_original(L);
}

// The default order of table.sort, as a C function that charges its work
// (one step per comparison, one per 64 bytes of compared strings): the
// comparisons of the default order run no VM instruction, and a sort of
// 100,000 references to one 30 MB string compares for hours.
int bounded_less(lua_State* L) {
  size_t steps = 1;
  if (lua_type(L, 1) == LUA_TSTRING && lua_type(L, 2) == LUA_TSTRING) {
    steps += (lua_rawlen(L, 1) + lua_rawlen(L, 2)) / 64;
  }
  LuaRuntime::charge_steps(L, steps);
  lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
  return 1;
}

// Whether table.sort's default order needs bounded_less: only a comparison
// of long strings is slow (numbers and short strings compare in constant
// time, and the number of elements is bounded by memory). A table with a
// metatable may be a lazy view of anything: bounded too.
bool needs_bounded_order(lua_State* L) {
  if (lua_type(L, 1) != LUA_TTABLE) return false;  // the original reports it
  if (lua_getmetatable(L, 1) != 0) {
    lua_pop(L, 1);
    return true;
  }
  const lua_Unsigned n = lua_rawlen(L, 1);
  // A sparse border (t[1], t[2], t[4], ... t[2^50]) is no array to scan.
  if (n > static_cast<lua_Unsigned>(k_max_elements_per_call)) return true;
  for (lua_Unsigned i = 1; i <= n; ++i) {
    const bool long_string = lua_rawgeti(L, 1, static_cast<lua_Integer>(i)) == LUA_TSTRING &&
                             lua_rawlen(L, -1) > k_short_string;
    lua_pop(L, 1);
    if (long_string) return true;
  }
  return false;
}

int bounded_sort(lua_State* L) {
  if (lua_isnoneornil(L, 2) && needs_bounded_order(L)) {
    lua_settop(L, 1);
    lua_pushcfunction(L, bounded_less);
  }
  return call_original(L);
}

}  // namespace

void install_bounded_tables(lua_State* L, int table_lib) {
  table_lib = lua_absindex(L, table_lib);
  const luaL_Reg wrappers[] = {{"move", bounded_move},
                               {"insert", bounded_insert},
                               {"remove", bounded_remove},
                               {"sort", bounded_sort}};
  for (const luaL_Reg& w : wrappers) {
    lua_getfield(L, table_lib, w.name);
    lua_pushcclosure(L, w.func, 1);
    lua_setfield(L, table_lib, w.name);
  }
}

}  // namespace sluice::host::lua
