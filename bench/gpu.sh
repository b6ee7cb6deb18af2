#!/usr/bin/env bash
# The one call on the lent GPU machine (docs/cuda.md, "Running on a GPU"): builds kiln once, runs
# the GPU tests, kiln's GPU benchmarks and the peer (PyTorch) on the same GPU, and writes one
# summary, $OUT/summary.md (with the full log beside it, $OUT/log.txt). Every step's failure is
# recorded and the later steps still run; a step that would not fit in what is left of the time
# budget is skipped and says so.
#
#   bench/gpu_deps.sh                  # here, once: .gpu-deps/ (build deps + the peer scripts)
#   run: bench/gpu.sh   carry: [".gpu-deps"]
#
# Environment: OUT (default ./gpu-out), GPU_SH_BUDGET (seconds for everything, default 570: a
# device command may run 600), GPU_SH_BUILD (build folder, default build-gpu), GPU_SH_CMAKE_ARGS
# (more configure arguments), GPU_SH_JOBS (default: every core), PEER_WORKLOADS, PEER_MODES (default: the tile workloads, eager and
# torch.compile default), GPU_SH_FULL_CTEST=0 to skip the CPU suite at the end.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
BUDGET=${GPU_SH_BUDGET:-570}
BUILD=${GPU_SH_BUILD:-build-gpu}
JOBS=${GPU_SH_JOBS:-$(nproc)}
T0=$(date +%s)
LOG=$OUT/log.txt
STEPS=$OUT/.steps
PEER_OUT=$OUT/peer.jsonl
KILN_OUT=$OUT/kiln_bench.txt
: > "$LOG"; : > "$STEPS"; : > "$PEER_OUT"; : > "$KILN_OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
ORIG_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
export KILN_CACHE_DIR=${KILN_CACHE_DIR:-$(mktemp -d)/kiln-cache}

left() { echo $((BUDGET - ($(date +%s) - T0))); }
# step NAME NEED LIMIT CMD...: runs CMD (its output into the log) when NEED seconds are left,
# for at most LIMIT seconds (or what is left); records ok / failed / timed out / skipped.
step() {
  local name=$1 need=$2 limit=$3 l rc s d st
  shift 3
  l=$(left)
  if ((l < need)); then
    echo "$name|skipped: ${l}s left of the budget, it needs ${need}|0" >> "$STEPS"
    return 99
  fi
  ((limit > l)) && limit=$l
  echo "=== $name ($(date -u +%T), at most ${limit}s): $*" >> "$LOG"
  s=$(date +%s)
  timeout -k 5 "$limit" "$@" >> "$LOG" 2>&1
  rc=$?
  d=$(($(date +%s) - s))
  if ((rc == 0)); then st=ok; elif ((rc == 124 || rc == 137)); then st="timed out after ${limit}s"; else st="failed (exit $rc)"; fi
  echo "$name|$st|$d" >> "$STEPS"
  echo "=== $name: $st in ${d}s" >> "$LOG"
  return $rc
}
note() { echo "$1|$2|0" >> "$STEPS"; }

# --- 1. the machine
GPU_LINE=$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -4)
{
  echo "gpu: $GPU_LINE"
  echo "nvcc: $(nvcc --version 2>&1 | tail -2 | head -1)"
  echo "c++: $(c++ --version 2>&1 | head -1)"
  echo "cmake: $(cmake --version 2>&1 | head -1); ninja $(ninja --version 2>&1)"
  echo "python3: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -1)"
  echo "cores: $JOBS; kernel: $(uname -r)"
} > "$OUT/.machine"
cat "$OUT/.machine" >> "$LOG"

# --- 2. configure: with the machine's own libraries, else with the carried ones (bench/gpu_deps.sh)
DEPS_ARGS=()
use_carried_deps() {
  local tarball=$ROOT/.gpu-deps/kiln-deps.tar.xz d=/tmp/kiln-deps
  [ -f "$tarball" ] || return 1
  mkdir -p $d && tar -C $d -xJf "$tarball" || return 1
  local lib=$d/usr/lib/x86_64-linux-gnu ld=$d/usr/lib/x86_64-linux-gnu/openblas-openmp
  export CMAKE_PREFIX_PATH=$d/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # OpenBLAS for kiln's binaries; the carried libgfortran only where the machine has none (an
  # older one in front of the machine's could break its own libraries). The peer runs without.
  if ! ldconfig -p 2>/dev/null | grep -q 'libgfortran.so.5 '; then
    mkdir -p $d/gfortran && cp -a $lib/libgfortran.so.5* $d/gfortran/ && ld=$ld:$d/gfortran
  fi
  export LD_LIBRARY_PATH=$ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  DEPS_ARGS=(-DKILN_OPENBLAS_OPENMP=$lib/openblas-openmp/libopenblas.so
             -DCBLAS_INCLUDE_DIR=$d/usr/include/x86_64-linux-gnu/openblas-openmp)
}
PY=OFF
[ -f bench/gpu_tile.py ] && PY=ON
# shellcheck disable=SC2206
EXTRA=(${GPU_SH_CMAKE_ARGS:-})
configure() {  # configure BENCH PYTHON. The build folder is kept: a second run (while the machine is
  # still warm) goes on where a build that ran out of time stopped; what a failed attempt did not
  # find (NOTFOUND) is searched for again.
  step "configure (bench $1, python $2${DEPS_ARGS:+, carried deps})" 30 120 \
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_BENCH="$1" \
    -DKILN_BUILD_PYTHON="$2" "${DEPS_ARGS[@]}" "${EXTRA[@]}"
}
CONFIGURED=0
for attempt in "ON $PY" "OFF $PY" "OFF OFF"; do
  # shellcheck disable=SC2086
  if configure $attempt; then CONFIGURED=1; break; fi
  if ((${#DEPS_ARGS[@]} == 0)) && use_carried_deps; then
    note "carried dependencies" "unpacked .gpu-deps/kiln-deps.tar.xz into /tmp/kiln-deps"
    # shellcheck disable=SC2086
    if configure $attempt; then CONFIGURED=1; break; fi
  fi
done

# --- 3. build: the tests first, then kiln's GPU benchmark where the tree has one
TILE_BENCH=""
if ((CONFIGURED)); then
  step "build kiln_tests ($JOBS jobs)" 60 420 ninja -C "$BUILD" -j "$JOBS" kiln_tests
  # The fuzzer's tests and kiln-opt, for the CPU suite at the end (its ctest lists them).
  step "build kiln-opt kiln_fuzz_tests" 30 120 ninja -C "$BUILD" -j "$JOBS" kiln-opt kiln_fuzz_tests
  for t in gpu_tile kiln_bench_gpu_tile; do
    if ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q "^$t:"; then
      step "build $t" 30 180 ninja -C "$BUILD" -j "$JOBS" "$t" && TILE_BENCH=$BUILD/$t
      break
    fi
  done
  EAGER_BENCH=""
  ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q "^kiln_bench_gpu_eager:" &&
    step "build kiln_bench_gpu_eager" 30 180 ninja -C "$BUILD" -j "$JOBS" kiln_bench_gpu_eager && EAGER_BENCH=$BUILD/kiln_bench_gpu_eager
  [ "$PY" = ON ] && grep -q "KILN_BUILD_PYTHON:BOOL=ON" "$BUILD/CMakeCache.txt" &&
    step "build the Python extension" 30 180 ninja -C "$BUILD" -j "$JOBS" _C
fi

# --- 4. the GPU tests: the ctest label gpu, then every CUDA-named gtest (the tile CUDA tests among them)
if [ -x "$BUILD/kiln_tests" ]; then
  step "ctest -L gpu" 20 180 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 120
  step "kiln_tests *Cuda*" 20 180 "$BUILD/kiln_tests" --gtest_filter='*Cuda*:*CUDA*:*cuda*' --gtest_brief=1
fi

# --- 5. kiln's GPU benchmarks, then the peer on the same workloads
# cuBLAS for the matmul row (bench/gpu_tile.cc loads it with dlopen): the loader's or the
# toolkit's, else one from a pip wheel (torch's nvidia-cublas).
if [ -z "${KILN_CUBLAS_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so' &&
   ! ls /usr/local/cuda/lib64/libcublas.so* > /dev/null 2>&1; then
  for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    f=$(find "$d" -maxdepth 5 -name 'libcublas.so.1*' 2>/dev/null | sort -r | head -1)
    [ -n "$f" ] && export KILN_CUBLAS_LIBRARY=$f && break
  done
fi
echo "cuBLAS: ${KILN_CUBLAS_LIBRARY:-the loader's / the toolkit's}" >> "$LOG"
if [ -n "$TILE_BENCH" ] && [ -x "$TILE_BENCH" ]; then
  step "kiln benchmark $TILE_BENCH" 30 180 bash -c "set -o pipefail; '$TILE_BENCH' | tee -a '$KILN_OUT'"
elif [ -f bench/gpu_tile.py ]; then
  step "kiln benchmark bench/gpu_tile.py" 30 180 bash -c "set -o pipefail; PYTHONPATH=python python3 bench/gpu_tile.py | tee -a '$KILN_OUT'"
else
  note "kiln GPU benchmarks" "none in this tree (bench/gpu_tile[.py] absent)"
fi
# Eager CUDA tensors: the first use of an op on a disk cache of its own, cold then warm (a fresh
# process each), and the row workloads in eager.
if [ -n "${EAGER_BENCH:-}" ] && [ -x "$EAGER_BENCH" ]; then
  EAGER_CACHE=$(mktemp -d)/kiln-cache
  step "kiln eager benchmark (cold cache)" 30 150 bash -c "set -o pipefail; KILN_CACHE_DIR='$EAGER_CACHE' '$EAGER_BENCH' --cache cold | tee -a '$KILN_OUT'"
  step "kiln eager benchmark (warm cache)" 20 120 bash -c "set -o pipefail; KILN_CACHE_DIR='$EAGER_CACHE' '$EAGER_BENCH' --cache warm --reps 5 | tee -a '$KILN_OUT'"
fi
PEER=""
for p in "${KILN_PEER:-}" ../shared/bench/peer_torch.py shared/bench/peer_torch.py .gpu-deps/peer_torch.py; do
  [ -n "$p" ] && [ -f "$p" ] && PEER=$p && break
done
if [ -z "$PEER" ]; then
  note "peer" "peer_torch.py not found (../shared/bench, shared/bench, .gpu-deps: run bench/gpu_deps.sh here)"
else
  for w in ${PEER_WORKLOADS:-pointwise softmax layernorm rmsnorm cross_entropy matmul}; do
    for m in ${PEER_MODES:-eager default}; do
      step "peer $w $m" 25 120 env LD_LIBRARY_PATH="$ORIG_LD_LIBRARY_PATH" bash -c "set -o pipefail; python3 '$PEER' $w $m | grep '^{' | tee -a '$PEER_OUT'"
    done
  done
fi

# --- 6. memcheck of the runtime's GPU tests (without the two that provoke errors on purpose: an
# out-of-memory and an invalid launch, which memcheck reports as API errors), then the whole CPU
# suite where the driver is loaded
if [ -x "$BUILD/kiln_tests" ] && command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck CudaGpu*" 40 150 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$BUILD/kiln_tests" --gtest_filter='CudaGpu*:-*OutOfMemory*:*ALaunchError*' --gtest_brief=1
fi
if [ -x "$BUILD/kiln_tests" ] && [ "${GPU_SH_FULL_CTEST:-1}" = 1 ]; then
  step "ctest (all but gpu, $JOBS jobs)" 60 240 ctest --test-dir "$BUILD" -LE gpu -j "$JOBS" --timeout 600
fi

# --- 7. the summary
python3 - "$OUT" "$(date -u '+%F %T UTC')" "$(($(date +%s) - T0))" <<'PY' || echo "summary failed" >> "$LOG"
import json, re, sys, pathlib
out, when, secs = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
log = (out / "log.txt").read_text(errors="replace")
lines = [f"# kiln on the GPU: bench/gpu.sh, {when} ({secs} s)", ""]
lines += ["```"] + (out / ".machine").read_text().splitlines() + ["```", "", "## Steps", "",
          "| step | result | s |", "|---|---|---|"]
for row in (out / ".steps").read_text().splitlines():
    name, status, s = row.split("|", 2)
    lines.append(f"| {name} | {status} | {s} |")

def section(title, start):  # the output of one step, from the log
    m = re.search(r"=== " + re.escape(start) + r"[^\n]*\n(.*?)\n=== ", log, re.S)
    return m.group(1).splitlines() if m else None

lines += ["", "## GPU tests", ""]
ct = section("ctest -L gpu", "ctest -L gpu")
if ct is not None:
    keep = [l for l in ct if re.search(r"Test +#|tests passed|tests failed", l)]
    lines += ["`ctest -L gpu`:", "```"] + keep[-60:] + ["```"]
gt = section("kiln_tests", "kiln_tests *Cuda*")
if gt is not None:
    keep = list(dict.fromkeys(l for l in gt if re.search(r"PASSED|FAILED|SKIPPED|tests? ran|Failure|no CUDA GPU|^cuda:0|ms by events|eager cuda \]", l)))
    lines += ["", "`kiln_tests --gtest_filter=*Cuda*` (the tile CUDA tests among them):", "```"] + keep[-60:] + ["```"]
ms = section("compute-sanitizer", "compute-sanitizer memcheck")
if ms is not None:
    keep = [l for l in ms if re.search(r"ERROR SUMMARY|=========|PASSED|FAILED", l)]
    lines += ["", "compute-sanitizer memcheck (CudaGpu*):", "```"] + keep[-30:] + ["```"]
full = section("ctest (all", "ctest (all but gpu")
if full is not None:
    keep = [l for l in full if re.search(r"tests passed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|Exception", l)]
    lines += ["", "`ctest -LE gpu` (the CPU suite, with the CUDA backend registered):", "```"] + keep[-40:] + ["```"]

lines += ["", "## Benchmarks (median ms; floor from 4.3 TB/s and 790 TFLOP/s bf16)", "",
          "| workload | who | mode | median ms | first call s | floor ms | floor / median |", "|---|---|---|---|---|---|---|"]
rows, raw = [], []
for who, f in (("kiln", "kiln_bench.txt"), ("torch", "peer.jsonl")):
    for l in (out / f).read_text(errors="replace").splitlines():
        try:
            r = json.loads(l)
        except ValueError:
            if l.strip() and who == "kiln":
                raw.append(l)
            continue
        rows.append((r.get("workload", "?"), who, r))
for w, who, r in sorted(rows, key=lambda x: (x[0], x[1])):
    med, fl = r.get("median_ms"), r.get("floor_ms")
    frac = f"{100 * fl / med:.0f}%" if med and fl else ""
    lines.append(f"| {w} | {who} | {r.get('mode', '')} | {med} | {r.get('first_call_s', '')} | {fl} | {frac} |")
if raw:
    lines += ["", "kiln's benchmark output (as printed):", "```"] + raw + ["```"]
(out / "summary.md").write_text("\n".join(lines) + "\n")
PY
rm -f "$OUT/.steps" "$OUT/.machine"
cat "$OUT/summary.md"
