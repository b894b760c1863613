# Install rules for the service (unit file, example config, docs) and the Debian package
# (`cpack -G DEB` in the build dir). Included from the top-level CMakeLists.txt.
#
# Paths follow the install prefix: `cmake -DCMAKE_INSTALL_PREFIX=/usr` for a distribution
# package (binaries in /usr/bin, plugins in /usr/lib/<multiarch>/sluice/plugins, the unit in
# /lib/systemd/system, the config in /etc/sluice); the default /usr/local prefix gives a
# package that installs under /usr/local (config in /usr/local/etc/sluice), which sluiced
# finds as well because its default plugin dir is compiled from the same prefix.

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_sluice_unit_dir "/lib/systemd/system")
else()
  set(_sluice_unit_dir "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endif()
set(SLUICE_SYSTEMD_UNIT_DIR "${_sluice_unit_dir}" CACHE PATH "Where the systemd unit is installed")
set(SLUICE_CONFIG_DIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/sluice")
set(SLUICE_CONFIG_FILE "${SLUICE_CONFIG_DIR}/sluiced.toml")
set(SLUICE_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}")
set(SLUICE_DOC_DIR "${CMAKE_INSTALL_FULL_DATADIR}/doc/sluice")

configure_file(${PROJECT_SOURCE_DIR}/packaging/sluiced.service.in
               ${PROJECT_BINARY_DIR}/packaging/sluiced.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/sluiced.service
        DESTINATION ${SLUICE_SYSTEMD_UNIT_DIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/sluiced.toml
        DESTINATION ${SLUICE_CONFIG_DIR} COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/docs/OPERATIONS.md ${PROJECT_SOURCE_DIR}/docs/CONFIG.md
        ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/sluice COMPONENT runtime OPTIONAL)

# --- CPack: one .deb with the daemon, the in-tree plugins and the SDK ----------------
set(CPACK_PACKAGE_NAME "sluice")
set(CPACK_PACKAGE_VENDOR "sluice")
set(CPACK_PACKAGE_CONTACT "sluice maintainers <sluice@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_GENERATOR "DEB")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "sluiced runs streaming dataflow graphs (sources, operators, sinks) described in TOML,\n\
with plugins loaded through a stable C ABI. The package holds the daemon, its systemd\n\
unit, the in-tree plugins and the plugin SDK (headers, CMake package, pkg-config file).")
# Shared-library dependencies are computed by dpkg-shlibdeps (libsystemd0, librdkafka1,
# liblua5.4-0, libspdlog, ...); adduser is needed by postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# The config is a conffile: an upgrade keeps the operator's edits.
file(WRITE ${PROJECT_BINARY_DIR}/packaging/conffiles "${SLUICE_CONFIG_FILE}\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm
    ${PROJECT_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
