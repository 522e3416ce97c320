#!/usr/bin/env bash
# Installs the Debian 12 packages peakcast builds against, when any is missing.
set -euo pipefail
# --test: also what only the test suite uses (clang-format checks the formatting).
pkgs=(g++ cmake ninja-build libeigen3-dev libboost-graph-dev nlohmann-json3-dev libcli11-dev libyaml-cpp-dev catch2 libbenchmark-dev python3 python3-yaml python3-dev pybind11-dev)
[ "${1:-}" = "--test" ] && pkgs+=(clang-format)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
