#!/usr/bin/env bash
# Out-of-tree plugin test (ctest: abi_out_of_tree, label "integration").
#
# Does what a third party does with an installed sluice SDK, from a configured and built
# sluice tree:
#  1. installs the SDK (cmake --install --component sdk) into a temporary prefix and
#     checks the package files (headers, SluiceConfig*.cmake, sluice.pc, the plugin guides
#     and example sources under share/doc/sluice), that nothing of the daemon came with it
#     and that nothing was written outside the prefix (install_manifest_sdk.txt);
#  2. checks the package version rule: find_package(Sluice 1) works, Sluice 2 is refused;
#  3. builds every example of examples/third_party_plugin (the copies installed in step 1)
#     with CMake, find_package(Sluice) and sluice_add_plugin(), with -Werror, and installs
#     them; the C++ ones set no CMAKE_CXX_STANDARD (Sluice::sdk asks for C++20), the C ones
#     are LANGUAGES C projects (Sluice::sdk must not need a C++ compiler);
#  4. builds c_upper once more with pkg-config and one gcc command line; checks that
#     sluice.hpp compiled as C++17 stops at one clear #error;
#  5. checks every plugin: not group/other-writable (sluiced refuses those), exports its
#     entry point and nothing else;
#  6. with --run-pipeline: runs a pipeline through
#     sluiced that loads the plugins through plugin_dirs and checks their output;
#  7. with --full-install: installs everything with DESTDIR=D and --prefix P and checks that
#     all of it landed under D/P (unit file and config included, and the unit names P's
#     sluiced), then runs D/P/bin/sluiced, moved away from P, with no SLUICE_PLUGIN_PATH
#     and no --plugin-dir: it finds its plugins next to itself; an unknown type's error
#     names the directory searched, SLUICE_PLUGIN_PATH and --plugin-dir.
#
# usage: out_of_tree_test.sh --build-dir DIR [--source-dir DIR] [--sluiced PATH]
#                            [--run-pipeline] [--full-install] [--keep]
#   --build-dir     the configured sluice build tree whose SDK gets installed
#   --source-dir    the sluice checkout (default: two levels above this script)
#   --sluiced       the sluiced binary, for step 6
#   --run-pipeline  do step 6 (needs --sluiced, and the in-tree plugins in
#                   SLUICE_PLUGIN_PATH or <build-dir>/plugins-out)
#   --full-install  do step 7 (needs every installed target of <build-dir> built)
#   --keep          keep the temporary directory and print its path
# Environment: SLUICE_CMAKE (cmake to use), CC, CXX (compilers for the example builds).
set -euo pipefail
umask 022 # plugins and their directories must not be group/other-writable

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
build_dir=""
sluiced=""
keep=0
run_pipeline_step=0
full_install_step=0
while (($# > 0)); do
  case $1 in
    --build-dir) build_dir=$2; shift 2 ;;
    --source-dir) source_dir=$2; shift 2 ;;
    --sluiced) sluiced=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --run-pipeline) run_pipeline_step=1; shift ;;
    --full-install) full_install_step=1; shift ;;
    *) echo "usage: $0 --build-dir DIR [--source-dir DIR] [--sluiced PATH] [--run-pipeline] [--full-install] [--keep]" >&2; exit 2 ;;
  esac
done
[[ -n $build_dir ]] || { echo "$0: --build-dir is required" >&2; exit 2; }
build_dir=$(cd "$build_dir" && pwd)
cmake=${SLUICE_CMAKE:-cmake}
examples=$source_dir/examples/third_party_plugin

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-oot.XXXXXX")
chmod 755 "$tmp"
cleanup() {
  if ((keep)); then echo "kept: $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

step() { printf '\n--- %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
compilers=()
[[ -n ${CC:-} ]] && compilers+=("-DCMAKE_C_COMPILER=$CC")
[[ -n ${CXX:-} ]] && compilers+=("-DCMAKE_CXX_COMPILER=$CXX")

# check_plugin FILE: the file a host would load.
check_plugin() {
  local so=$1 dir mode
  [[ -f $so ]] || fail "$so was not built"
  for path in "$so" "$(dirname "$so")"; do
    mode=$(stat -c %a "$path")
    ((8#$mode & 8#022)) && fail "$path is group/other-writable (mode $mode): sluiced refuses it"
  done
  local exported
  exported=$(nm -D --defined-only "$so" | awk 'NF == 3 { print $3 }' | sort)
  grep -qx "$entry_symbol" <<<"$exported" ||
    fail "$so does not export $entry_symbol (is it marked SL_EXPORT?); exports: $exported"
  [[ $exported == "$entry_symbol" ]] ||
    fail "$so exports more than $entry_symbol:"$'\n'"$exported"
  echo "ok: $so exports only $entry_symbol"
}

# ---------------------------------------------------------------------------------------
step "1. install the SDK from $build_dir"
prefix=$tmp/prefix
"$cmake" --install "$build_dir" --prefix "$prefix" --component sdk
for f in include/sluice/sluice.h; do
  [[ -f $prefix/$f ]] || fail "the SDK install lacks $f"
done
config=$(find "$prefix" -name SluiceConfig.cmake -print -quit)
[[ -n $config ]] || fail "no SluiceConfig.cmake under $prefix"
for f in SluiceConfigVersion.cmake SluiceTargets.cmake SluiceAddPlugin.cmake sluice_plugin.map; do
  [[ -f $(dirname "$config")/$f ]] || fail "no $f next to $config"
done
pc=$(find "$prefix" -name sluice.pc -print -quit)
[[ -n $pc ]] || fail "no sluice.pc under $prefix"
if [[ -f $source_dir/sdk/include/sluice/sluice.hpp && ! -f $prefix/include/sluice/sluice.hpp ]]; then
  fail "sluice.hpp exists in the source tree but was not installed"
fi
find "$prefix" -type f | sed "s|^$prefix/|  |" | sort
# What a plugin author reads and copies comes with the SDK.
for f in PLUGIN_GUIDE.md CHECKPOINTING.md TESTING.md examples/README.md \
         examples/c_upper/upper.c examples/c_batcher/batcher.c \
         examples/cpp_committed_sink/committed_sink.cc; do
  [[ -f $prefix/share/doc/sluice/$f ]] || fail "the SDK install lacks share/doc/sluice/$f"
done
# ... and nothing of the daemon.
for f in bin/sluiced lib/systemd/system/sluiced.service etc/sluice/sluiced.toml; do
  [[ ! -e $prefix/$f ]] || fail "the SDK component installed $f"
done
if find "$prefix" -path '*/sluice/plugins/*' | grep -q .; then
  fail "the SDK component installed plugins: $(find "$prefix" -path '*/sluice/plugins/*')"
fi
# Nothing outside the prefix.
manifest=$build_dir/install_manifest_sdk.txt
[[ -s $manifest ]] || fail "no $manifest after the SDK install"
if outside=$(grep -v "^$prefix/" "$manifest"); then
  fail "the SDK install wrote outside $prefix:"$'\n'"$outside"
fi
echo "ok: the SDK component has headers, CMake package, sluice.pc, guides and examples, all under $prefix"

export PKG_CONFIG_PATH=$(dirname "$pc")
entry_symbol=$(pkg-config --variable=entry_symbol sluice)
[[ -n $entry_symbol ]] || fail "sluice.pc has no entry_symbol variable"
echo "pkg-config: sluice $(pkg-config --modversion sluice), cflags: $(pkg-config --cflags sluice)"
incdir=$(pkg-config --variable=includedir sluice)
[[ -f $incdir/sluice/sluice.h ]] || fail "sluice.pc's includedir ($incdir) has no sluice/sluice.h"

# ---------------------------------------------------------------------------------------
step "2. package version rule (SameMajorVersion: major = ABI major)"
abi_major=$(pkg-config --variable=abi_major sluice)
probe=$tmp/probe
mkdir -p "$probe"
cat >"$probe/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.17)
project(probe NONE)
find_package(Sluice ${WANT} QUIET)
if(Sluice_FOUND)
  message(STATUS "PROBE: found ${Sluice_VERSION} in ${Sluice_DIR}")
else()
  message(STATUS "PROBE: not found")
endif()
EOF
probe() {
  rm -rf "$probe/build"
  "$cmake" -S "$probe" -B "$probe/build" -DCMAKE_PREFIX_PATH="$prefix" -DWANT="$1" |
    grep 'PROBE:' || true
}
out=$(probe "$abi_major")
echo "find_package(Sluice $abi_major): $out"
[[ $out == *"found "*"in $prefix/"* ]] || fail "find_package(Sluice $abi_major) did not find $prefix"
out=$(probe "$((abi_major + 1))")
echo "find_package(Sluice $((abi_major + 1))): $out"
[[ $out == *"not found"* ]] || fail "find_package(Sluice $((abi_major + 1))) accepted ABI $abi_major"

# ---------------------------------------------------------------------------------------
plugins=()
# The installed copies: what an author finds under share/doc/sluice/examples.
examples=$prefix/share/doc/sluice/examples
for name in c_upper cpp_scale c_batcher cpp_committed_sink c_durable_sink; do
  src=$examples/$name
  if [[ ! -f $src/CMakeLists.txt ]]; then
    echo "(no $src/CMakeLists.txt: skipping $name)"
    continue
  fi
  step "3. $name: cmake + find_package(Sluice) + sluice_add_plugin"
  bdir=$tmp/build-$name
  "$cmake" -S "$src" -B "$bdir" "${generator[@]}" "${compilers[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Wpedantic -Werror" \
    -DCMAKE_CXX_FLAGS="-Wall -Wextra -Wpedantic -Werror" >"$tmp/configure-$name.log" 2>&1 ||
    { cat "$tmp/configure-$name.log"; fail "configuring $name against the installed SDK"; }
  found=$(sed -n 's/^Sluice_DIR:PATH=//p' "$bdir/CMakeCache.txt")
  [[ $found == "$prefix"/* ]] || fail "$name found the SDK in '$found', not in $prefix"
  "$cmake" --build "$bdir" || fail "building $name"
  check_plugin "$bdir/plugins/lib$name.so"
  "$cmake" --install "$bdir" --prefix "$tmp/consumer" >/dev/null
  installed=$(find "$tmp/consumer" -name "lib$name.so" -path '*/sluice/plugins/*' -print -quit)
  [[ -n $installed ]] || fail "cmake --install of $name did not put lib$name.so in lib/sluice/plugins"
  plugins+=("$bdir/plugins/lib$name.so")
  if [[ $name == cpp_* ]] && grep -Eq '^[^#]*(CMAKE_CXX_STANDARD|cxx_std_)' "$src/CMakeLists.txt"; then
    fail "$name asks for a C++ standard itself: the test is that Sluice::sdk asks for C++20"
  fi
done

# ---------------------------------------------------------------------------------------
step "4. c_upper: pkg-config and one gcc command"
mkdir -p "$tmp/pc-plugins"
# shellcheck disable=SC2046 # word splitting of the flags is intended
${CC:-gcc} -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror -shared -fPIC -fvisibility=hidden \
  -Wl,--no-undefined $(pkg-config --cflags sluice) \
  -o "$tmp/pc-plugins/libc_upper.so" "$examples/c_upper/upper.c" || fail "gcc with pkg-config"
check_plugin "$tmp/pc-plugins/libc_upper.so"

step "4b. sluice.hpp as C++17: one clear #error, not a page of std::span errors"
printf '#include <sluice/sluice.hpp>\nint main() { return 0; }\n' >"$tmp/cxx17.cc"
# shellcheck disable=SC2046
if ${CXX:-g++} -std=c++17 -fsyntax-only $(pkg-config --cflags sluice) "$tmp/cxx17.cc" \
  2>"$tmp/cxx17.log"; then
  fail "sluice.hpp compiled as C++17"
fi
cat "$tmp/cxx17.log"
grep -q 'needs C++20' "$tmp/cxx17.log" || fail "no 'needs C++20' in the C++17 errors"
errors=$(grep -c 'error' "$tmp/cxx17.log" || true)
((errors <= 2)) || fail "sluice.hpp as C++17 gave $errors error lines, not one clear #error"

# ---------------------------------------------------------------------------------------
step "6. run a pipeline that loads the out-of-tree plugins"
run_pipeline() {
  local dir=$tmp/pipeline
  mkdir -p "$dir"
  # core_ops (from_iterable, map) and sinks (sink_to_textfile) come from the build tree.
  export SLUICE_PLUGIN_PATH=$build_dir/plugins-out${SLUICE_PLUGIN_PATH:+:$SLUICE_PLUGIN_PATH}
  cat >"$dir/oot.toml" <<TOML
plugin_dirs = ["$tmp/build-c_upper/plugins", "$tmp/build-cpp_scale/plugins",
               "$tmp/build-c_batcher/plugins", "$tmp/build-cpp_committed_sink/plugins"]

[sources.mixed]
type = "from_iterable"
values = ["hello", 7, "World", 1.5, true]

[sources.numbers]
type = "from_iterable"
values = [3, 4.5]

[operators.upper]
type = "uppercase"
inputs = ["mixed"]

[operators.tenfold]
type = "scale"
inputs = ["upper"]
factor = 10

[operators.halved]
type = "map"
inputs = ["numbers"]
function = { name = "scale_by", args = { factor = 0.5 } }

[sinks.out]
type = "sink_to_textfile"
inputs = ["tenfold"]
path = "$dir/tenfold.jsonl"

[sinks.out_halved]
type = "sink_to_textfile"
inputs = ["halved"]
path = "$dir/halved.jsonl"

[operators.pairs]
type = "batch_every"
inputs = ["numbers"]
size = 2

[sinks.out_pairs]
type = "committed_lines"
inputs = ["pairs"]
path = "$dir/pairs.jsonl"
TOML
  "$sluiced" plugins --config "$dir/oot.toml" >"$dir/plugins.txt" 2>&1 ||
    { cat "$dir/plugins.txt"; fail "sluiced plugins --config"; }
  for what in "operator uppercase" "operator scale" "function scale_by" "operator batch_every" \
    "sink committed_lines"; do
    grep -q "$what" "$dir/plugins.txt" || { cat "$dir/plugins.txt"; fail "sluiced plugins lacks '$what'"; }
  done
  "$sluiced" validate "$dir/oot.toml" || fail "sluiced validate"
  "$sluiced" run "$dir/oot.toml" || fail "sluiced run exited with $?"
  diff -u <(printf '%s\n' '"HELLO"' 70 '"WORLD"' 15.0 true) "$dir/tenfold.jsonl" ||
    fail "unexpected output of uppercase + scale"
  diff -u <(printf '%s\n' 1.5 2.25) "$dir/halved.jsonl" || fail "unexpected output of scale_by"
  diff -u <(printf '%s\n' '[3,4.5]') "$dir/pairs.jsonl" || fail "unexpected output of batch_every"
  echo "ok: sluiced ran uppercase, scale, scale_by, batch_every and committed_lines from the out-of-tree plugins"
}
if ((run_pipeline_step)) && [[ -n $sluiced && -x $sluiced ]]; then
  run_pipeline
elif ((run_pipeline_step)); then
  fail "--run-pipeline needs --sluiced PATH to an executable (got '${sluiced}')"
fi

# ---------------------------------------------------------------------------------------
full_install() {
  step "7. full install: DESTDIR + --prefix, nothing outside, the installed sluiced finds its plugins"
  local destdir=$tmp/destdir full=$tmp/full
  DESTDIR=$destdir "$cmake" --install "$build_dir" --prefix "$full" >"$tmp/install.log" ||
    { cat "$tmp/install.log"; fail "cmake --install (everything)"; }
  # With DESTDIR every file lands under D; one that was not meant for the prefix lands
  # beside D/P (e.g. D/usr/local/lib/systemd/system).
  local outside
  outside=$(find "$destdir" -mindepth 1 \( -type f -o -type l \) ! -path "$destdir$full/*")
  [[ -z $outside ]] || fail "installed outside the prefix $full:"$'\n'"$outside"
  # The manifest names the paths as installed for the prefix (without DESTDIR).
  if outside=$(grep -v "^$full/" "$build_dir/install_manifest.txt"); then
    fail "install_manifest.txt names paths outside the prefix:"$'\n'"$outside"
  fi
  local root=$destdir$full
  for f in bin/sluiced lib/systemd/system/sluiced.service etc/sluice/sluiced.toml \
           share/doc/sluice/PLUGIN_GUIDE.md share/doc/sluice/OPERATIONS.md; do
    [[ -f $root/$f ]] || fail "the full install lacks $f"
  done
  grep -qx "ExecStart=$full/bin/sluiced run $full/etc/sluice/sluiced.toml" \
    "$root/lib/systemd/system/sluiced.service" ||
    fail "the unit does not run the prefix's sluiced on its config: $(grep ExecStart= "$root/lib/systemd/system/sluiced.service")"
  local plugin_dir
  plugin_dir=$(dirname "$(find "$root" -name libsluice_core_ops.so -print -quit)")
  [[ $plugin_dir == "$root"/*/sluice/plugins ]] || fail "no core_ops plugin under $root"
  echo "ok: everything under $full (through DESTDIR), plugins in ${plugin_dir#"$root"/}"

  # The binary runs where DESTDIR put it, not at the prefix it was installed for: the
  # default plugin directory must come from the executable's own location.
  local dir=$tmp/installed
  mkdir -p "$dir"
  cat >"$dir/p.toml" <<TOML
[sources.numbers]
type = "from_iterable"
values = [1, 2, 3]

[operators.plus]
type = "map"
inputs = ["numbers"]
function = { name = "add", args = { value = 10 } }

[sinks.out]
type = "sink_to_textfile"
inputs = ["plus"]
path = "$dir/out.jsonl"
TOML
  (unset SLUICE_PLUGIN_PATH; cd "$dir" && "$root/bin/sluiced" run "$dir/p.toml") ||
    fail "the installed sluiced could not run a pipeline with its own plugins"
  diff -u <(printf '%s\n' 11 12 13) "$dir/out.jsonl" || fail "unexpected output of the installed sluiced"
  echo "ok: the installed sluiced found its plugins in ${plugin_dir#"$root"/} (no SLUICE_PLUGIN_PATH, no --plugin-dir)"

  sed 's/type = "map"/type = "mapp"/' "$dir/p.toml" >"$dir/bad.toml"
  local err
  if err=$(unset SLUICE_PLUGIN_PATH; "$root/bin/sluiced" validate "$dir/bad.toml" 2>&1); then
    fail "validate accepted an unknown type"
  fi
  echo "$err"
  for needle in "$plugin_dir" SLUICE_PLUGIN_PATH --plugin-dir; do
    grep -qF -- "$needle" <<<"$err" || fail "the unknown-type error does not mention $needle"
  done
  mkdir -p "$dir/empty"
  if err=$(unset SLUICE_PLUGIN_PATH; "$sluiced" validate --plugin-dir "$dir/empty" "$dir/p.toml" 2>&1); then
    fail "validate passed with no plugins"
  fi
  echo "$err"
  for needle in "no source types are registered" "$dir/empty" SLUICE_PLUGIN_PATH --plugin-dir; do
    grep -qF -- "$needle" <<<"$err" || fail "the no-plugins error does not mention $needle"
  done
  echo "ok: plugin errors name the directories searched, SLUICE_PLUGIN_PATH and --plugin-dir"
}
if ((full_install_step)); then
  [[ -n $sluiced && -x $sluiced ]] || fail "--full-install needs --sluiced PATH (the build tree's)"
  full_install
fi

echo
echo "out-of-tree plugins: ok (${#plugins[@]} built with CMake, 1 with pkg-config)"
