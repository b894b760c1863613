# sluice_add_plugin() for plugins built OUT OF TREE against an installed SDK.
# Installed next to SluiceConfig.cmake and loaded by find_package(Sluice); the in-tree
# build uses cmake/SluicePlugin.cmake instead (same signature, plus the project's warnings).
#
#   find_package(Sluice 1 REQUIRED)
#   sluice_add_plugin(<name> SOURCES <file>... [LIBRARIES <lib>...]
#                     [OUTPUT_DIR <dir>] [INSTALL_DIR <dir> | NO_INSTALL])
#
# Builds lib<name>.so as a MODULE library:
#  - compiled with hidden visibility, and linked with a version script so that only the
#    entry point (SL_EXPORT sluice_plugin_v1) is exported;
#  - linked with -Wl,--no-undefined: a plugin gets everything from the host through the
#    sl_host_api table and must not expect symbols from the sluiced executable;
#  - written to OUTPUT_DIR (default: ${CMAKE_BINARY_DIR}/plugins): point `plugin_dirs` in
#    the pipeline TOML (or SLUICE_PLUGIN_PATH) there. sluiced refuses plugins in a
#    group- or other-writable directory or file, so build with umask 022;
#  - installed to INSTALL_DIR (default: ${CMAKE_INSTALL_LIBDIR}/sluice/plugins under your
#    CMAKE_INSTALL_PREFIX) unless NO_INSTALL.
include_guard(GLOBAL)

function(sluice_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "NO_INSTALL" "OUTPUT_DIR;INSTALL_DIR"
                        "SOURCES;LIBRARIES")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sluice_add_plugin(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "sluice_add_plugin(${name}): SOURCES is required")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${CMAKE_BINARY_DIR}/plugins)
  endif()
  if(NOT ARG_INSTALL_DIR)
    include(GNUInstallDirs) # here, not at load time: the caller has enabled its languages
    set(ARG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/sluice/plugins)
  endif()

  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR})
  target_link_libraries(${name} PRIVATE Sluice::sdk ${ARG_LIBRARIES})
  if(NOT APPLE AND NOT WIN32)
    set(_map "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/sluice_plugin.map")
    target_link_options(${name} PRIVATE -Wl,--no-undefined "-Wl,--version-script=${_map}")
    set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${_map})
  endif()
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION ${ARG_INSTALL_DIR})
  endif()
endfunction()
