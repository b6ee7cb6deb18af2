"""Per-call overhead of small ops from Python: kiln vs PyTorch on two 16-element float32
tensors (the data is tiny, so the time is the binding, dispatch and allocation path).

    PYTHONPATH=python python3 bench/python_overhead.py [--number 20000] [--runs 7]

Each case is timed with timeit (`number` calls per run); the table gives the median over `runs`
runs in microseconds per call and kiln's ratio to torch (< 1: kiln is faster).

A second table times compiled functions, the per-call cost of a compiled graph: `x * 2 + 1` on 16
elements (one kernel once fused) and a sum of 10 inputs, in kiln eager, kiln compiled with the
"eager" and "inductor" backends, torch eager and torch.compile, in the same run. The modes are
timed in turn, round after round (A B C A B C ...), so a neighbour's load falls on all of them
alike; the table gives each mode's median over the rounds and its ratio to torch.compile (the
bar of issue 11: kiln compiled with "inductor" at most 0.5).
"""
import argparse
import statistics
import timeit

import torch

import kiln

CASES = [
    ("add(x, y)", "lib.add(x, y)"),
    ("x + y", "x + y"),
    ("x.sum()", "x.sum()"),
    ("x.mul(2.0)", "x.mul(2.0)"),
    ("x.relu()", "x.relu()"),
    ("x.view(4, 4)", "x.view(4, 4)"),
    ("x[3]", "x[3]"),
    ("x.shape", "x.shape"),
    ("add_(x, y) in place", "x.add_(y)"),
    ("x + y (requires_grad)", "g + y"),
]


def time_case(lib, stmt, number, runs):
    x = lib.rand(16, dtype=lib.float32)
    y = lib.rand(16, dtype=lib.float32)
    g = lib.rand(16, dtype=lib.float32).requires_grad_()
    env = {"lib": lib, "x": x, "y": y, "g": g}
    for _ in range(3):  # warm up caches and lazy initialisation
        timeit.timeit(stmt, globals=env, number=number // 10 + 1)
    times = timeit.repeat(stmt, globals=env, number=number, repeat=runs)
    return statistics.median(times) / number * 1e6


def one_kernel(x):
    return x * 2 + 1


def sum10(a, b, c, d, e, f, g, h, i, j):
    return a + b + c + d + e + f + g + h + i + j


def compiled_table(number, runs):
    modes = [("kiln eager", kiln, lambda f: f),
             ("kiln compile:eager", kiln, lambda f: kiln.compile(f, backend="eager")),
             ("kiln compile:inductor", kiln, lambda f: kiln.compile(f, backend="inductor")),
             ("torch eager", torch, lambda f: f), ("torch.compile", torch, torch.compile)]
    cases = [(one_kernel, 1), (sum10, 10)]
    calls = {}  # (mode, case) -> a call with its arguments, compiled and warmed up
    for label, lib, wrap in modes:
        for fn, n in cases:
            f, args = wrap(fn), [lib.rand(16, dtype=lib.float32) for _ in range(n)]
            call = (lambda f=f, args=args: f(*args))
            for _ in range(3):  # the first call compiles
                timeit.timeit(call, number=number // 10 + 1)
            calls[label, fn] = call
    times = {k: [] for k in calls}
    for _ in range(runs):  # interleaved: every mode once per round
        for k, call in calls.items():
            times[k].append(timeit.timeit(call, number=number) / number * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\ncompiled functions, us per call (median of {runs} interleaved rounds x {number} calls)")
    print(f"{'mode':<24} {'x * 2 + 1':>10} {'/torch.compile':>15} {'10-input sum':>13} {'/torch.compile':>15}")
    for label, _, _ in modes:
        a, b = med[label, one_kernel], med[label, sum10]
        ra, rb = a / med["torch.compile", one_kernel], b / med["torch.compile", sum10]
        print(f"{label:<24} {a:10.2f} {ra:15.2f} {b:13.2f} {rb:15.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--compiled-only", action="store_true", help="only the compiled-functions table")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.compiled_only:
        compiled_table(a.number // 4, a.runs)
        return
    print(f"per-call time, median of {a.runs} runs x {a.number} calls, 16-element float32 tensors "
          f"(torch {torch.__version__})")
    print(f"{'case':<24} {'kiln us':>9} {'torch us':>9} {'kiln/torch':>11}")
    for name, stmt in CASES:
        k = time_case(kiln, stmt, a.number, a.runs)
        t = time_case(torch, stmt, a.number, a.runs)
        print(f"{name:<24} {k:9.3f} {t:9.3f} {k / t:11.2f}", flush=True)
    compiled_table(a.number // 4, a.runs)


if __name__ == "__main__":
    main()
