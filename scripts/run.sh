#!/usr/bin/env bash
# Builds kiln and runs its main example. Extra arguments go to the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
exec ./build/example_regression "$@"
