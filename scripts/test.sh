#!/usr/bin/env bash
# Builds kiln and runs its test suite. Usage: scripts/test.sh [--sanitize]
#   --sanitize  builds with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/) and runs there
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP workers sleep instead of spinning between parallel regions: on a shared or busy machine
# spinning steals the cores the other workers need (see docs/performance.md).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
# Tests exercise the multi-threaded paths whatever the machine's load (docs/performance.md).
export KILN_IGNORE_LOAD="${KILN_IGNORE_LOAD:-1}"
t0=$SECONDS
bash scripts/build.sh "$@"
echo "[test] build: $((SECONDS - t0)) s"
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
t0=$SECONDS
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)"
echo "[test] ctest: $((SECONDS - t0)) s"
# The graph fuzzer's summary (how many graphs it ran, what they covered), shown on success too.
grep -h '^\[fuzz\]' "$dir/Testing/Temporary/LastTest.log" 2>/dev/null || true
# The Python suite (the package built above, checked against PyTorch). The sanitizer build's
# extension (build-asan/python) runs with the ASan runtime preloaded, outside CI: docs/python-api.md.
if [ "$dir" = build ]; then
  t0=$SECONDS
  # One worker per core (pytest-xdist); a test file runs whole in one worker, as its fixtures expect.
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -q -p no:cacheprovider \
    -n "$(nproc)" --dist loadfile tests/python
  echo "[test] pytest: $((SECONDS - t0)) s"
fi
