#!/usr/bin/env bash
# Everything CI checks about correctness, in one command: installs missing packages,
# builds (scripts/build.sh) and runs every test with ctest: unit, abi, integration and
# torture. Extra arguments go to ctest, e.g. `scripts/test.sh -LE torture` or `-R layout`.
# Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}

scripts/setup.sh
scripts/build.sh
# --timeout is the default for tests that set no TIMEOUT of their own.
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error --timeout 1500 -j2 "$@"
