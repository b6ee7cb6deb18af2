"""Python custom ops (kiln.tile.op) inside compiled functions (docs/tile.md, Custom ops): no graph
break, results equal to eager kiln and to PyTorch, and under the "inductor" backend a pointwise-
shaped kernel fuses with the ops around it into one generated kernel, as a C++ tile op does. An op
whose function does anything but one such launch stays an extern call (and is still right)."""
import re

import numpy as np
import pytest
import torch

import kiln


@kiln.tile.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr):
    pid = kiln.tile.program_id(0)
    offs = pid * BLOCK + kiln.tile.arange(0, BLOCK)
    mask = offs < n
    kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs, mask=mask) + kiln.tile.load(y_ptr + offs, mask=mask), mask=mask)


@kiln.tile.op("test_compile::vector_add")
def vector_add(x, y):
    out = kiln.empty_like(x)
    n = out.numel()
    _add_kernel[lambda meta: (kiln.tile.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=256)
    return out


vector_add.register_fake(lambda x, y: kiln.empty_like(x))


@kiln.tile.op("test_compile::add_twice")
def add_twice(x, y):  # two launches: the compiler cannot read it as one function of the index
    out = kiln.empty_like(x)
    n = out.numel()
    _add_kernel[(kiln.tile.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    _add_kernel[(kiln.tile.cdiv(n, 256),)](out, y, out, n, BLOCK=256)
    return out


add_twice.register_fake(lambda x, y: kiln.empty_like(x))


def kernels(capfd, monkeypatch, fn, *args):
    """fn(*args) and the kinds of the nodes (kernels and extern calls) inductor planned for it
    (with the disk cache off, so the graph is lowered and its fusion logged in this process)."""
    monkeypatch.setenv("KILN_DISABLE_CACHE", "1")
    capfd.readouterr()
    kiln.set_logs("fusion")
    try:
        out = fn(*args)
    finally:
        kiln.set_logs("")
    err = capfd.readouterr().err
    assert "inductor kernels and the graph nodes fused into each:" in err
    section = err.split("inductor kernels and the graph nodes fused into each:")[1]
    return out, re.findall(r"^\S+ \((\w+)\):", section, flags=re.M)


def numpy(t):
    return np.asarray(t.detach().numpy())


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_the_python_vector_add_fuses_with_its_neighbours(capfd, monkeypatch):
    xs, ys = rand(5000, seed=1), rand(5000, seed=2)
    x, y = kiln.tensor(xs), kiln.tensor(ys)
    f = kiln.compile(lambda a, b: vector_add(a * 2, b).relu() + 1, backend="inductor", fullgraph=True)
    got, kinds = kernels(capfd, monkeypatch, f, x, y)
    assert kinds == ["pointwise"]  # the mul, the op, the relu and the add: one kernel, no extern
    e = f.explain()
    assert e.graph_count == 1 and not e.breaks
    assert 'custom("test_compile::vector_add"' in e.graphs[0]
    np.testing.assert_allclose(numpy(got), numpy(vector_add(x * 2, y).relu() + 1), rtol=0, atol=0)
    want = (torch.from_numpy(xs) * 2 + torch.from_numpy(ys)).relu() + 1
    np.testing.assert_allclose(numpy(got), want.numpy(), rtol=0, atol=0)


def test_the_fused_op_follows_the_inputs_shape_and_layout():
    a = rand(30, 50, seed=3)
    f = kiln.compile(lambda u, v: vector_add(u.exp(), v) * v, backend="inductor")
    for u, v, tu, tv in [(kiln.tensor(a), kiln.tensor(a), torch.from_numpy(a), torch.from_numpy(a)),
                         (kiln.tensor(a).t(), kiln.tensor(a).t(), torch.from_numpy(a).t(), torch.from_numpy(a).t())]:
        got = f(u, v)
        np.testing.assert_allclose(numpy(got), ((tu.exp() + tv) * tv).numpy(), rtol=1e-6, atol=1e-6)


def test_an_op_that_is_not_one_pointwise_launch_stays_an_extern(capfd, monkeypatch):
    xs, ys = rand(1000, seed=4), rand(1000, seed=5)
    x, y = kiln.tensor(xs), kiln.tensor(ys)
    f = kiln.compile(lambda a, b: add_twice(a * 2, b).relu(), backend="inductor", fullgraph=True)
    got, kinds = kernels(capfd, monkeypatch, f, x, y)
    assert "extern" in kinds
    want = (torch.from_numpy(xs) * 2 + 2 * torch.from_numpy(ys)).relu()
    np.testing.assert_allclose(numpy(got), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_the_python_op_is_differentiable_compiled(backend):
    xs, ys = rand(300, seed=6), rand(300, seed=7)
    vector_add.register_autograd(lambda ctx, g: (g, g))
    x, y = kiln.tensor(xs).requires_grad_(), kiln.tensor(ys).requires_grad_()
    f = kiln.compile(lambda a, b: (vector_add(a, b).relu() * a).sum(), backend=backend, fullgraph=True)
    f(x, y).backward()
    tx, ty = torch.from_numpy(xs).requires_grad_(), torch.from_numpy(ys).requires_grad_()
    ((tx + ty).relu() * tx).sum().backward()
    np.testing.assert_allclose(numpy(x.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(numpy(y.grad), ty.grad.numpy(), rtol=1e-5, atol=1e-6)
