#!/usr/bin/env bash
# Builds the Debian package from a built tree and checks it with lintian:
#   scripts/package.sh [BUILD_DIR]      (default: $BUILD_DIR, else build/)
# The tree must be configured for the system's paths (docs/OPERATIONS.md, "Install"):
#   -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc
#   -DSLUICE_SYSTEMD_UNIT_DIR=/lib/systemd/system   (and best -DCMAKE_BUILD_TYPE=Release)
# Writes BUILD_DIR/package/sluice_VERSION-N_ARCH.deb and exits non-zero when cpack fails or
# lintian reports any error or warning (its overrides, each with its reason, are in
# packaging/debian/lintian-overrides).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${1:-${BUILD_DIR:-build}}
umask 022

cache=$build_dir/CMakeCache.txt
[[ -f $cache ]] || { echo "package: $build_dir is not a configured build tree" >&2; exit 2; }
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$cache")
if [[ $prefix != /usr ]]; then
  echo "package: $build_dir installs to '$prefix'; a .deb needs -DCMAKE_INSTALL_PREFIX=/usr" \
       "-DCMAKE_INSTALL_SYSCONFDIR=/etc -DSLUICE_SYSTEMD_UNIT_DIR=/lib/systemd/system" >&2
  exit 2
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
[[ $build_type == Release ]] ||
  echo "package: note: $build_dir is a '$build_type' build; the documented package is Release" >&2

out=$build_dir/package
rm -rf "$out"
mkdir -p "$out"
cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log" >&2; echo "package: cpack failed" >&2; exit 1; }
debs=("$out"/*.deb)
((${#debs[@]} == 1)) && [[ -f ${debs[0]} ]] || { echo "package: no .deb in $out" >&2; exit 1; }
deb=${debs[0]}
echo "package: $deb ($(du -h "$deb" | cut -f1))"

command -v lintian >/dev/null || { echo "package: lintian is not installed (scripts/setup.sh)" >&2; exit 1; }
# --fail-on error,warning: a warning fails as an error does; info and pedantic tags are
# shown but pass. Running as root is fine for a check (lintian warns about it otherwise).
lintian --fail-on error,warning --allow-root --info --display-level '>=warning' "$deb"
echo "package: lintian found no error or warning"
