"""kiln.compile(mode="max-autotune"): tuned kernels give default's results (docs/compiler.md, "Modes")."""
import warnings

import pytest
import torch

import kiln


def _close(a, b, tol=1e-4):
    return bool(((a - b).abs() <= tol * (0.1 + b.abs())).all())


@pytest.mark.parametrize("mode", ["max-autotune", "max-autotune-no-cudagraphs"])
def test_max_autotune_matches_default(mode):
    kiln.manual_seed(0)
    x, w, b = kiln.randn(32, 64), kiln.randn(48, 64), kiln.randn(48)

    def f(x, w, b):
        return kiln.nn.functional.softmax(kiln.nn.functional.linear(x, w, b).relu(), dim=-1)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "not tuned yet" warning any more)
        tuned = kiln.compile(f, mode=mode)
    got, base = tuned(x, w, b), kiln.compile(f)(x, w, b)
    assert _close(got, base) and _close(got, f(x, w, b))
    # torch's own result, through the interop bridge, as an independent check
    want = torch.softmax(torch.relu(torch.from_numpy(x.numpy()) @ torch.from_numpy(w.numpy()).T + torch.from_numpy(b.numpy())), -1)
    assert torch.allclose(torch.from_numpy(got.numpy()), want, rtol=1e-4, atol=1e-6)


def test_bad_modes():
    f = lambda x: x + 1  # noqa: E731
    with pytest.raises(kiln.Error, match="unrecognized mode 'fastest'"):
        kiln.compile(f, mode="fastest")
    with pytest.raises(kiln.Error, match="option of backend 'inductor', not of 'aot_eager'"):
        kiln.compile(f, backend="aot_eager", mode="max-autotune")
