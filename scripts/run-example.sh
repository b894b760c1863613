#!/usr/bin/env bash
# Builds sluice and runs an example pipeline in the foreground (Ctrl-C stops it).
#   PIPELINE    another pipeline file, default examples/kafka_embedded.toml (Kafka -> operators
#               -> Kafka on an in-process mock broker; ends by itself)
#   arguments   passed to `sluiced run` after the pipeline file
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}
pipeline=${PIPELINE:-examples/kafka_embedded.toml}

scripts/setup.sh
scripts/build.sh

# The in-tree plugins land in <build>/plugins-out; sluiced searches SLUICE_PLUGIN_PATH.
plugin_dir=$PWD/$build_dir/plugins-out
[[ $build_dir = /* ]] && plugin_dir=$build_dir/plugins-out
chmod go-w "$plugin_dir" "$plugin_dir"/*.so 2>/dev/null || true  # sluiced refuses writable ones
export SLUICE_PLUGIN_PATH=$plugin_dir${SLUICE_PLUGIN_PATH:+:$SLUICE_PLUGIN_PATH}

exec "$build_dir/host/sluiced" run "$pipeline" "$@"
