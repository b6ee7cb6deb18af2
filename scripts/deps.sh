#!/usr/bin/env bash
# Installs what building kiln needs, from Debian's packages, when it is missing.
set -euo pipefail
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in cmake ninja-build g++ python3 python3-dev python3-pip libopenblas-dev libopenblas-openmp-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev; do
  have "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "kiln: installing ${need[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Python packages: nanobind + scikit-build-core build the extension; numpy, safetensors, PyTorch
# (CPU is enough) and pytest are what the Python suite checks kiln against (pytest-xdist runs it on
# every core); Hypothesis draws the
# bad-input suite's calls (tests/python/test_bad_input.py); onnx builds kiln.onnx's exported models
# and onnxruntime runs them (tests/python/test_onnx.py).
py_need=()
for mod in nanobind:nanobind scikit_build_core:scikit-build-core numpy:numpy safetensors:safetensors \
           pytest:pytest xdist:pytest-xdist torch:torch hypothesis:hypothesis onnx:onnx onnxruntime:onnxruntime; do
  python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('${mod%%:*}') is None)" 2>/dev/null ||
    py_need+=("${mod##*:}")
done
if [ ${#py_need[@]} -gt 0 ]; then
  echo "kiln: installing ${py_need[*]} (pip)"
  python3 -m pip install -q "${py_need[@]}" 2>/dev/null || python3 -m pip install -q --break-system-packages "${py_need[@]}"
fi
