#!/usr/bin/env bash
# Configures (Ninja, RelWithDebInfo) and builds sluice with all cores.
#   BUILD_DIR   build tree, default build/ (relative to the repository root)
#   arguments   passed to the CMake configure step, e.g. scripts/build.sh -DSLUICE_SANITIZE=ON
# An existing tree is reconfigured only when arguments are given (the build itself reruns
# CMake when a CMakeLists.txt changed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
build_dir=${BUILD_DIR:-build}

# Plugins must not be group/other-writable, or sluiced refuses them.
umask 022

# ccache (found by CMakeLists.txt): cache keys relative to the checkout, so that CI's fresh
# clone in another folder hits what a developer's build on the same machine left in
# ~/.cache/ccache (or $CCACHE_DIR).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

# The benchmarks are built too, so that their smoke run (ctest label `bench`) keeps them working.
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_BUILD_BENCH=ON "$@"
elif (($# > 0)); then
  cmake -S . -B "$build_dir" "$@"
fi
cmake --build "$build_dir" -j"$(nproc)"
