"""kiln.compile(module) is a module (issue 14, item 1): the same program run with M=torch (its
OptimizedModule) and M=kiln gives the same answers about the wrapper, and the same numbers."""
import pytest
import torch

import kiln


def build(M):
    class Net(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = M.nn.Linear(6, 8)
            self.drop = M.nn.Dropout(0.5)
            self.fc2 = M.nn.Linear(8, 3)
            self.calls = 0

        def forward(self, x):
            return self.fc2(self.drop(M.relu(self.fc1(x))))

        def generate(self, x, n):  # a user method: runs eagerly on the original module
            return [self.forward(x).argmax(-1) for _ in range(n)]

    M.manual_seed(0)
    net = Net()
    with M.no_grad():  # the same weights in both libraries
        for i, p in enumerate(net.parameters()):
            p.copy_(M.arange(p.numel(), dtype=M.float32).reshape(p.shape).sin() * 0.3 + i * 0.01)
    return net


def compile_(M, m):
    return torch.compile(m, backend="eager") if M is torch else kiln.compile(m)


@pytest.mark.parametrize("M", [torch, kiln], ids=["torch", "kiln"])
def test_wrapper_is_the_module(M):
    net = build(M)
    c = compile_(M, net)
    assert isinstance(c, M.nn.Module)
    assert c._orig_mod is net
    assert list(c.state_dict()) == ["_orig_mod." + k for k in net.state_dict()]
    assert [id(p) for p in c.parameters()] == [id(p) for p in net.parameters()]
    assert c.calls == 0 and c.fc1 is net.fc1  # attributes and submodules of the original
    c.eval()
    assert not net.training and not net.drop.training and not c.training
    c.train()
    assert net.training and net.drop.training
    assert c.generate(M.ones(2, 6), 2)[0].shape == (2,)


def outputs(M):
    net = build(M)
    c = compile_(M, net)
    x = M.arange(24, dtype=M.float32).reshape(4, 6).cos()
    c.eval()
    out = [c(x)]
    sd = c.state_dict()
    net2 = build(M)
    c2 = compile_(M, net2)
    c2.load_state_dict(sd)  # the prefixed keys load back into a compiled module
    c2.eval()
    out.append(c2(x * 2))
    return [o.detach().numpy() for o in out]


def test_same_numbers_as_torch():
    for a, b in zip(outputs(kiln), outputs(torch)):
        assert a.shape == b.shape
        assert abs(a - b).max() < 1e-5


def test_hooks_and_explain():
    net = build(kiln)
    c = kiln.compile(net)
    seen = []
    c.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    c.eval()
    c(kiln.ones(2, 6))
    assert seen == [(2, 3)]
    assert c.explain().graph_count == 1
    assert kiln.compile(c)._orig_mod is net  # compiling a compiled module compiles the original


def test_modes_as_torch():
    f = lambda x: x * 2  # noqa: E731
    x = kiln.ones(3)
    assert (kiln.compile(f, mode="reduce-overhead")(x) == 2).all()
    for M in (torch, kiln):  # an unknown mode is an error in both
        with pytest.raises(RuntimeError, match="mode"):
            M.compile(f, mode="fastest")(M.ones(3))
    with pytest.raises(RuntimeError, match="backend"):
        kiln.compile(f, backend="eager", mode="max-autotune")
