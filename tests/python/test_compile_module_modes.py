"""Graphs of a compiled module for train() and eval() stay cached side by side (issue 14, item 3):
a training loop that evaluates every 2 steps compiles each mode once, and computes what torch
computes for the same program; a changed attribute still recompiles."""
import gc

import numpy as np
import pytest
import torch

import kiln


def build(M):
    class Net(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = M.nn.Linear(6, 8)
            self.fc2 = M.nn.Linear(8, 3)
            self.scale = 0.5

        def forward(self, x):
            h = M.relu(self.fc1(x))
            if self.training:  # a mode-dependent branch, deterministic (unlike dropout)
                h = h * self.scale
            return self.fc2(h)

    net = Net()
    with M.no_grad():  # the same weights in both libraries
        for i, p in enumerate(net.parameters()):
            p.copy_(M.arange(p.numel(), dtype=M.float32).reshape(p.shape).sin() * 0.3 + i * 0.01)
    return net


def train_with_evals(M, steps=50):
    net = build(M)
    model = torch.compile(net, backend="eager") if M is torch else kiln.compile(net)
    opt = M.optim.SGD(net.parameters(), lr=0.1)
    x = M.arange(24, dtype=M.float32).reshape(4, 6).cos()
    y = M.tensor([0, 2, 1, 0])
    losses, evals = [], []
    for step in range(steps):
        model.train()
        loss = M.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 2 == 1:
            model.eval()
            with M.no_grad():
                evals.append(model(x).sum().item())
    return model, np.array(losses), np.array(evals)


def test_train_eval_switches_keep_both_graphs():
    model, losses, evals = train_with_evals(kiln)
    _, t_losses, t_evals = train_with_evals(torch)
    torch._dynamo.reset()  # torch.compile's graphs would otherwise be collected during a later test
    gc.collect()
    np.testing.assert_allclose(losses, t_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(evals, t_evals, rtol=1e-5, atol=1e-5)
    report = model.explain()
    # 25 switches each way: one graph per mode (the acceptance allows two), no recompile beyond
    assert report.graph_count <= 4, report.recompile_reasons
    assert len(report.recompile_reasons) <= 3, report.recompile_reasons


def test_a_changed_attribute_still_recompiles():
    net = build(kiln)
    c = kiln.compile(net)
    x = kiln.ones(2, 6)
    a = c(x).detach().numpy()
    net.scale = 2.0  # read by forward: the old graph must not be reused
    b = c(x).detach().numpy()
    eager = net(x).detach().numpy()
    np.testing.assert_allclose(b, eager, rtol=1e-6, atol=1e-6)
    assert not np.allclose(a, b)
    net.scale = 0.5  # back to a state seen before: its graph again, no new compile
    n = c.explain().graph_count
    np.testing.assert_allclose(c(x).detach().numpy(), a, rtol=1e-6, atol=1e-6)
    assert c.explain().graph_count == n


@pytest.mark.parametrize("value", [[1, 2], {"k": 1}])
def test_an_attribute_replaced_by_an_equal_new_object_recompiles(value):
    # Objects are compared by identity: a new list, even an equal one, is a new state (safe).
    net = build(kiln)
    c = kiln.compile(net)
    net.extra = value
    c(kiln.ones(2, 6))
    n = c.explain().graph_count
    net.extra = type(value)(value)
    c(kiln.ones(2, 6))
    assert c.explain().graph_count == n + 1


def test_explain_names_the_traced_mode_and_counts_a_linears_parameters():
    lin = kiln.nn.Linear(4, 3).eval()
    text = str(kiln.explain(lin, kiln.ones(2, 4)))
    assert "the same 2 parameters and buffers, in eval mode" in text, text
    lin.train()
    assert "in train mode" in str(kiln.explain(lin, kiln.ones(2, 4)))


def test_multinomial_one_sample_is_no_graph_break():
    # Its output shape (rows, num_samples) never depends on the weights: one graph, no break.
    # One-hot rows make the sample certain, so kiln's and torch's draws agree.
    probs = np.eye(5, dtype=np.float32)[[3, 0, 4]]
    f = kiln.compile(lambda p: kiln.multinomial(p, 1))
    got = f(kiln.tensor(probs)).numpy()
    want = torch.multinomial(torch.tensor(probs), 1).numpy()
    np.testing.assert_array_equal(got, want)
    e = f.explain()
    assert e.graph_count == 1 and e.break_count == 0, str(e)
    with pytest.raises(kiln.Error, match="non-negative"):  # eagerly the weights are still checked
        kiln.multinomial(kiln.tensor([[0.5, -1.0]]), 1)
