#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with clang (build tree build-fuzz/, the
# whole host instrumented with ASan+UBSan) and fuzzes each one for SECONDS.
#   scripts/fuzz.sh [SECONDS] [ctest args...]   default 30 s a target, all targets
#   scripts/fuzz.sh 3600 -R fuzz_config         one target for an hour
# Crashing, hanging (> 10 s) or memory-hungry (> 2 GiB) inputs end the run and are written
# to build-fuzz/tests/fuzz/artifacts/; docs/TESTING.md says how to keep one as a
# regression case. CI runs it with the default time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${1:-30}
(($# > 0)) && shift
umask 022
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

scripts/setup.sh  # clang and libFuzzer's runtime (libclang-rt-14-dev) among the packages
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSLUICE_FUZZ=ON -DSLUICE_WERROR=OFF -DSLUICE_BUILD_KAFKA=OFF -DSLUICE_FUZZ_SECONDS="$seconds"
else
  cmake -S . -B "$build_dir" -DSLUICE_FUZZ_SECONDS="$seconds" >/dev/null
fi
cmake --build "$build_dir" -j"$(nproc)" --target sluice_fuzz_targets
# One target at a time, each on both cores' worth of machine: libFuzzer is single-threaded,
# so two run side by side.
ctest --test-dir "$build_dir" -L fuzz --output-on-failure --no-tests=error -j2 "$@"
