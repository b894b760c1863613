# Install rules for the service (unit file, example config, docs) and the Debian package
# (`cpack -G DEB` in the build dir). Included from the top-level CMakeLists.txt.
#
# Every destination is relative to the install prefix (GNUInstallDirs), so that
# `cmake --install build --prefix P` writes only under P:
#   P/bin/sluiced, P/<libdir>/sluice/plugins/, P/lib/systemd/system/sluiced.service,
#   P/etc/sluice/sluiced.toml, P/share/doc/sluice/ (docs and example plugin sources).
# A distribution package passes absolute directories where the system wants them, e.g.
#   cmake -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc \
#         -DSLUICE_SYSTEMD_UNIT_DIR=/lib/systemd/system ...
# The unit file names the installed sluiced and config: it is written at install time, from
# the prefix actually installed to. sluiced finds its plugins relative to its own executable
# (registry/plugin_loader.cc), so a prefix chosen at install time works as well.

set(SLUICE_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "Where the systemd unit is installed (relative to the prefix, or absolute)")
# Build trees configured before the unit dir became relative cached the absolute
# PREFIX/lib/systemd/system, which `--prefix P` would not follow.
if(SLUICE_SYSTEMD_UNIT_DIR STREQUAL "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
  set_property(CACHE SLUICE_SYSTEMD_UNIT_DIR PROPERTY VALUE "lib/systemd/system")
endif()
set(SLUICE_CONFIG_DIR "${CMAKE_INSTALL_SYSCONFDIR}/sluice")
set(SLUICE_DOC_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/doc/sluice")

# PREFIX/DIR, or DIR when it is absolute: where a destination ends up for a prefix.
function(_sluice_full_path out prefix dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
# The paths for the configured prefix: the build tree's unit file (tests/service checks it)
# and the package's conffile.
_sluice_full_path(SLUICE_BINDIR "${CMAKE_INSTALL_PREFIX}" "${CMAKE_INSTALL_BINDIR}")
_sluice_full_path(_sluice_config_full "${CMAKE_INSTALL_PREFIX}" "${SLUICE_CONFIG_DIR}")
_sluice_full_path(SLUICE_DOC_DIR "${CMAKE_INSTALL_PREFIX}" "${SLUICE_DOC_INSTALL_DIR}")
_sluice_full_path(SLUICE_SYSTEMD_UNIT_FULL_DIR "${CMAKE_INSTALL_PREFIX}" "${SLUICE_SYSTEMD_UNIT_DIR}")
set(SLUICE_CONFIG_FILE "${_sluice_config_full}/sluiced.toml")
configure_file(${PROJECT_SOURCE_DIR}/packaging/sluiced.service.in
               ${PROJECT_BINARY_DIR}/packaging/sluiced.service @ONLY)
# At install time: the same file for the prefix installed to (`--prefix` may differ).
install(CODE "
  function(_sluice_full_path out prefix dir)
    if(IS_ABSOLUTE \"\${dir}\")
      set(\${out} \"\${dir}\" PARENT_SCOPE)
    else()
      set(\${out} \"\${prefix}/\${dir}\" PARENT_SCOPE)
    endif()
  endfunction()
  _sluice_full_path(SLUICE_BINDIR \"\${CMAKE_INSTALL_PREFIX}\" \"${CMAKE_INSTALL_BINDIR}\")
  _sluice_full_path(_config_dir \"\${CMAKE_INSTALL_PREFIX}\" \"${SLUICE_CONFIG_DIR}\")
  _sluice_full_path(SLUICE_DOC_DIR \"\${CMAKE_INSTALL_PREFIX}\" \"${SLUICE_DOC_INSTALL_DIR}\")
  _sluice_full_path(_unit_dir \"\${CMAKE_INSTALL_PREFIX}\" \"${SLUICE_SYSTEMD_UNIT_DIR}\")
  set(SLUICE_CONFIG_FILE \"\${_config_dir}/sluiced.toml\")
  configure_file(\"${PROJECT_SOURCE_DIR}/packaging/sluiced.service.in\"
                 \"${PROJECT_BINARY_DIR}/packaging/install/sluiced.service\" @ONLY)
  file(INSTALL DESTINATION \"\${_unit_dir}\" TYPE FILE
       FILES \"${PROJECT_BINARY_DIR}/packaging/install/sluiced.service\")
  " COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/sluiced.toml
        DESTINATION ${SLUICE_CONFIG_DIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/docs/OPERATIONS.md ${PROJECT_SOURCE_DIR}/docs/CONFIG.md
        ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${SLUICE_DOC_INSTALL_DIR} COMPONENT runtime)
# What a plugin author needs goes with the SDK (component `sdk`, docs/PLUGIN_GUIDE.md):
# the guides and the example plugins' sources, which build against the installed SDK.
install(FILES ${PROJECT_SOURCE_DIR}/docs/PLUGIN_GUIDE.md ${PROJECT_SOURCE_DIR}/docs/CHECKPOINTING.md
        ${PROJECT_SOURCE_DIR}/docs/TESTING.md
        DESTINATION ${SLUICE_DOC_INSTALL_DIR} COMPONENT sdk)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/third_party_plugin/
        DESTINATION ${SLUICE_DOC_INSTALL_DIR}/examples COMPONENT sdk
        PATTERN "build" EXCLUDE)

# --- Debian documentation: copyright, changelog, man pages ----------------------------
# lintian wants /usr/share/doc/<package>/copyright (machine-readable), a
# changelog.Debian.gz and a man page per program in /usr/bin, compressed with gzip -9n
# (no name, no time stamp: the package is reproducible).
set(SLUICE_PACKAGE_MAINTAINER "sluice maintainers <sluice@example.org>" CACHE STRING
    "Maintainer of the .deb (Name <address>), also written in its changelog")
set(SLUICE_DEB_RELEASE "1" CACHE STRING "Debian revision of the .deb (VERSION-RELEASE)")
set(SLUICE_DEB_VERSION "${PROJECT_VERSION}-${SLUICE_DEB_RELEASE}")
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in
               ${PROJECT_BINARY_DIR}/packaging/changelog.Debian @ONLY)
find_program(SLUICE_GZIP gzip REQUIRED)
set(_sluice_gzipped)
foreach(_src IN ITEMS ${PROJECT_BINARY_DIR}/packaging/changelog.Debian
                      ${PROJECT_SOURCE_DIR}/packaging/sluiced.8
                      ${PROJECT_SOURCE_DIR}/packaging/sluice-plugin-check.1)
  get_filename_component(_name ${_src} NAME)
  set(_out ${PROJECT_BINARY_DIR}/packaging/${_name}.gz)
  add_custom_command(OUTPUT ${_out}
                     COMMAND sh -c "\"$0\" -9nc \"$1\" > \"$2\"" ${SLUICE_GZIP} ${_src} ${_out}
                     DEPENDS ${_src} VERBATIM)
  list(APPEND _sluice_gzipped ${_out})
endforeach()
add_custom_target(sluice_package_docs ALL DEPENDS ${_sluice_gzipped})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
        ${PROJECT_BINARY_DIR}/packaging/changelog.Debian.gz
        DESTINATION ${SLUICE_DOC_INSTALL_DIR} COMPONENT runtime)
# lintian overrides, each with its reason in the file (scripts/package.sh fails on any
# other warning).
install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME sluice COMPONENT runtime)
install(FILES ${PROJECT_BINARY_DIR}/packaging/sluiced.8.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT runtime)
install(FILES ${PROJECT_BINARY_DIR}/packaging/sluice-plugin-check.1.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT sdk)

# --- CPack: one .deb with the daemon, the in-tree plugins and the SDK ----------------
set(CPACK_PACKAGE_NAME "sluice")
set(CPACK_PACKAGE_VENDOR "sluice")
set(CPACK_PACKAGE_CONTACT "${SLUICE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SLUICE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE "${SLUICE_DEB_RELEASE}")
# Binaries and plugins go in stripped (debug info would triple the package: lintian's
# unstripped-binary-or-object); a RelWithDebInfo tree keeps its own unstripped copies.
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_GENERATOR "DEB")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
# Lines of at most 80 characters (lintian: extended-description-line-too-long).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "sluiced runs streaming dataflow graphs (sources, operators, sinks) described\n\
in TOML, with plugins loaded through a stable C ABI. The package holds the\n\
daemon, its systemd unit, the in-tree plugins and the plugin SDK (headers,\n\
CMake package, pkg-config file).")
# Shared-library dependencies are computed by dpkg-shlibdeps (libsystemd0, librdkafka1,
# liblua5.4-0, libspdlog, ...); adduser and init-system-helpers (deb-systemd-helper,
# deb-systemd-invoke) are needed by the maintainer scripts.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.54~)")
# The config is a conffile: an upgrade keeps the operator's edits.
file(WRITE ${PROJECT_BINARY_DIR}/packaging/conffiles "${SLUICE_CONFIG_FILE}\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
    ${PROJECT_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
