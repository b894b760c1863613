// table.move, table.insert, table.remove and table.sort bounded for the
// sandbox (lua_tables.cc): Lua runs each as one VM instruction, and each can
// loop far longer than the call's budget on a small table.
#pragma once

struct lua_State;

namespace sluice::host::lua {

// Most elements one table.move, or one positional table.insert / remove,
// may touch (each touch is a table access Lua does not count).
inline constexpr long long k_max_elements_per_call = 1LL << 24;

// Wraps move, insert, remove and sort in the table library at `table_lib`.
// May raise (out of memory): call inside a protected call.
void install_bounded_tables(lua_State* L, int table_lib);

}  // namespace sluice::host::lua
