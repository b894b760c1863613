#!/bin/sh
# Runs every benchmark (issues 7, 13, 14, 20) with its same-run baselines (see bench/bench.py):
#   bench/run.sh [--quick | --smoke] [--build-dir DIR]
#                [--only operator,streamz,kafka,memory,checkpoint,window,e2e]
# The build dir (default: ./build, or $SLUICE_BUILD_DIR) must be configured with
# -DSLUICE_BUILD_BENCH=ON; use -DCMAKE_BUILD_TYPE=Release for figures worth recording.
exec /usr/bin/python3 "$(dirname "$0")/bench.py" "$@"
