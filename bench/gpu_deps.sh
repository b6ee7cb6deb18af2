#!/usr/bin/env bash
# Packs the build dependencies kiln needs and a bare GPU machine may lack (OpenBLAS built on
# OpenMP, nlohmann-json, GoogleTest, Google Benchmark, libgfortran) from the files of the packages
# installed HERE (dpkg -L; nothing is downloaded) into .gpu-deps/kiln-deps.tar.xz, for bench/gpu.sh
# to unpack there when the machine's own are missing. Run it here, once, from the repository root:
#
#   bench/gpu_deps.sh && echo /.gpu-deps/ >> .git/info/exclude     # then carry: [".gpu-deps"]
#
# It also copies the peers (../shared/bench/peer_*.py), which do not travel otherwise.
# Static archives of OpenBLAS are left out (kiln links the shared library): the archive is ~10 MB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.gpu-deps
mkdir -p "$out"
list=$(mktemp)
for pkg in libopenblas0-openmp libopenblas-openmp-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev \
           libbenchmark1debian libgfortran5; do
  dpkg -L "$pkg" >/dev/null 2>&1 || { echo "gpu_deps: package $pkg is not installed here" >&2; exit 1; }
  dpkg -L "$pkg" | while read -r f; do
    if [ -L "$f" ] || [ -f "$f" ]; then
      case "$f" in
        */openblas-openmp/*.a|/usr/share/doc/*|/usr/share/lintian/*|/usr/share/man/*) ;;
        *) echo "${f#/}" ;;
      esac
    fi
  done
done | sort -u > "$list"
tar -C / -cJf "$out/kiln-deps.tar.xz" -T "$list"
rm -f "$list"
# The peers (../shared does not travel to the device machine: only the checkout and carried paths do).
# $KILN_SHARED names the shared folder when the checkout has none beside it (a helper's worktree).
shared=${KILN_SHARED:-$root/../shared}
for peer in peer_torch.py peer_jax.py; do
  if [ -f "$shared/bench/$peer" ]; then cp "$shared/bench/$peer" "$out/"; else echo "gpu_deps: no $shared/bench/$peer" >&2; fi
done
echo "gpu_deps: $(du -h "$out/kiln-deps.tar.xz" | cut -f1) in $out/kiln-deps.tar.xz"
