#!/usr/bin/env bash
# Installs the Debian 12 packages sluice needs to build, test and run (CI runs it on a
# fresh machine); `--bench` adds those only some benchmarks use (nginx-light, the server of
# bench/http_bench.py: a web server the tests do not need, whose package starts a
# service on port 80 where an init system runs). Idempotent and quick: when every package is already installed it does
# nothing at all (no apt-get, no network). Needs root, or sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache git python3
  libboost-dev librdkafka-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev libsystemd-dev liblua5.4-dev libcli11-dev
  libsimdjson-dev libpq-dev postgresql libcurl4-openssl-dev libmosquitto-dev mosquitto
  mosquitto-clients zlib1g-dev
  kcat clang-format clang-tidy clang libclang-rt-14-dev
  python3-streamz valgrind mawk jq
  systemd dpkg-dev lintian chromium chromium-driver
)
if [[ ${1:-} == --bench ]]; then
  packages+=(nginx-light)
fi

# One dpkg-query for all of them; unknown packages are simply absent from its output.
installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null |
              awk '$2 == "ii" { print $1 }' || true)
missing=()
for p in "${packages[@]}"; do
  grep -qxF "$p" <<<"$installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "setup: not root and no sudo: install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Retries=3 update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Retries=3 install -y -qq \
  --no-install-recommends "${missing[@]}"
