// string.find, string.match, string.gmatch and string.gsub whose matcher
// counts its steps against the call's instruction and time budget
// (lua_patterns.cc: Lua 5.4.4's own matcher with a step counter).
#pragma once

struct lua_State;

namespace sluice::host::lua {

// Replaces find, match, gmatch and gsub in the string table at `string_table`.
// May raise (out of memory): call inside a protected call.
void install_bounded_patterns(lua_State* L, int string_table);

}  // namespace sluice::host::lua
