"""Cost of kiln.compile's guards on Python values (docs/performance.md, "Guards on Python values").

    PYTHONPATH=python python3 bench/guard_cost.py [--number 20000] [--runs 7]

Times a cached compiled call (eager backend) of `x + c` on a 16-element float32 tensor, where c is
computed from 0, 3, 10 or 100 Python globals the function reads (each a guard: a dict lookup and
a compare in C++ on every call), and the guard tree's evaluation alone with 10 and 100 guarded
values (CPU time). Run it with PYTHONPATH of a build without the guards for the "before" column (the guard
tree rows then print as n/a). The fastest of `runs` runs of `number` calls (the least disturbed
by other processes), in microseconds per call.
"""
import argparse
import sys
import time
import timeit

import kiln


def reader(n):
    """A function returning x + (g0 + ... + g{n-1}), reading n globals of this module."""
    for i in range(n):
        globals()[f"g{i}"] = float(i)
    body = " + ".join(f"g{i}" for i in range(n)) or "0.0"
    env = globals()
    exec(f"def f{n}(x):\n    return x + ({body})\n", env)
    return env[f"f{n}"]


def per_call(stmt, env, number, runs):
    # CPU time of this process (time.process_time), not wall time: the development machine is
    # shared, and a busy neighbour should not show up as guard cost.
    for _ in range(3):  # warm up caches (and trace)
        timeit.timeit(stmt, globals=env, number=number // 10 + 1, timer=time.process_time)
    times = timeit.repeat(stmt, globals=env, number=number, repeat=runs, timer=time.process_time)
    return min(times) / number * 1e6


def tree_of(n):
    """A guard tree with n guarded globals, as a trace reading them builds (None if unavailable)."""
    if not hasattr(kiln._C, "_GuardTree"):
        return None
    from kiln.nn import module
    t = kiln._C._GuardTree(module._config)
    g = globals()
    for i in range(n):
        g[f"g{i}"] = float(i)
        node = t.add("global", -1, g, __builtins__.__dict__ if hasattr(__builtins__, "__dict__") else __builtins__,
                     f"g{i}", f"g{i}")
        t.guard(node, float(i), "value", "")
    assert t.check(None) is None
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    x = kiln.rand(16, dtype=kiln.float32)
    print(f"per-call CPU time, fastest of {a.runs} runs x {a.number} calls (python {sys.version.split()[0]})")
    print(f"{'case':<44} {'us':>8}")
    base = None
    for n in (0, 3, 10, 100):
        f = kiln.compile(reader(n))
        t = per_call("f(x)", {"f": f, "x": x}, a.number, a.runs)
        base = t if base is None else base
        assert f.explain().graph_count == 1
        print(f"{f'compiled x + c, c from {n} globals':<44} {t:8.3f}   (+{t - base:.3f} over 0 globals)", flush=True)
    for n in (10, 100):
        t = tree_of(n)
        cost = per_call("t.check(None)", {"t": t}, a.number, a.runs) if t is not None else None
        print(f"{f'guard tree alone, {n} guarded values':<44} {'n/a' if cost is None else f'{cost:8.3f}'}", flush=True)
    print(f"{'eager x + 1.0 (for scale)':<44} {per_call('x + 1.0', {'x': x}, a.number, a.runs):8.3f}")


if __name__ == "__main__":
    main()
