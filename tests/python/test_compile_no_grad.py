"""no_grad, enable_grad, set_grad_enabled and inference_mode inside a compiled function
(docs/compile.md, "Grad mode inside a compiled function"): traced, not a graph break. Ops under
no_grad read the inputs that need grad detached, so they record no history, their results do not
require grad, and the AOT split treats them as constants of the backward. Outputs and gradients
equal eager kiln and PyTorch on every backend."""
import numpy as np
import pytest
import torch

import kiln

BACKENDS = ["eager", "aot_eager", "inductor"]


def numpy(t):
    return np.asarray(t.detach().numpy())


def rand(*shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(a, b):
    np.testing.assert_allclose(numpy(a), b.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_no_grad_function_is_one_graph(backend):
    lin = kiln.nn.Linear(16, 8)
    f = kiln.compile(kiln.no_grad()(lambda x: lin(x)), backend=backend, fullgraph=True)
    xs = rand(4, 16, seed=0)
    got = f(kiln.tensor(xs))
    assert not got.requires_grad
    e = f.explain()
    assert e.graph_count == 1 and not e.breaks
    w, b = torch.from_numpy(numpy(lin.weight)), torch.from_numpy(numpy(lin.bias))
    close(got, torch.from_numpy(xs) @ w.T + b)
    f(kiln.tensor(xs))
    assert f.explain().graph_count == 1  # the cached graph serves the next call


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_grad_regions_give_eagers_and_torchs_gradients(backend):
    xs, ws = rand(6, 5, seed=1), rand(5, 3, seed=2)

    def body(x, w, lib, no_grad, enable_grad):
        y = x @ w
        with no_grad():
            s = w.abs().amax()      # a lifted tensor that needs grad, read under no_grad
            m = x.mean()            # an argument that needs grad
            with enable_grad():
                z = (x * 3).sum(1, keepdim=True)  # back in the graph's mode: differentiated
        return y / s + m + z

    w = kiln.tensor(ws).requires_grad_()
    f = kiln.compile(lambda x: body(x, w, kiln, kiln.no_grad, kiln.enable_grad), backend=backend, fullgraph=True)
    x = kiln.tensor(xs).requires_grad_()
    out = f(x)
    assert out.requires_grad
    out.sum().backward()
    e = f.explain()
    assert e.graph_count == 1 and not e.breaks

    ex, ew = kiln.tensor(xs).requires_grad_(), kiln.tensor(ws).requires_grad_()
    want = body(ex, ew, kiln, kiln.no_grad, kiln.enable_grad)
    want.sum().backward()
    tx, tw = torch.from_numpy(xs).requires_grad_(), torch.from_numpy(ws).requires_grad_()
    t = body(tx, tw, torch, torch.no_grad, torch.enable_grad)
    t.sum().backward()
    for got, eager, ref in [(out, want, t), (x.grad, ex.grad, tx.grad), (w.grad, ew.grad, tw.grad)]:
        close(got, ref)
        close(got, torch.from_numpy(numpy(eager)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_set_grad_enabled_and_inference_mode(backend):
    xs = rand(7, seed=3)

    def fn(x):
        with kiln.inference_mode():
            a = x.exp()
        kiln.set_grad_enabled(False)
        b = x * x
        kiln.set_grad_enabled(True)
        return a * x + b

    f = kiln.compile(fn, backend=backend, fullgraph=True)
    x = kiln.tensor(xs).requires_grad_()
    out = f(x)
    out.sum().backward()
    assert f.explain().graph_count == 1
    tx = torch.from_numpy(xs).requires_grad_()
    with torch.no_grad():
        a, b = tx.exp(), tx * tx
    t = a * tx + b
    t.sum().backward()
    close(out, t)
    close(x.grad, tx.grad)  # exp(x): a and b are constants of the backward


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_no_grad_around_a_value_computed_with_grad_still_breaks(backend):
    xs = rand(5, seed=4)

    def fn(x):
        h = x * 2
        with kiln.no_grad():
            s = h.sum()  # h has history in the graph: this runs in a segment of its own
        return h * s

    f = kiln.compile(fn, backend=backend)
    x = kiln.tensor(xs).requires_grad_()
    out = f(x)
    out.sum().backward()
    assert f.explain().break_count == 1
    tx = torch.from_numpy(xs).requires_grad_()
    h = tx * 2
    with torch.no_grad():
        s = h.sum()
    (h * s).sum().backward()
    close(out, h * s)
    close(x.grad, tx.grad)


@pytest.mark.parametrize("backend", BACKENDS)
def test_detach_of_an_argument_stops_its_gradient(backend):
    xs = rand(6, seed=5)
    f = kiln.compile(lambda a: (a.detach() * a).exp().sum(), backend=backend, fullgraph=True)
    x = kiln.tensor(xs).requires_grad_()
    f(x).backward()  # (compiled, the detached factor used to be differentiated too: twice the gradient)
    tx = torch.from_numpy(xs).requires_grad_()
    (tx.detach() * tx).exp().sum().backward()
    close(x.grad, tx.grad)
    assert f.explain().graph_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_detach_of_a_computed_value_runs_eagerly_with_eagers_gradient(backend):
    # A graph has no stop-gradient: a detach of a value computed with grad would be taken for the
    # value (the gradient differentiated through it). The function runs eagerly instead.
    xs = rand(6, seed=6)
    f = kiln.compile(lambda a: ((a * 2).detach() * a).sum(), backend=backend)
    x = kiln.tensor(xs).requires_grad_()
    for _ in range(2):
        x.grad = None
        f(x).backward()
        tx = torch.from_numpy(xs).requires_grad_()
        ((tx * 2).detach() * tx).sum().backward()
        close(x.grad, tx.grad)
    e = f.explain()
    assert e.eager_fallback and "detach()" in e.breaks[0][0]
    with pytest.raises(kiln.Error, match="detach"):
        kiln.compile(lambda a: ((a * 2).detach() * a).sum(), backend=backend, fullgraph=True)(x)
