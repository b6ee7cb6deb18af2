"""The CPU workloads of /work/shared/bench/workloads.md (CPU sizes, float32) in kiln eager and kiln
compiled (every registered backend: "eager", "aot_eager", and "inductor" once it is registered) beside
PyTorch eager and torch.compile, in one run on one machine.

    PYTHONPATH=python python3 bench/cpu.py [--quick] [--workloads pointwise,softmax] [--markdown FILE]

Every (library, workload, mode) runs in a fresh process, so compile caches start cold: its first call
is the cold compile time (an empty KILN_CACHE_DIR / TORCHINDUCTOR_CACHE_DIR); a second fresh process
with the cache the first one filled gives the warm first call. Times are the median of timed calls
after warm-ups, on random inputs. The table gives, per row: median ms, the ratio to the peer's best
mode (PyTorch eager or torch.compile; < 1: faster than the peer), for memory-bound workloads the
fraction of the machine's memcpy bandwidth (measured in this run) achieved on the bytes the workload
must read and write, GFLOP/s for matmul-bound ones, the cold / warm first-call seconds, and for
compiled modes what the first call costs beyond a steady call (first call - median call): the cold
compile ("cold +s") and the warm start ("warm +ms": a fresh process, the cache filled), the figures
issue 11's bars name (the first call also runs the function once, and touches fresh memory).
matmul also runs as one cblas_sgemm call into the same OpenBLAS ("openblas direct", the bar for kiln's
matmul), and once more interleaved with kiln's compiled matmul in one process (the ratio the bar is
read from: separate processes' runs differ by more than the bar's 5%). --quick: fewer timed calls. Both libraries use every core (KILN_IGNORE_LOAD=1 unless set). --markdown FILE: also writes the table as
markdown (what BENCHMARKS.md keeps).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKLOADS = ["pointwise", "softmax", "layernorm", "rmsnorm", "cross_entropy", "matmul", "mlp_infer",
             "gpt_tiny_infer", "gpt_tiny_train"]
GPT_CFG = dict(vocab=8192, ctx=256, d=256, heads=4, layers=4)
GPT_BATCH = 8
F32 = 4


# ---------------------------------------------------------------- the workloads (one definition, both libraries)
def workload(lib, name):
    """(fn, args, bytes it must read and write, flops): the same function in kiln and in torch."""
    F = lib.nn.functional
    rn = lambda *s: lib.randn(*s)  # noqa: E731
    if name == "pointwise":
        x, a, b = rn(2048, 4096), rn(4096), rn(4096)
        return (lambda x, a, b: F.gelu(x * a + b) * lib.sigmoid(x)), (x, a, b), 2 * x.numel() * F32, 0
    if name == "softmax":
        x = rn(2048, 4096)
        return (lambda x: F.softmax(x, -1)), (x,), 2 * x.numel() * F32, 0
    if name == "layernorm":
        x, w, b = rn(2048, 4096), rn(4096), rn(4096)
        return (lambda x, w, b: F.layer_norm(x, (4096,), w, b)), (x, w, b), 2 * x.numel() * F32, 0
    if name == "rmsnorm":
        x, w = rn(2048, 4096), rn(4096)
        return (lambda x, w: x * lib.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w), (x, w), 2 * x.numel() * F32, 0
    if name == "cross_entropy":
        x = rn(1024, 32000)
        t = lib.randint(0, 32000, (1024,))
        return (lambda x, t: F.cross_entropy(x, t)), (x, t), x.numel() * F32, 0
    if name == "matmul":
        a, b = rn(1024, 1024), rn(1024, 1024)
        return (lambda a, b: a @ b), (a, b), 0, 2 * 1024 ** 3
    if name == "mlp_infer":
        layers = [(rn(1024, 1024) * 0.03, rn(1024) * 0.03) for _ in range(8)]
        x = rn(64, 1024)

        def mlp(x, *params):
            for i in range(0, len(params), 2):
                x = F.gelu(F.linear(x, params[i], params[i + 1]))
            return x
        params = tuple(p for layer in layers for p in layer)
        return inference(mlp), (x,) + params, 8 * 1024 * 1024 * F32, 2 * 64 * 1024 * 1024 * 8
    if name in ("gpt_tiny_infer", "gpt_tiny_train"):
        model = gpt_model(lib)
        idx = lib.randint(0, GPT_CFG["vocab"], (GPT_BATCH, GPT_CFG["ctx"]))
        nparam = sum(p.numel() for p in model.parameters())
        flops = 2 * nparam * GPT_BATCH * GPT_CFG["ctx"]
        if name == "gpt_tiny_infer":
            model.eval()
            return inference(lambda idx: gpt_logits(lib, model, idx)), (idx,), 0, flops
        tgt = lib.randint(0, GPT_CFG["vocab"], (GPT_BATCH, GPT_CFG["ctx"]))
        # kiln's AdamW computes its bias corrections as tensor ops (capturable) so that the whole
        # step compiles into one graph; torch's CPU AdamW has no capturable mode (torch.compile
        # traces the host-side step counter instead). zero_grad runs before the step, outside it
        # (docs/compile.md, Training steps): same math in both libraries.
        opt = lib.optim.AdamW(model.parameters(), lr=1e-4, **({"capturable": True} if lib.__name__ == "kiln" else {}))

        def step(idx, tgt):
            logits = gpt_logits(lib, model, idx)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.view(-1))
            loss.backward()
            opt.step()
            return loss
        step.before_call = opt.zero_grad
        return step, (idx, tgt), 0, 3 * flops
    raise SystemExit(f"unknown workload {name}")


def inference(fn):
    """Marks fn to run under no_grad. The child applies no_grad around the (compiled) function:
    inside a kiln-compiled function, no_grad around parameters that require grad is a graph break
    (capture runs the rest in lazy segments), which torch.compile traces through."""
    fn.no_grad = True
    return fn


def gpt_model(lib):
    """The workloads' GPT: examples/gpt.py in kiln, its torch twin from the parity test."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    if lib.__name__ == "kiln":
        import gpt
        return gpt.GPT(**GPT_CFG)
    from test_gpt_parity import TorchGPT
    return TorchGPT(**GPT_CFG)


def gpt_logits(lib, m, idx):
    x = m.wte(idx) + m.wpe(lib.arange(idx.shape[1]))
    for b in m.blocks:
        x = b(x)
    return m.head(m.lnf(x))


def openblas_matmul():
    """The matmul workload as one cblas_sgemm call into the OpenBLAS that kiln loaded (the same
    library, kernel set and threads), on numpy arrays, into one preallocated output: the bar kiln's
    matmul is held to (within 5%)."""
    import ctypes
    import numpy as np
    import kiln  # noqa: F401  loads (and configures) the OpenBLAS kiln runs
    blas = ctypes.CDLL("libopenblas.so.0")
    n = 1024
    a, b, c = (np.random.default_rng(i).standard_normal((n, n), dtype=np.float32) for i in range(3))
    ptr = ctypes.c_void_p
    row_major, no_trans = 101, 111

    def sgemm(a, b):
        blas.cblas_sgemm(row_major, no_trans, no_trans, n, n, n, ctypes.c_float(1), ptr(a.ctypes.data), n,
                         ptr(b.ctypes.data), n, ctypes.c_float(0), ptr(c.ctypes.data), n)
    return sgemm, (a, b), 0, 2 * n ** 3


# ---------------------------------------------------------------- one measurement (a child process)
def interleaved_matmul(mode, reps):
    """kiln's matmul (compiled in `mode`) and the direct cblas_sgemm call timed in turn in one
    process (A B A B): the 5% bar is finer than the spread between separate processes' runs on a
    shared machine (the same sgemm measured 8.4 and 9.9 ms in two processes of one quiet run)."""
    import kiln
    sgemm, (a_np, b_np), _, _ = openblas_matmul()
    kiln.manual_seed(0)
    fn, (a, b), _, _ = workload(kiln, "matmul")
    backend, _, cmode = mode.partition(":")[2].partition(":")
    fn = kiln.compile(fn, backend=backend, mode=cmode or None)
    calls = {"kiln_ms": lambda: fn(a, b), "direct_ms": lambda: sgemm(a_np, b_np)}
    times = {k: [] for k in calls}
    for _ in range(3):
        for f in calls.values():
            f()
    for _ in range(reps):
        for k, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    out = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    print(json.dumps(dict(out, rounds=reps)), flush=True)


def child(lib_name, name, mode, reps, first_only):
    if lib_name == "interleaved":
        return interleaved_matmul(mode, reps)
    if lib_name == "torch":
        import torch as lib
        lib.set_num_threads(os.cpu_count())
    elif lib_name == "kiln":
        import kiln as lib
    if lib_name == "openblas":
        fn, args, nbytes, flops = openblas_matmul()
    else:
        lib.manual_seed(0)
        fn, args, nbytes, flops = workload(lib, name)
    before = getattr(fn, "before_call", None)  # timed with the call (the training step's zero_grad)
    no_grad = getattr(fn, "no_grad", False)
    if mode.startswith("compile"):  # "compile" (torch) or "compile:<backend>[:<mode>]" (kiln)
        backend, _, cmode = mode.partition(":")[2].partition(":")
        fn = lib.compile(fn) if lib_name == "torch" else lib.compile(fn, backend=backend, mode=cmode or None)
    if no_grad:
        fn = lib.no_grad()(fn)

    def call():
        if before:
            before()
        fn(*args)
    t0 = time.perf_counter()
    call()
    first_s = time.perf_counter() - t0
    out = dict(first_call_s=first_s)
    if not first_only:
        for _ in range(2):
            call()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        out.update(median_ms=1e3 * statistics.median(times), bytes=nbytes, flops=flops)
    print(json.dumps(out), flush=True)


def run_child(lib_name, name, mode, reps, cache, first_only=False):
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(cache, "kiln"), TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "torch"),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), os.environ.get("PYTHONPATH", "")]))
    # Both libraries on every core: kiln's kernels otherwise drop to one thread while the load
    # average is high (docs/performance.md, Threads), and torch keeps its threads.
    env.setdefault("KILN_IGNORE_LOAD", "1")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", lib_name, name, mode, "--reps", str(reps)]
    if first_only:
        cmd.append("--first-only")
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        return dict(error=lines[-1] if lines else f"exit {p.returncode}")
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the machine's memcpy bandwidth
def memcpy_bandwidth():
    """Bytes/s of the best copy this machine does: numpy (one thread) or torch's copy_ (all cores);
    a copy reads and writes each byte, so 2 x size per copy."""
    import numpy as np
    import torch
    torch.set_num_threads(os.cpu_count())
    n = 64 << 20  # 256 MiB of float32: far beyond the caches
    best = 0.0
    src, dst = np.ones(n, np.float32), np.zeros(n, np.float32)
    ts, td = torch.from_numpy(src), torch.from_numpy(dst)
    for copy in (lambda: np.copyto(dst, src), lambda: td.copy_(ts)):
        copy()
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            copy()
            times.append(time.perf_counter() - t0)
        best = max(best, 2 * n * 4 / statistics.median(times))
    return best


def machine():
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


# ---------------------------------------------------------------- the table
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--child", nargs=3, metavar=("LIB", "WORKLOAD", "MODE"))
    ap.add_argument("--first-only", action="store_true")
    a = ap.parse_args()
    if a.child:
        return child(*a.child, a.reps or 10, a.first_only)

    sys.path.insert(0, os.path.join(ROOT, "python"))
    import kiln
    import torch
    backends = list(kiln.list_backends())
    names = [w for w in a.workloads.split(",") if w]
    bw = memcpy_bandwidth()
    print(f"kiln vs PyTorch {torch.__version__} on the CPU: {machine()}; memcpy {bw / 1e9:.1f} GB/s "
          f"({'quick' if a.quick else 'full'} run, {datetime.date.today()})", flush=True)
    modes = [("kiln", "eager")] + [("kiln", "compile:" + b) for b in backends] + [("torch", "eager"), ("torch", "compile")]
    rows, notes = [], []
    header = (f"{'workload':<15} {'mode':<24} {'median ms':>10} {'x peer best':>11} {'% memcpy':>9} {'GFLOP/s':>8} "
              f"{'cold s':>7} {'warm s':>7} {'cold +s':>7} {'warm +ms':>8}")
    print(header)
    for name in names:
        reps = a.reps or ((3 if a.quick else 10) if name == "gpt_tiny_train" else (5 if a.quick else 20))
        results = {}
        for lib_name, mode in modes + ([("openblas", "direct")] if name == "matmul" else []):
            with tempfile.TemporaryDirectory() as cache:
                r = run_child(lib_name, name, mode, reps, cache)
                if mode.startswith("compile") and "error" not in r:
                    r["warm_s"] = run_child(lib_name, name, mode, reps, cache, first_only=True).get("first_call_s")
            results[(lib_name, mode)] = r
        peer = [r["median_ms"] for (lib_name, _), r in results.items() if lib_name == "torch" and "median_ms" in r]
        best = min(peer) if peer else None
        for (lib_name, mode), r in results.items():
            row = dict(workload=name, mode=f"{lib_name} {mode}", **r)
            if "median_ms" in r:
                s = r["median_ms"] / 1e3
                row["ratio"] = r["median_ms"] / best if best else None
                row["memcpy_frac"] = r["bytes"] / s / bw if r["bytes"] and not r["flops"] else None
                row["gflops"] = r["flops"] / s / 1e9 if r["flops"] else None
                if mode.startswith("compile"):
                    row["cold_over_s"] = r["first_call_s"] - s
                    row["warm_over_ms"] = (r["warm_s"] - s) * 1e3 if r.get("warm_s") is not None else None
            rows.append(row)
            print(format_row(row), flush=True)
        if name == "matmul" and all("median_ms" in results.get(k, {}) for k in [("kiln", "eager"), ("openblas", "direct")]):
            print(f"matmul: kiln eager / OpenBLAS direct = "
                  f"{results[('kiln', 'eager')]['median_ms'] / results[('openblas', 'direct')]['median_ms']:.3f}", flush=True)
        if name == "matmul" and "inductor" in backends:
            with tempfile.TemporaryDirectory() as cache:
                r = run_child("interleaved", name, "compile:inductor", 3 * reps, cache)
            if "error" not in r:
                notes.append(f"matmul, interleaved in one process ({r['rounds']} rounds): kiln compile:inductor "
                             f"{r['kiln_ms']:.2f} ms, OpenBLAS direct {r['direct_ms']:.2f} ms, ratio "
                             f"{r['kiln_ms'] / r['direct_ms']:.3f} (bar: within 5%)")
                print(notes[-1], flush=True)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(rows, bw, torch.__version__, a.quick) + "".join(f"\n{n}\n" for n in notes))
        print(f"wrote {a.markdown}")


def fmt(v, spec):
    """v formatted, or a dash as wide as the spec's width when there is no value."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return format(v, spec) if isinstance(v, (int, float)) else "-".rjust(width)


def format_row(r):
    if "error" in r:
        return f"{r['workload']:<15} {r['mode']:<24} error: {r['error'][:120]}"
    pct = r["memcpy_frac"] * 100 if r.get("memcpy_frac") is not None else None
    return (f"{r['workload']:<15} {r['mode']:<24} {r['median_ms']:10.2f} {fmt(r.get('ratio'), '11.2f')} {fmt(pct, '8.0f')}  "
            f"{fmt(r.get('gflops'), '8.1f')} {r['first_call_s']:7.2f} {fmt(r.get('warm_s'), '7.2f')} "
            f"{fmt(r.get('cold_over_s'), '7.2f')} {fmt(r.get('warm_over_ms'), '8.0f')}")


def markdown(rows, bw, torch_version, quick):
    out = [f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}, "
           f"PyTorch {torch_version}, memcpy {bw / 1e9:.1f} GB/s; command: "
           f"`PYTHONPATH=python python3 bench/cpu.py{' --quick' if quick else ''}`.", "",
           "| workload | mode | median ms | x peer best | % memcpy | GFLOP/s | cold first call s | warm first call s | cold compile s (first - median) | warm start ms (first - median) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['workload']} | {r['mode']} | error: {r['error'][:80]} | | | | | | | |")
            continue
        pct = r["memcpy_frac"] * 100 if r.get("memcpy_frac") is not None else None
        out.append(f"| {r['workload']} | {r['mode']} | {r['median_ms']:.2f} | {fmt(r.get('ratio'), '.2f')} | "
                   f"{fmt(pct, '.0f')} | {fmt(r.get('gflops'), '.1f')} | {r['first_call_s']:.2f} | {fmt(r.get('warm_s'), '.2f')} | "
                   f"{fmt(r.get('cold_over_s'), '.2f')} | {fmt(r.get('warm_over_ms'), '.0f')} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
