#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a project
# outside the tree against it twice: with find_package(vkformer CONFIG) and with
# pkg-config. Fails on any validation message from the consumer.
# Usage: package_consumer.sh BUILD_DIR CMAKE [CXX]
set -euo pipefail

build=$1 cmake=$2 cxx=${3:-g++}
src=$(cd "$(dirname "$0")/package_consumer" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vkformer-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log"
"$prefix/bin/vkformer" --help > /dev/null
# lib/ or lib/<multiarch>/, as GNUInstallDirs chose for the configured prefix.
config_dir=$(dirname "$(find "$prefix" -name vkformerConfig.cmake)")
pc_dir=$(dirname "$(find "$prefix" -name vkformer.pc)")

# Runs a consumer with the validation layer; its stderr must have no message.
run() {
  VKFORMER_VALIDATION=1 "$1" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; exit 1; }
  cat "$tmp/stderr" >&2
  if grep -qiE "validation (error|warning)" "$tmp/stderr"; then
    echo "package_consumer: validation message from $1" >&2
    exit 1
  fi
}

# 1. CMake: only the installed package is visible (no registry, no build tree).
"$cmake" -S "$src" -B "$tmp/cmake-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF > "$tmp/configure.log" \
  || { cat "$tmp/configure.log" >&2; exit 1; }
found=$(sed -n 's/^vkformer_DIR:PATH=//p' "$tmp/cmake-build/CMakeCache.txt")
if [ "$found" != "$config_dir" ]; then
  echo "package_consumer: find_package found '$found', not the installed package" >&2
  exit 1
fi
"$cmake" --build "$tmp/cmake-build" > "$tmp/build.log" || { cat "$tmp/build.log" >&2; exit 1; }
run "$tmp/cmake-build/consumer"

# 2. pkg-config, with a plain compiler command line.
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs vkformer)
echo "pkg-config --cflags --libs vkformer: $flags"
# shellcheck disable=SC2086  # the flags are meant to split
"$cxx" -std=c++17 -O1 "$src/main.cpp" -o "$tmp/consumer-pc" $flags
run "$tmp/consumer-pc"
echo "package_consumer: OK"
