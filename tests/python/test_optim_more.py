"""kiln.optim's Python optimizers (Adadelta, Adagrad, Adamax, ASGD, NAdam, RAdam, RMSprop, Rprop)
against torch.optim: the same parameters and gradients, several steps, the same results; the same
state names; state_dicts round-trip within kiln and load from torch's; lr_scheduler against
torch's list and sequences."""
import numpy as np
import pytest
import torch

import kiln
from test_optim import assert_same, pair_params, set_grads

CASES = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.3, eps=1e-8)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.8, weight_decay=0.05)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),  # rho_t > 5 from step 2 on
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=3, weight_decay=0.1)),
]

IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CASES)]


def _grads_sometimes_repeat(kp, tp, step):
    # Rprop reacts to sign changes: let some steps keep the previous gradients' signs.
    set_grads(kp, tp, step // 2 if step % 3 else step)


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_optimizer_steps_match_torch(name, kwargs):
    kp, tp = pair_params()
    ko = getattr(kiln.optim, name)(kp, **kwargs)
    to = getattr(torch.optim, name)(tp, **kwargs)
    for step in range(10):
        _grads_sometimes_repeat(kp, tp, step)
        ko.step()
        to.step()
        assert_same(kp, tp, rtol=2e-5, atol=2e-6)
    kstate, tstate = ko.state_dict(), to.state_dict()
    assert sorted(kstate["state"]) == sorted(tstate["state"])
    for i in tstate["state"]:
        assert sorted(kstate["state"][i]) == sorted(tstate["state"][i])
        for key, tv in tstate["state"][i].items():
            kv = kstate["state"][i][key]
            np.testing.assert_allclose(np.asarray(kv.numpy() if hasattr(kv, "numpy") else kv),
                                       np.asarray(tv), rtol=1e-4, atol=1e-6)
    tg, kg = tstate["param_groups"][0], kstate["param_groups"][0]
    for k, v in tg.items():  # torch's options, with torch's defaults
        assert k in kg, k
        if not isinstance(v, (list, tuple)) or k == "params":
            assert kg[k] == v, k
        else:
            assert tuple(kg[k]) == tuple(v), k


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_state_dict_round_trip_and_from_torch(name, kwargs):
    kp, tp = pair_params()
    ko = getattr(kiln.optim, name)(kp, **kwargs)
    to = getattr(torch.optim, name)(tp, **kwargs)
    for step in range(3):
        _grads_sometimes_repeat(kp, tp, step)
        ko.step()
        to.step()
    # A fresh kiln optimizer from kiln's state_dict, another from torch's: both continue as torch.
    saved = ko.state_dict()
    kp2 = [kiln.nn.Parameter(p.detach().clone()) for p in kp]
    ko2 = getattr(kiln.optim, name)(kp2, **kwargs)
    ko2.load_state_dict(saved)
    tsd = to.state_dict()
    kp3 = [kiln.nn.Parameter(p.detach().clone()) for p in kp]
    ko3 = getattr(kiln.optim, name)(kp3, **kwargs)
    ko3.load_state_dict({"state": {i: {k: kiln.tensor(v.detach().numpy()) if isinstance(v, torch.Tensor) else v
                                       for k, v in s.items()} for i, s in tsd["state"].items()},
                         "param_groups": tsd["param_groups"]})
    for step in range(3, 7):
        set_grads(kp, tp, step)
        for q2, q3, t in zip(kp2, kp3, tp):
            q2.grad = kiln.tensor(t.grad.numpy())
            q3.grad = kiln.tensor(t.grad.numpy())
        to.step()
        ko2.step()
        ko3.step()
        assert_same(kp2, tp, rtol=2e-5, atol=2e-6)
        assert_same(kp3, tp, rtol=2e-5, atol=2e-6)


def test_options_are_validated_and_closure_returns_loss():
    kp, _ = pair_params()
    for name, bad in (("Adadelta", dict(rho=1.5)), ("Adagrad", dict(lr_decay=-1)), ("RMSprop", dict(alpha=-0.1)),
                      ("NAdam", dict(betas=(1.0, 0.9))), ("RAdam", dict(eps=-1)), ("Rprop", dict(etas=(1.1, 1.2))),
                      ("Adamax", dict(lr=-1.0))):
        with pytest.raises(ValueError):
            getattr(kiln.optim, name)(kp, **bad).step()
    o = kiln.optim.RMSprop(kp)
    for p in kp:
        p.grad = kiln.ones(*p.shape)
    assert o.step(lambda: 3.5) == 3.5
    o.zero_grad()
    assert all(p.grad is None for p in kp)


def test_param_groups_with_own_options():
    kp, tp = pair_params()
    ko = kiln.optim.NAdam([{"params": kp[:2]}, {"params": kp[2:], "lr": 0.05, "weight_decay": 0.1}], lr=0.01)
    to = torch.optim.NAdam([{"params": tp[:2]}, {"params": tp[2:], "lr": 0.05, "weight_decay": 0.1}], lr=0.01)
    for step in range(5):
        if step == 3:
            ko.param_groups[0]["lr"] = to.param_groups[0]["lr"] = 0.1
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        assert_same(kp, tp)


def test_scheduler_drives_python_optimizer_as_torch():
    kp, tp = pair_params()
    ko, to = kiln.optim.Adagrad(kp, lr=0.1), torch.optim.Adagrad(tp, lr=0.1)
    ks, ts = kiln.optim.lr_scheduler.StepLR(ko, 2, 0.5), torch.optim.lr_scheduler.StepLR(to, 2, 0.5)
    for step in range(6):
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        ks.step()
        ts.step()
        assert ks.get_last_lr() == pytest.approx(ts.get_last_lr())
        assert_same(kp, tp)


# --- lr_scheduler ------------------------------------------------------------------------------------
def _torch_scheduler_names():
    import inspect
    s = torch.optim.lr_scheduler
    return sorted(n for n in dir(s) if not n.startswith("_") and inspect.isclass(getattr(s, n))
                  and getattr(s, n).__module__ == s.__name__)


def test_every_torch_scheduler_is_there():
    missing = [n for n in _torch_scheduler_names() if not hasattr(kiln.optim.lr_scheduler, n)]
    assert missing == []


SCHEDULERS = [
    ("MultiplicativeLR", "SGD", lambda s, o: s.MultiplicativeLR(o, lambda e: 0.95)),
    ("MultiStepLR", "SGD", lambda s, o: s.MultiStepLR(o, [2, 5, 5, 9], gamma=0.5)),
    ("ConstantLR", "SGD", lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=4)),
    ("ExponentialLR", "SGD", lambda s, o: s.ExponentialLR(o, 0.9)),
    ("PolynomialLR", "SGD", lambda s, o: s.PolynomialLR(o, total_iters=8, power=2.0)),
    ("CosineAnnealingWarmRestarts", "SGD", lambda s, o: s.CosineAnnealingWarmRestarts(o, 3, T_mult=2, eta_min=0.01)),
    ("CyclicLR-triangular", "SGD", lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=2)),
    ("CyclicLR-triangular2-adam", "Adam", lambda s, o: s.CyclicLR(o, [0.01], 0.1, step_size_up=4,
                                                                   mode="triangular2")),
    ("CyclicLR-exp_range-nomomentum", "SGD", lambda s, o: s.CyclicLR(o, 0.01, 0.1, 2, mode="exp_range", gamma=0.9,
                                                                      cycle_momentum=False)),
    ("OneCycleLR", "SGD", lambda s, o: s.OneCycleLR(o, 0.2, total_steps=25)),
    ("OneCycleLR-3phase-linear-adam", "Adam", lambda s, o: s.OneCycleLR(o, 0.05, epochs=5, steps_per_epoch=5,
                                                                        three_phase=True, anneal_strategy="linear")),
    ("ChainedScheduler", "SGD", lambda s, o: s.ChainedScheduler([s.ConstantLR(o, 0.5, 3), s.ExponentialLR(o, 0.9)])),
]


def _momentum(o):
    g = o.param_groups[0]
    return g["betas"][0] if "betas" in g else g.get("momentum")


@pytest.mark.parametrize("name,opt,make", SCHEDULERS, ids=[c[0] for c in SCHEDULERS])
def test_scheduler_sequence_matches_torch(name, opt, make):
    kp, tp = pair_params()
    kw = dict(lr=0.1, momentum=0.9) if opt == "SGD" else dict(lr=0.1)
    ko, to = getattr(kiln.optim, opt)(kp, **kw), getattr(torch.optim, opt)(tp, **kw)
    ks, ts = make(kiln.optim.lr_scheduler, ko), make(torch.optim.lr_scheduler, to)
    for step in range(24):
        np.testing.assert_allclose(ks.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
        assert _momentum(ko) == pytest.approx(_momentum(to), rel=1e-12)
        set_grads(kp, tp, step)
        ko.step()
        to.step()
        ks.step()
        ts.step()
        assert_same(kp, tp)


@pytest.mark.parametrize("kwargs", [dict(), dict(mode="max", threshold_mode="abs", threshold=0.1, cooldown=2,
                                                 patience=1, factor=0.5, min_lr=0.02)])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    kp, tp = pair_params()
    ko, to = kiln.optim.SGD(kp, lr=0.1), torch.optim.SGD(tp, lr=0.1)
    ks = kiln.optim.lr_scheduler.ReduceLROnPlateau(ko, **kwargs)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(to, **kwargs)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.8, 0.8] * 5
    for m in metrics:
        ks.step(m)
        ts.step(m)
        assert ks.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert ks.num_bad_epochs == ts.num_bad_epochs and ks.best == ts.best
    assert ko.param_groups[0]["lr"] < 0.1


@pytest.mark.parametrize("make", [lambda s, o: s.MultiStepLR(o, [2, 4], 0.5), lambda s, o: s.ExponentialLR(o, 0.8),
                                  lambda s, o: s.PolynomialLR(o, 6), lambda s, o: s.ConstantLR(o, 0.3, 3),
                                  lambda s, o: s.CosineAnnealingWarmRestarts(o, 2, 3)],
                         ids=["multistep", "exponential", "polynomial", "constant", "warm-restarts"])
def test_scheduler_step_with_epoch_matches_torch(make):
    kp, tp = pair_params()
    ko, to = kiln.optim.SGD(kp, lr=0.1), torch.optim.SGD(tp, lr=0.1)
    ks, ts = make(kiln.optim.lr_scheduler, ko), make(torch.optim.lr_scheduler, to)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in (3, 7, 1, 12):
            ks.step(epoch)
            ts.step(epoch)
            np.testing.assert_allclose(ks.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
