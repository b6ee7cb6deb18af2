#!/usr/bin/env bash
# Configures and builds kiln. Usage: scripts/build.sh [--sanitize]   (build dir: build/ or build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  # The sanitizer run is the C++ suite (.ci/run); examples run in build/. It needs no vector
  # speed: built for the compiler's default target (KILN_CPU_ARCH empty), AVX-512 codegen's
  # compile time is not paid twice in CI.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON -DKILN_BUILD_BENCH=OFF \
    -DKILN_BUILD_EXAMPLES=OFF -DKILN_CPU_ARCH= >/dev/null
else
  dir=build
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$dir"
