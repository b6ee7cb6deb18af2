"""Compiled functions that run in segments (after a graph break) or call other compiled functions
(docs/compile.md): a call leaves nothing alive behind it (no reference cycle holds its outputs
until the garbage collector runs), and a compiled function called inside another one's trace or
segments runs inline there (kiln.explain of a compiled function works)."""
import gc
import os

import numpy as np
import torch

import kiln


def numpy(t):
    return np.asarray(t.detach().numpy())


def cyclic_garbage_of(fn, *args):
    """The objects fn(*args) left in reference cycles that hold kiln's tensors or come from kiln's code
    (found by the collector, not by refcounts). Only those: another thread of the process (pytest-xdist's
    channel, a finished test's workers) may leave garbage of its own while fn runs."""
    kiln_dir = os.path.dirname(kiln.__file__)

    def ours(o):
        if isinstance(o, kiln.Tensor):
            return True
        if isinstance(o, (list, tuple)):
            return any(isinstance(v, kiln.Tensor) for v in o)
        if isinstance(o, dict):
            return any(isinstance(v, kiln.Tensor) for v in o.values())
        code = getattr(o, "__code__", None) or getattr(o, "f_code", None)
        return code is not None and code.co_filename.startswith(kiln_dir)

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fn(*args)  # the result is dropped at once
        gc.collect()
        found = [o for o in gc.garbage if ours(o)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    return len(found)


def test_the_garbage_count_finds_a_cycle_holding_outputs():
    def leaky(x):
        out = [x * 2]
        cycle = [out]
        cycle.append(cycle)  # a cycle that keeps the output alive until the collector runs
        return out[0]
    assert cyclic_garbage_of(leaky, kiln.randn(4)) > 0


def test_a_segmented_call_leaves_no_cycle_holding_its_outputs():
    # The item() breaks the graph: every call runs lazily, in segments, through the Python side of
    # kiln.compile. Its outputs (4 MB here) must go when the caller drops them: before, a recursive
    # closure flattening them was a cycle, and RSS grew ~4 MB a call until the collector ran.
    lin = kiln.nn.Linear(256, 2048)
    f = kiln.compile(kiln.no_grad()(lambda x: lin(x) * (2.0 if x.sum().item() > -1e9 else 1.0)))
    x = kiln.randn(512, 256)
    for _ in range(3):
        f(x)
    assert f.explain().break_count == 1
    assert cyclic_garbage_of(f, x) == 0
    # The issue's own case (once a break too; now one graph: test_compile_no_grad.py).
    g = kiln.compile(kiln.no_grad()(lambda x: lin(x)))
    g(x)
    assert cyclic_garbage_of(g, x) == 0
    # A call on the slow path of a whole graph too (keyword arguments, a dict result).
    g = kiln.compile(lambda a, *, b: {"sum": a + b, "parts": [a, b * 2]})
    g(x, b=x)
    assert cyclic_garbage_of(lambda: g(x, b=x)) == 0


def test_explain_of_a_compiled_function_that_breaks():
    lin = kiln.nn.Linear(16, 8)
    f = kiln.compile(kiln.no_grad()(lambda x: lin(x) * (2.0 if x.sum().item() > -1e9 else 1.0)))
    x = kiln.randn(4, 16)
    f(x)
    e = kiln.explain(f, x)  # traced f's call of f: it used to say "a fake tensor reached lazy mode"
    assert e.break_count == 1 and "item()" in e.breaks[0][0]
    w, b = torch.from_numpy(numpy(lin.weight)), torch.from_numpy(numpy(lin.bias))
    np.testing.assert_allclose(numpy(f(x)), 2 * (torch.from_numpy(numpy(x)) @ w.T + b).numpy(), rtol=1e-5, atol=1e-5)


def test_a_compiled_function_inside_another_is_inlined():
    inner = kiln.compile(lambda a: (a * 2).exp())
    outer = kiln.compile(lambda a: inner(a + 1).sum(1), fullgraph=True)
    xs = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    x = kiln.tensor(xs)
    inner(x)  # inner has a graph of its own already
    got = outer(x)
    e = outer.explain()
    assert e.graph_count == 1 and not e.breaks
    assert "exp(" in e.graphs[0] and "sum(" in e.graphs[0]  # the inner ops are in the outer graph
    np.testing.assert_allclose(numpy(got), ((torch.from_numpy(xs) + 1) * 2).exp().sum(1).numpy(), rtol=1e-6)


def test_a_breaking_compiled_function_inside_another():
    inner = kiln.compile(lambda a: a * 3 if a.sum().item() > -1e9 else a)  # item(): a break
    outer = kiln.compile(lambda a: inner(a - 1) + 1)
    xs = np.random.default_rng(1).standard_normal((6,)).astype(np.float32)
    x = kiln.tensor(xs)
    inner(x)
    for _ in range(2):
        np.testing.assert_allclose(numpy(outer(x)), ((torch.from_numpy(xs) - 1) * 3 + 1).numpy(), rtol=1e-6)
    assert outer.explain().break_count >= 1
