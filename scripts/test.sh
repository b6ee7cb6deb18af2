#!/usr/bin/env bash
# Builds kiln and runs its test suite. Usage: scripts/test.sh [--sanitize]
#   --sanitize  builds with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) and runs there
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
