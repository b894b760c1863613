# User functions in Lua 5.4 (docs/LUA.md): the sandboxed runtime, value
# conversion and compiled functions. Lua stays a private dependency: no host
# header includes lua.h.
pkg_check_modules(LUA REQUIRED IMPORTED_TARGET lua5.4)
target_sources(sluice_host_core PRIVATE
  src/lua/lua_runtime.cc
  src/lua/lua_values.cc
  src/lua/lua_function.cc
  src/lua/lua_patterns.cc
  src/lua/lua_tables.cc
  src/lua/native_expression_parse.cc
  src/lua/native_expression_eval.cc)
# Lua's own matcher, copied with a step counter: it keeps Lua's C style.
set_source_files_properties(src/lua/lua_patterns.cc PROPERTIES
  COMPILE_OPTIONS "-Wno-old-style-cast;-Wno-useless-cast")
target_link_libraries(sluice_host_core PRIVATE PkgConfig::LUA)
