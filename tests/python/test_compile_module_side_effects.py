"""A compiled forward that assigns a tensor to a module attribute (issue 14, item 2): the store is
replayed with the graph's real output after each call (the value is an extra graph output), so
the attribute holds a real, differentiable tensor equal to torch's, with one graph for all calls."""
import gc
import weakref

import numpy as np
import pytest
import torch

import kiln


def build(M):
    class Head(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = M.nn.Linear(8, 3)
            self.last_logits = None

        def forward(self, h):
            out = self.fc(h)
            self.last_logits = out  # a submodule's attribute, reached from the compiled module
            return out

    class Net(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = M.nn.Linear(6, 8)
            self.head = Head()
            self.last_loss = None

        def forward(self, x, y):
            logits = self.head(M.tanh(self.fc1(x)))
            loss = M.nn.functional.cross_entropy(logits, y)
            self.last_loss = loss
            self.last_loss = loss * 2  # assigned twice: the last value is what stays
            return logits

    net = Net()
    with M.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(M.arange(p.numel(), dtype=M.float32).reshape(p.shape).sin() * 0.3 + i * 0.01)
    return net


def run(M, calls=10):
    net = build(M)
    model = torch.compile(net, backend="eager") if M is torch else kiln.compile(net)
    opt = M.optim.SGD(net.parameters(), lr=0.1)
    losses, logits, grads = [], [], []
    for step in range(calls):
        x = M.arange(24, dtype=M.float32).reshape(4, 6).cos() * (1 + 0.1 * step)
        y = M.tensor([0, 2, 1, step % 3])
        model(x, y)
        opt.zero_grad()
        net.last_loss.backward()  # the attribute's value is differentiable
        grads.append(np.concatenate([p.grad.numpy().ravel() for p in net.parameters()]))
        opt.step()
        losses.append(net.last_loss.item())
        logits.append(net.head.last_logits.detach().numpy().copy())
    return model, np.array(losses), np.array(logits), np.array(grads)


def test_attribute_store_is_replayed_with_real_values():
    model, losses, logits, grads = run(kiln)
    _, t_losses, t_logits, t_grads = run(torch)
    torch._dynamo.reset()
    gc.collect()
    np.testing.assert_allclose(losses, t_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logits, t_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads, t_grads, rtol=1e-5, atol=1e-6)
    e = model.explain()
    assert e.graph_count == 1 and e.break_count == 0, str(e)
    assert not e.recompile_reasons, e.recompile_reasons


def test_replayed_attribute_before_any_call_and_after_eager_assignment():
    net = build(kiln)
    model = kiln.compile(net)
    x, y = kiln.randn(4, 6), kiln.tensor([0, 1, 2, 0])
    assert net.last_loss is None
    model(x, y)
    first = net.last_loss
    assert isinstance(first, kiln.Tensor) and first.requires_grad
    net.last_loss = None  # the user's own assignment (eager) changes no guard either
    model(x, y)
    assert net.last_loss is not first and np.isclose(net.last_loss.item(), first.item())
    assert model.explain().graph_count == 1


def test_stores_that_are_not_replayed_still_break():
    class Counter(kiln.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.w = kiln.nn.Parameter(kiln.ones(3))

        def forward(self, x):
            self.calls += 1  # a number, not a tensor: runs eagerly on every call
            return x * self.w

    c = Counter()
    model = kiln.compile(c)
    for _ in range(3):
        model(kiln.ones(3))
    assert c.calls == 3
    assert any("assigns attribute 'calls'" in b[0] for b in model.explain().breaks)


def test_tensors_are_weakly_referenceable():
    t = kiln.ones(2)
    r = weakref.ref(t)
    assert r() is t
    del t
    gc.collect()
    assert r() is None


_holder = kiln.nn.Linear(3, 3)


def test_plain_function_storing_into_a_global_module():
    @kiln.compile
    def f(x):
        y = _holder(x)
        _holder.last_out = y * 3
        return y

    x = kiln.ones(2, 3)
    for i in range(4):
        y = f(x * (i + 1))
        np.testing.assert_allclose(_holder.last_out.detach().numpy(), y.detach().numpy() * 3, rtol=1e-6)
    assert f.explain().graph_count == 1 and f.explain().break_count == 0
