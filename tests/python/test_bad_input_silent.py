"""Issue 15 part C, the Python side: results that were wrong without a word (a bool tensor from
an empty list, an object array from a bfloat16 tensor, optimizer param_groups edits ignored,
.numpy() of a lazy or traced tensor refused), each now PyTorch's answer or a clear error."""
import numpy as np
import pytest
import torch

import kiln
import kiln.nn as knn


def test_tensor_of_empty_list_is_float32():
    assert kiln.tensor([]).dtype == kiln.float32 and kiln.tensor([[]]).shape == (1, 0)
    assert kiln.tensor([[]]).dtype == kiln.float32
    assert kiln.tensor([True]).dtype == kiln.bool and kiln.tensor([1]).dtype == kiln.int64


def test_numpy_asarray_of_bfloat16_raises():
    with pytest.raises(TypeError, match="NumPy has no bfloat16"):
        np.asarray(kiln.zeros(3, dtype=kiln.bfloat16))
    assert np.asarray(kiln.zeros(3, dtype=kiln.bfloat16).float()).dtype == np.float32


def test_numpy_inside_lazy_computes_and_inside_compile_breaks_the_graph():
    x = kiln.arange(3, dtype=kiln.float32)
    with kiln.lazy():
        y = x * 2
        assert y.numpy().tolist() == [0.0, 2.0, 4.0]

    def f(a):
        return a * float((a + 1).numpy().sum())   # 1 + 2 + 3 = 6

    cf = kiln.compile(f)
    assert cf(x).tolist() == [0.0, 6.0, 12.0]
    assert cf.explain().break_count >= 1


def _pair(n=3):
    ks = [knn.Parameter(kiln.ones(2) * (i + 1)) for i in range(n)]
    ts = [torch.nn.Parameter(torch.ones(2) * (i + 1)) for i in range(n)]
    return ks, ts


def _grads(ks, ts, step):
    for i, (k, t) in enumerate(zip(ks, ts)):
        g = [0.5 * (i + 1) + 0.1 * step, -0.25 * step]
        k.grad, t.grad = kiln.tensor(g), torch.tensor(g)


def _same(ks, ts):
    for k, t in zip(ks, ts):
        assert np.allclose(k.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda ps, lib: lib.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps, lib: lib.optim.Adam(ps, lr=0.1),
    lambda ps, lib: lib.optim.AdamW(ps, lr=0.1, weight_decay=0.1),
])
def test_editing_param_groups_params_takes_effect_as_in_torch(make):
    ks, ts = _pair(3)
    ko, to = make(ks[:2], kiln), make(ts[:2], torch)
    for step in range(6):
        if step == 2:  # remove a parameter: it is no longer updated
            del ko.param_groups[0]["params"][0]
            del to.param_groups[0]["params"][0]
        if step == 4:  # swap in a new one (fresh state); the kept one keeps its moments
            ko.param_groups[0]["params"].append(ks[2])
            to.param_groups[0]["params"].append(ts[2])
        _grads(ks, ts, step)
        ko.step()
        to.step()
        _same(ks, ts)
    assert len(ko.state_dict()["state"]) == 2  # the two parameters optimized now


def test_replacing_the_params_list_and_zero_grad_follow_the_edit():
    ks, ts = _pair(2)
    ko = kiln.optim.SGD([ks[0]], lr=1.0)
    ko.param_groups[0]["params"] = [ks[1]]
    _grads(ks, ts, 1)
    ko.step()
    assert ks[0].tolist() == [1.0, 1.0]                 # no longer in the optimizer
    assert ks[1].tolist() == pytest.approx([2.0 - 1.1, 2.0 + 0.25])
    ko.zero_grad()
    assert ks[1].grad is None and ks[0].grad is not None


def test_an_edit_that_repeats_a_parameter_is_refused():
    ks, _ = _pair(2)
    ko = kiln.optim.SGD(ks, lr=1.0)
    ko.param_groups[0]["params"].append(ks[0])
    with pytest.raises(ValueError, match="more than one parameter group"):
        ko.step()
