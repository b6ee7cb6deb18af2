"""Per-call overhead of small ops from Python: kiln vs PyTorch on two 16-element float32
tensors (the data is tiny, so the time is the binding, dispatch and allocation path).

    PYTHONPATH=python python3 bench/python_overhead.py [--number 20000] [--runs 7]

Each case is timed with timeit (`number` calls per run); the table gives the median over `runs`
runs in microseconds per call and kiln's ratio to torch (< 1: kiln is faster).

A second table times compiled functions, the per-call cost of a compiled graph: `x * 2 + 1` on 16
elements (one kernel once fused) and a sum of 10 inputs, in kiln eager, kiln compiled with every
registered backend ("inductor" once it exists), torch eager and torch.compile, in the same run.
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


def time_fn(lib, fn, n_inputs, number, runs):
    args = [lib.rand(16, dtype=lib.float32) for _ in range(n_inputs)]
    for _ in range(3):  # the first call compiles
        timeit.timeit(lambda: fn(*args), number=number // 10 + 1)
    times = timeit.repeat(lambda: fn(*args), number=number, repeat=runs)
    return statistics.median(times) / number * 1e6


def compiled_table(number, runs):
    modes = [("kiln eager", kiln, lambda f: f)]
    modes += [(f"kiln compile:{b}", kiln, lambda f, b=b: kiln.compile(f, backend=b)) for b in kiln.list_backends()]
    modes += [("torch eager", torch, lambda f: f), ("torch.compile", torch, torch.compile)]
    print(f"\ncompiled functions, us per call (median of {runs} runs x {number} calls)")
    print(f"{'mode':<24} {'x * 2 + 1':>10} {'10-input sum':>13}")
    for label, lib, wrap in modes:
        a = time_fn(lib, wrap(one_kernel), 1, number, runs)
        b = time_fn(lib, wrap(sum10), 10, number, runs)
        print(f"{label:<24} {a:10.2f} {b:13.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    torch.set_num_threads(1)
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
