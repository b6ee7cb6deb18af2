"""Runs one sample through kiln and PyTorch and compares the results (and gradients)."""
import numpy as np
import torch

import kiln
from op_db import T

TOLERANCES = {  # (atol, rtol) by dtype
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1.3e-5),
    "bfloat16": (1e-2, 1.6e-2),
    "float16": (1e-3, 1e-3),
}


def kiln_dtype(name):
    return getattr(kiln, name)


def torch_dtype(name):
    return getattr(torch, name)


def build(value, rng, dtype, grad):
    """Turns T fields (also inside lists/tuples) into a (kiln, torch) pair of tensors."""
    if isinstance(value, T):
        dt = value.dtype or dtype
        a = value.array(rng, dtype)
        kt = kiln.tensor(a, dtype=kiln_dtype(dt))
        tt = torch.tensor(a).to(torch_dtype(dt))
        if value.layout == "transposed" and a.ndim >= 2:
            kt, tt = kt.transpose(-1, -2), tt.transpose(-1, -2)
        elif value.layout == "strided" and a.ndim >= 1:
            kt, tt = kt[..., ::2], tt[..., ::2]
        wants = value.requires_grad if value.requires_grad is not None else (grad and dt in ("float32", "float64"))
        if wants:
            # Leaves that require grad, with the same (possibly non-contiguous) layout.
            kt = kt.detach().requires_grad_(True)
            tt = tt.detach().requires_grad_(True)
        return kt, tt
    if isinstance(value, (list, tuple)):
        pairs = [build(v, rng, dtype, grad) for v in value]
        return type(value)(p[0] for p in pairs), type(value)(p[1] for p in pairs)
    if isinstance(value, str) and value in TYPE_NAMES:
        return kiln_dtype(value), torch_dtype(value)
    return value, value


TYPE_NAMES = {"float32", "float64", "bfloat16", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def dtype_arg(name):
    """A dtype as a sample argument: resolved to kiln.<name> / torch.<name>."""
    return name


def leaves(args):
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out += leaves(a)
        elif isinstance(a, (kiln.Tensor, torch.Tensor)) and a.requires_grad:
            out.append(a)
    return out


def tensors_of(result):
    if isinstance(result, (list, tuple)):
        out = []
        for r in result:
            out += tensors_of(r)
        return out
    return [result]


def to_numpy(x):
    if isinstance(x, kiln.Tensor):
        x = x.detach()
        if x.dtype == kiln.bfloat16 or x.dtype == kiln.float16:
            x = x.float()
        return np.asarray(x.numpy())
    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.dtype in (torch.bfloat16, torch.float16):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(k, t, dtype, tol, what):
    kn, tn = to_numpy(k), to_numpy(t)
    assert kn.shape == tn.shape, f"{what}: shape {kn.shape} (kiln) != {tn.shape} (torch)"
    if isinstance(k, kiln.Tensor) and isinstance(t, torch.Tensor):
        kd, td = str(k.dtype).replace("kiln.", ""), str(t.dtype).replace("torch.", "")
        assert kd == td, f"{what}: dtype {kd} (kiln) != {td} (torch)"
    if kn.dtype == np.bool_ or np.issubdtype(kn.dtype, np.integer):
        np.testing.assert_array_equal(kn, tn, err_msg=what)
        return
    atol, rtol = tol.get(dtype, TOLERANCES.get(dtype, (1e-5, 1e-5)))
    np.testing.assert_allclose(kn, tn, atol=atol, rtol=rtol, equal_nan=True, err_msg=what)


def no_further_from_exact(info, tfn, targs, tkw, kr, tr):
    """For float16 / bfloat16 results that differ: whether kiln's are at least as close as
    PyTorch's to the same call in float64 (PyTorch's CPU kernels accumulate some ops, as
    conv_transpose2d, in the 16-bit type; kiln accumulates in float32 and rounds once, so where
    their sum cancels, the two can differ by more than the dtype's tolerance with kiln nearer)."""
    if info.check is not None:
        return False
    low = (torch.float16, torch.bfloat16)
    touts = tensors_of(tr)
    kouts = tensors_of(kr)
    if len(kouts) != len(touts) or not touts or not all(isinstance(t, torch.Tensor) and t.dtype in low for t in touts):
        return False

    def wide(v):
        if isinstance(v, torch.Tensor) and v.dtype in low:
            return v.detach().double()
        if isinstance(v, (list, tuple)):
            return type(v)(wide(x) for x in v)
        return v

    try:
        exact = tensors_of(tfn(*wide(tuple(targs)), **{k: wide(v) for k, v in tkw.items()}))
    except Exception:  # noqa: BLE001 - no float64 kernel: no verdict
        return False
    if len(exact) != len(touts):
        return False
    for k, t, x in zip(kouts, touts, exact):
        kn, tn, xn = to_numpy(k).astype(np.float64), to_numpy(t).astype(np.float64), to_numpy(x)
        if str(k.dtype).split(".")[-1] != str(t.dtype).split(".")[-1] or kn.shape != xn.shape:
            return False
        if not np.array_equal(np.isnan(kn), np.isnan(xn)):
            return False
        err = lambda r: np.where((r == xn) | np.isnan(xn), 0.0, np.abs(r - xn))  # (equal infinities: 0)
        if err(kn).max(initial=0.0) > err(tn).max(initial=0.0):
            return False
    return True


def run_sample(info, sample, dtype, seed, check_grad):
    """Compares kiln and PyTorch on one sample; returns True if gradients were compared."""
    rng = np.random.default_rng(seed)
    kargs, targs = build(sample.args, rng, dtype, check_grad)
    kkw, tkw = {}, {}
    for name, v in sample.kwargs.items():
        kkw[name], tkw[name] = build(v, rng, dtype, check_grad)
    kfn = info.kiln_fn or getattr(kiln, info.op)
    tfn = info.torch_fn or getattr(torch, info.op)
    kr = kfn(*kargs, **kkw)
    tr = tfn(*targs, **tkw)
    label = f"{info.op}[{dtype}] {sample.name}"
    if info.check:
        info.check(kr, tr, sample, dtype)
        return False
    kouts = tensors_of(info.output(kr) if info.output else kr)
    touts = tensors_of(info.output(tr) if info.output else tr)
    assert len(kouts) == len(touts), f"{label}: {len(kouts)} outputs (kiln) != {len(touts)} (torch)"
    try:
        for i, (k, t) in enumerate(zip(kouts, touts)):
            assert_close(k, t, dtype, info.tol, f"{label} output {i}")
    except AssertionError:
        # A 16-bit result apart from PyTorch's passes where it is no further from the float64
        # answer (PyTorch's CPU convolutions accumulate some sums in the 16-bit type).
        if not no_further_from_exact(info, tfn, targs, tkw, kr, tr):
            raise
    if not check_grad:
        return False
    kin, tin = leaves(kargs) + leaves(list(kkw.values())), leaves(targs) + leaves(list(tkw.values()))
    kg_out = tensors_of(info.grad_output(kr)) if info.grad_output else kouts
    tg_out = tensors_of(info.grad_output(tr)) if info.grad_output else touts
    pairs = [(k, t) for k, t in zip(kg_out, tg_out)
             if isinstance(t, torch.Tensor) and t.requires_grad and t.dtype.is_floating_point]
    if not kin or not pairs:
        return False
    # The same random cotangent for both: gradients of sum(out * w).
    ks, ts = 0, 0
    for k, t in pairs:
        w = rng.uniform(-1, 1, size=tuple(t.shape))
        ks = ks + (k * kiln.tensor(w, dtype=k.dtype)).sum()
        ts = ts + (t * torch.tensor(w, dtype=t.dtype)).sum()
    kg = kiln.autograd.grad([ks], kin, allow_unused=True)
    tg = torch.autograd.grad([ts], tin, allow_unused=True)
    for i, (a, b) in enumerate(zip(kg, tg)):
        if b is None:
            assert a is None or not np.any(to_numpy(a)), f"{label}: kiln has a gradient for input {i}, torch none"
            continue
        assert a is not None, f"{label}: no kiln gradient for input {i}"
        assert_close(a, b, dtype, info.tol, f"{label} gradient of input {i}")
    return True
