#!/usr/bin/env bash
# Installs what building kiln needs, from Debian's packages, when it is missing.
set -euo pipefail
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake ninja-build g++ python3 libopenblas-dev libopenblas-openmp-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev; do
  have "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "kiln: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The Python packages the tests cross-check against (the reference safetensors reader/writer).
if ! python3 -c 'import safetensors, numpy' >/dev/null 2>&1; then
  echo "kiln: installing safetensors and numpy (pip)"
  python3 -m pip install -q safetensors numpy 2>/dev/null || python3 -m pip install -q --break-system-packages safetensors numpy
fi
