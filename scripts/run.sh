#!/usr/bin/env bash
# Builds kiln and runs its main example. Extra arguments go to the example.
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP workers sleep instead of spinning between parallel regions: on a shared or busy machine
# spinning steals the cores the other workers need (see docs/performance.md).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
bash scripts/build.sh 1>&2
exec ./build/example_gpt "$@"
