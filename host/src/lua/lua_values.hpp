// Host values <-> Lua values, without loss (docs/LUA.md "Values"):
//
//   null          <-> sluice.null (nil also converts to null)
//   bool          <-> boolean
//   int           <-> integer (64-bit: 2^53 + 1 stays exact)
//   float         <-> float (3.0 stays a float)
//   string        <-> string (a Lua string that is not valid UTF-8 becomes bytes)
//   bytes          -> string (Lua strings are byte strings); sluice.bytes(s) -> bytes
//   array         <-> table marked sluice.array (an empty array stays an array)
//   object        <-> table marked sluice.object (key order kept; new keys sorted after)
//
// An unmarked table (built by Lua code) is an array when its keys are exactly
// 1..n, an object when they are all strings (keys sorted), an empty array
// when it has none; anything else (mixed keys, holes, float or boolean keys,
// functions, nesting deeper than k_max_depth) is an error.
#pragma once

#include "common/result.hpp"
#include "value/value.hpp"

#include <sluice/sluice.h>

struct lua_State;

namespace sluice::host::lua {

// Deepest nesting converted (a table that contains itself would never end).
inline constexpr int k_max_depth = 200;

// Pushes `v` (borrowed). May raise a Lua error (out of memory, too deep):
// call only inside a protected call, as lua_function.cc does.
void push_value(lua_State* L, sl_value v);

// The value at stack index `index`. Raises no Lua error and leaves the stack
// as it found it.
[[nodiscard]] Result<Value> to_value(lua_State* L, int index);

}  // namespace sluice::host::lua
