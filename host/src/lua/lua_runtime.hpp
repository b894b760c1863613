// One sandboxed Lua 5.4 state: the engine behind user functions written in
// Lua (docs/LUA.md). A task owns one (Task::lua()), so every call happens on
// the task's thread and nothing here locks.
//
// The sandbox: only the base library (without dofile, loadfile,
// collectgarbage; `load` accepts strings of source text only; `print` logs),
// string (without string.dump), table, math and utf8. No io, os, package,
// debug or coroutine.
//
// Limits: memory is bounded by a counting allocator and every protected call
// by an instruction budget and a wall-time budget, so a user function can
// fail but can neither crash nor hang the task. No limit can be caught:
// pcall and xpcall re-raise it, and once a budget is spent the hook raises
// again every k_hook_interval instructions (in message handlers and __close
// handlers too) until the host's pcall returns. __gc metamethods, which Lua
// runs with hooks off, are refused by setmetatable.
//
// Isolation: the functions compiled into one state share it, but each has
// its own environment (push_function_env) holding copies of the shared
// globals' entries; the libraries among them (string, table, math, utf8,
// sluice) and getmetatable('') are read-only views, so no function can
// change what another sees.
//
// Lua reports errors with longjmp: every Lua API call that can raise runs
// inside pcall() (see lua_function.cc), and no C++ object with a destructor
// lives across such a call.
#pragma once

#include "common/result.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

struct lua_State;
struct lua_Debug;

namespace sluice::host::lua {

// Memory one state may hold (64 MiB): allocations beyond it fail with a
// RESOURCE_EXHAUSTED error of the call that made them.
inline constexpr size_t k_default_memory_bytes = size_t{64} << 20;
// VM instructions one call may run (10 million, roughly 50-100 ms): beyond
// it the call fails. C functions (string.rep, table.concat) count as one
// instruction each, their memory is still bounded; the pattern matcher
// counts its steps (lua_patterns.cc).
inline constexpr uint64_t k_default_instructions = 10'000'000;
// Wall time one call may take (2 s, 20-40 times what the instruction budget
// takes): bounds a loop of expensive library calls (string.rep, plain find
// or == on long strings), each of which counts as one instruction. Checked
// by the same hook (and the pattern matcher's ticks); within the memory
// limit, no library call left in the sandbox runs for more than a few
// seconds on its own.
inline constexpr uint64_t k_default_time_ms = 2'000;

struct Limits {
  size_t memory_bytes = k_default_memory_bytes;
  uint64_t instructions_per_call = k_default_instructions;
  uint64_t time_per_call_ms = k_default_time_ms;
};

// Registry keys (lua_rawgetp(L, LUA_REGISTRYINDEX, &key)) of the sandbox's
// marker objects: the null sentinel, the metatables marking arrays, objects
// and bytes, and the weak table remembering the key order of objects that
// came from the host.
inline constexpr char k_null_key = 0;
inline constexpr char k_array_meta_key = 0;
inline constexpr char k_object_meta_key = 0;
inline constexpr char k_bytes_meta_key = 0;
inline constexpr char k_key_order_key = 0;

class LuaRuntime {
 public:
  explicit LuaRuntime(Limits limits = {});
  ~LuaRuntime();
  LuaRuntime(const LuaRuntime&) = delete;
  LuaRuntime& operator=(const LuaRuntime&) = delete;

  // The sandboxed state, or why it could not be made (out of memory).
  [[nodiscard]] Result<lua_State*> state() const;
  [[nodiscard]] const Limits& limits() const { return limits_; }
  // Bytes currently allocated by the state.
  [[nodiscard]] size_t memory_used() const { return used_; }

  // Protected call of the function at stack index -(nargs + 1) with `nargs`
  // arguments above it, with a fresh instruction budget; results stay on the
  // stack (LUA_MULTRET) on success, nothing on failure. Errors carry the
  // position of the innermost Lua frame (file:line) when the message has
  // none. Codes: INVALID_ARGUMENT for Lua errors and the instruction limit,
  // RESOURCE_EXHAUSTED for the memory limit.
  Status pcall(int nargs);
  // Inside such a call that calls several functions in turn (one per element
  // of a batch): a fresh instruction and time budget for the next one.
  void begin_element();

  // The runtime a state belongs to (stored in the state's extra space).
  static LuaRuntime& of(lua_State* L);

  // Pushes a new environment for one function (its _ENV): the shared
  // globals' entries copied in, `_G` (itself) and `load` (chunks default to
  // this environment); a name the function sets to nil falls back to the
  // shared value. May raise (out of memory): call inside pcall().
  static void push_function_env(lua_State* L);

  // Counts one tick (1,000 VM instructions' worth of work) done inside a
  // library function (the pattern matcher, lua_patterns.cc) against the
  // call's instruction and time budget; raises the limit's error once the
  // budget is spent, as the count hook does.
  static void charge_tick(lua_State* L);
  // The same for `steps` units of work, 1,000 of which make a tick (the
  // default comparison of table.sort, lua_tables.cc).
  static void charge_steps(lua_State* L, size_t steps);

  // Identities of the sandbox's marker objects, compared by lua_topointer /
  // lua_touserdata when converting values (lua_values.cc).
  [[nodiscard]] const void* null_sentinel() const { return null_; }
  [[nodiscard]] const void* array_meta() const { return array_mt_; }
  [[nodiscard]] const void* object_meta() const { return object_mt_; }
  [[nodiscard]] const void* bytes_meta() const { return bytes_mt_; }

 private:
  static void* allocate(void* ud, void* ptr, size_t osize, size_t nsize) noexcept;
  static int open_sandbox(lua_State* L);
  static void instruction_hook(lua_State* L, lua_Debug* ar);
  // One tick of the budget (`ar`: where the limit's message points, or null).
  static void tick(lua_State* L, lua_Debug* ar);
  // Re-raises the error object on top of the stack when the call ran into a
  // limit (`status` from a nested protected call).
  static void rethrow_if_limit(lua_State* L, int status);
  static int sandbox_pcall(lua_State* L);
  static int sandbox_xpcall(lua_State* L);
  static int sandbox_load(lua_State* L);

  Limits limits_;
  lua_State* L_ = nullptr;
  Status init_status_;
  size_t used_ = 0;
  uint64_t ticks_ = 0;             // hook invocations in the current call
  size_t steps_ = 0;               // charge_steps() units not yet charged as a tick
  uint64_t tick_budget_ = 0;       // hook invocations allowed per call
  int64_t time_budget_ns_ = 0;     // wall time allowed per call
  int64_t call_start_ns_ = 0;      // steady clock, when the current call began
  bool limit_hit_ = false;         // the instruction or time limit, in the current call
  bool memory_limit_hit_ = false;  // an allocation was refused (Lua may have recovered)
  bool memory_error_ = false;      // a memory error was raised in the current call
  char limit_message_[160] = "";   // the instruction or time limit's error, with its position
  const void* null_ = nullptr;
  const void* array_mt_ = nullptr;
  const void* object_mt_ = nullptr;
  const void* bytes_mt_ = nullptr;
};

}  // namespace sluice::host::lua
