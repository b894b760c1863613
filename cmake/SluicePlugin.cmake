# sluice_add_plugin(name SOURCES ... [LIBRARIES ...] [OUTPUT_DIR dir] [NO_INSTALL])
#
# Builds one plugin: a MODULE library with hidden visibility (only the entry
# symbol, marked SL_EXPORT, is visible), linked against nothing of the host,
# written to OUTPUT_DIR (default: the build tree's plugin directory) and
# installed to lib/sluice/plugins unless NO_INSTALL.
function(sluice_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${SLUICE_BUILD_PLUGIN_DIR})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR})
  target_link_libraries(${name} PRIVATE Sluice::sdk sluice_warnings ${ARG_LIBRARIES})
  # A plugin must not depend on symbols from the host executable, and exports
  # only its entry point (the version script also hides libstdc++'s unique
  # symbols, which would otherwise keep the library from ever unloading).
  target_link_options(${name} PRIVATE
                      -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/sluice_plugin.map)
  # clang links no sanitizer runtime into shared objects: under SLUICE_FUZZ the __asan_*
  # symbols come from the fuzz executable that loads the plugin.
  if(NOT SLUICE_FUZZ)
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/sluice_plugin.map)
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${name} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/sluice/plugins
            COMPONENT runtime)
  endif()
endfunction()
