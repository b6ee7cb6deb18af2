"""kiln.optim against torch.optim: the same parameters and gradients, several steps, the same
results; schedulers produce torch's lr sequences; param_groups edits take effect."""
import numpy as np
import pytest
import torch

import kiln
import kiln.nn as knn

RTOL, ATOL = 1e-5, 1e-6


def pair_params(seed=0, shapes=((4, 3), (3,), (2, 2, 2))):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    kp = [knn.Parameter(kiln.tensor(a)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    return kp, tp


def set_grads(kp, tp, step, seed=1):
    rng = np.random.default_rng(seed + 1000 * step)
    for k, t in zip(kp, tp):
        g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
        k.grad = kiln.tensor(g)
        t.grad = torch.tensor(g)


def assert_same(kp, tp, rtol=RTOL, atol=ATOL):
    for k, t in zip(kp, tp):
        np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.02, weight_decay=0.2, amsgrad=True, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_optimizer_steps_match_torch(name, kwargs):
    kp, tp = pair_params()
    ko = getattr(kiln.optim, name)(kp, **kwargs)
    to = getattr(torch.optim, name)(tp, **kwargs)
    for step in range(8):
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        assert_same(kp, tp)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_lr_change_through_param_groups(name):
    kp, tp = pair_params()
    extra = dict(momentum=0.9) if name == "SGD" else {}
    ko = getattr(kiln.optim, name)(kp, lr=0.01, **extra)
    to = getattr(torch.optim, name)(tp, lr=0.01, **extra)
    for step in range(6):
        if step == 3:
            for g in ko.param_groups:
                g["lr"] = 0.1
                g["weight_decay"] = 0.05
            for g in to.param_groups:
                g["lr"] = 0.1
                g["weight_decay"] = 0.05
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        assert_same(kp, tp)


def test_param_groups_with_own_options_and_add_param_group():
    kp, tp = pair_params()
    ko = kiln.optim.Adam([{"params": kp[:1]}, {"params": kp[1:2], "lr": 0.1}], lr=0.01)
    to = torch.optim.Adam([{"params": tp[:1]}, {"params": tp[1:2], "lr": 0.1}], lr=0.01)
    assert [g["lr"] for g in ko.param_groups] == [g["lr"] for g in to.param_groups]
    for step in range(6):
        if step == 2:
            ko.add_param_group({"params": [kp[2]], "betas": (0.5, 0.9)})
            to.add_param_group({"params": [tp[2]], "betas": (0.5, 0.9)})
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        assert_same(kp, tp)
    assert set(ko.param_groups[2]) == set(to.param_groups[2]) - {"foreach", "differentiable",
                                                                   "fused", "decoupled_weight_decay"}


def test_add_param_group_rejects_duplicates():
    kp, _ = pair_params()
    ko = kiln.optim.SGD(kp[:2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        ko.add_param_group({"params": [kp[0]]})
    assert len(ko.param_groups) == 1


def test_zero_grad_and_skipped_params():
    kp, tp = pair_params()
    ko = kiln.optim.SGD(kp, lr=0.1)
    to = torch.optim.SGD(tp, lr=0.1)
    set_grads(kp, tp, 0)
    kp[1].grad = None
    tp[1].grad = None
    ko.step()
    to.step()
    assert_same(kp, tp)
    ko.zero_grad(set_to_none=False)
    assert np.all(kp[0].grad.numpy() == 0)
    ko.zero_grad()
    assert kp[0].grad is None


def test_step_with_closure_returns_loss():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5,)).astype(np.float32)
    kw, tw = knn.Parameter(kiln.tensor(w)), torch.nn.Parameter(torch.tensor(w))
    ko, to = kiln.optim.SGD([kw], lr=0.1), torch.optim.SGD([tw], lr=0.1)

    def kclosure():
        ko.zero_grad()
        loss = (kw * kw).sum()
        loss.backward()
        return loss

    def tclosure():
        to.zero_grad()
        loss = (tw * tw).sum()
        loss.backward()
        return loss

    for _ in range(4):
        kl, tl = ko.step(kclosure), to.step(tclosure)
        np.testing.assert_allclose(kl.item(), tl.item(), rtol=1e-6)
    np.testing.assert_allclose(kw.detach().numpy(), tw.detach().numpy(), rtol=1e-6)


def test_state_dict_round_trip_continues_like_torch():
    kp, tp = pair_params()
    ko = kiln.optim.AdamW(kp, lr=0.01)
    to = torch.optim.AdamW(tp, lr=0.01)
    for step in range(3):
        set_grads(kp, tp, step)
        ko.step()
        to.step()
    sd = ko.state_dict()
    tsd = to.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"])
    assert set(sd["state"][0]) == set(tsd["state"][0]) - {"max_exp_avg_sq"}
    np.testing.assert_allclose(sd["state"][0]["exp_avg"].numpy(), tsd["state"][0]["exp_avg"].numpy(), rtol=1e-5)
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"]
    # A fresh optimizer over copies of the parameters resumes where the first one was.
    kp2 = [knn.Parameter(p.detach().clone()) for p in kp]
    ko2 = kiln.optim.AdamW(kp2, lr=0.5)
    ko2.load_state_dict(sd)
    assert ko2.param_groups[0]["lr"] == 0.01
    for step in range(3, 6):
        set_grads(kp2, tp, step)
        ko2.step()
        to.step()
    assert_same(kp2, tp)


def test_load_state_dict_mismatch_raises():
    kp, _ = pair_params()
    ko = kiln.optim.Adam(kp, lr=0.01)
    other = kiln.optim.Adam(kp[:2], lr=0.01)
    with pytest.raises(ValueError, match="doesn't match the size"):
        ko.load_state_dict(other.state_dict())


def test_bad_arguments():
    kp, _ = pair_params()
    with pytest.raises(ValueError, match="empty parameter list"):
        kiln.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        kiln.optim.SGD(kp[0], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        kiln.optim.Adam(kp, lr=-1)
    with pytest.raises(ValueError, match="Invalid beta"):
        kiln.optim.Adam(kp, betas=(1.5, 0.9))
    ko = kiln.optim.SGD(kp, lr=0.1)
    ko.param_groups[0]["lr"] = -0.5
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ko.step()


# --- schedulers ------------------------------------------------------------------------------------
def _schedulers(lib, opt, which):
    s = lib.optim.lr_scheduler
    if which == "lambda":
        return s.LambdaLR(opt, lambda e: 0.9 ** e + 0.01 * e)
    if which == "step":
        return s.StepLR(opt, step_size=3, gamma=0.5)
    if which == "linear":
        return s.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=4)
    if which == "cosine":
        return s.CosineAnnealingLR(opt, T_max=5, eta_min=0.001)
    if which == "sequential":
        warm = s.LinearLR(opt, start_factor=0.1, total_iters=3)
        cos = s.CosineAnnealingLR(opt, T_max=6)
        return s.SequentialLR(opt, [warm, cos], milestones=[3])
    raise AssertionError(which)


@pytest.mark.parametrize("which", ["lambda", "step", "linear", "cosine", "sequential"])
def test_scheduler_lr_sequence_and_updates_match_torch(which):
    kp, tp = pair_params()
    ko = kiln.optim.SGD(kp, lr=0.1, momentum=0.9)
    to = torch.optim.SGD(tp, lr=0.1, momentum=0.9)
    ks, ts = _schedulers(kiln, ko, which), _schedulers(torch, to, which)
    for step in range(12):
        np.testing.assert_allclose(ks.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        assert ko.param_groups[0]["lr"] == pytest.approx(to.param_groups[0]["lr"], rel=1e-12)
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        ks.step()
        ts.step()
        assert_same(kp, tp)


def test_scheduler_on_adamw_with_two_groups():
    kp, tp = pair_params()
    ko = kiln.optim.AdamW([{"params": kp[:1]}, {"params": kp[1:], "lr": 0.05}], lr=0.01)
    to = torch.optim.AdamW([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.05}], lr=0.01)
    ks = kiln.optim.lr_scheduler.CosineAnnealingLR(ko, T_max=4)
    ts = torch.optim.lr_scheduler.CosineAnnealingLR(to, T_max=4)
    for step in range(9):
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        ks.step()
        ts.step()
        np.testing.assert_allclose(ks.get_last_lr(), ts.get_last_lr(), rtol=1e-12, atol=1e-15)
        assert_same(kp, tp)


class HeavyBall(kiln.optim.Optimizer):
    """A custom optimizer written in Python, as users write them for torch: SGD with momentum."""

    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @kiln.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "buf" not in state:
                    state["buf"] = p.grad.clone()
                else:
                    state["buf"].mul_(group["momentum"]).add_(p.grad)
                p.sub_(group["lr"] * state["buf"])


def test_custom_python_optimizer_with_scheduler_matches_torch_sgd():
    kp, tp = pair_params()
    ko = HeavyBall(kp, lr=0.05, momentum=0.9)
    to = torch.optim.SGD(tp, lr=0.05, momentum=0.9)
    ks = kiln.optim.lr_scheduler.StepLR(ko, 2, 0.5)
    ts = torch.optim.lr_scheduler.StepLR(to, 2, 0.5)
    for step in range(6):
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        ks.step()
        ts.step()
        assert_same(kp, tp)
    sd = ko.state_dict()
    assert sorted(sd["state"]) == [0, 1, 2] and "buf" in sd["state"][0]
    ko.zero_grad()
    assert all(p.grad is None for p in kp)
    with pytest.raises(NotImplementedError):
        kiln.optim.Optimizer(kp, dict(lr=0.1)).step()
