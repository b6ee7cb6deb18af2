"""Reductions, scans, sorting/selection and data-dependent ops against PyTorch.

Where PyTorch documents no choice among ties (max.dim, sort unstable, topk, kthvalue, median,
cummax/cummin with equal values) the samples use distinct random floats; where it does document
one (argmax/argmin pick the first, sort/argsort with stable=True), ties are tested on purpose.
"""
import numpy as np
import torch

import kiln
from op_db import OPS, OpInfo, Sample, T, register

_BEFORE = set(OPS)

FLOATS = ("float32", "float64")
INTS = ("int64", "int32")
# Narrow integers (values wrap into their range, so ties are common): for the ops whose result
# among ties is documented or does not matter.
SMALL_INTS = ("int16", "int8", "uint8")


def _is_float(dtype):
    return dtype in ("float32", "float64", "bfloat16")


# ---------------------------------------------------------------- sum / prod / amax / amin / mean

def _reduce_dims(dtype, low=-3.0, high=3.0, empty=True):
    """Samples for an op of the form f(x, dim=None, keepdim=False)."""
    kw = dict(low=low, high=high)
    yield Sample((T((3, 4), **kw),), name="all elements")
    yield Sample((T((), **kw),), name="0-d")
    yield Sample((T((), **kw), 0), name="0-d, dim 0")
    yield Sample((T((2, 3, 4), **kw), 1), name="one dim")
    yield Sample((T((2, 3, 4), **kw), [-1, 0], True), name="negative dims, keepdim")
    yield Sample((T((2, 3, 4), **kw),), {"dim": (0, 2), "keepdim": False}, name="keyword dims")
    yield Sample((T((4, 5), layout="transposed", **kw), 0), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw), -1, True), name="strided")
    yield Sample((T((64, 70), **kw), 1), name="long rows")
    if empty:
        yield Sample((T((0, 3), **kw), 0), name="zero-size reduced dim")
    yield Sample((T((3, 0), **kw), 0), name="zero-size kept dim")


def _sum_samples(dtype):
    if _is_float(dtype):
        yield from _reduce_dims(dtype)
        # 4000 terms of +-1e4: partial sums reach ~1e5 (float32 ulp ~1e-2); see _sum_tol.
        yield Sample((T((40, 100), low=-1e4, high=1e4),), name="large magnitudes")
        yield Sample((T((5, 7), low=1e-3, high=2e-3), 1), name="small magnitudes")
        yield Sample((T((3, 4)), 1), {"dtype": "float64"}, name="dtype float64")
    else:
        yield from _reduce_dims(dtype, low=-50, high=50)
        yield Sample((T((3, 4), dtype="bool"),), name="bool input")
        yield Sample((T((3, 4), low=-50, high=50), [1]), {"dtype": "float32"}, name="dtype float32")


def _prod_samples(dtype):
    if _is_float(dtype):
        # |x| in [0.5, 1.5] keeps products of 70 elements finite; signs exercise the backward.
        # bfloat16: PyTorch multiplies 70 factors in bfloat16 (about 4% off the exact product),
        # kiln accumulates in double and rounds once, so the long rows are left out there.
        for s in _reduce_dims(dtype, low=0.5, high=1.5):
            if dtype != "bfloat16" or s.name != "long rows":
                yield s
        yield Sample((T((3, 4), low=-1.5, high=1.5), 1), name="negative values")
        yield Sample((T((2, 5), values=[[1.0, 0.0, 2.0, -1.5, 3.0], [0.0, 2.0, 0.0, 1.0, -2.0]]), 1),
                     name="zeros (one and two per row)")
        yield Sample((T((2, 5), values=[[1.0, 0.0, 2.0, -1.5, 3.0], [0.5, 2.0, 0.7, 1.0, -2.0]]),),
                     name="zero, full reduction")
        yield Sample((T((3, 4), low=0.5, high=1.5), 0), {"dtype": "float64"}, name="dtype float64")
    else:
        yield from _reduce_dims(dtype, low=-3, high=4)


def _minmax_samples(dtype):
    if _is_float(dtype):
        yield from _reduce_dims(dtype, empty=False)  # amax of an empty dim is an error
        yield Sample((T((4, 6), low=-1e4, high=1e4), 1), name="large magnitudes")
        # PyTorch documents amax/amin's gradient as shared evenly among equal extremes.
        ties = [[2.0, -1.0, 2.0, 2.0], [-1.0, 0.5, -1.0, 0.0]]
        yield Sample((T((2, 4), values=ties), 1), name="ties share the gradient")
        yield Sample((T((2, 4), values=ties),), name="ties, full reduction")
    else:
        yield from _reduce_dims(dtype, low=-50, high=50, empty=False)


def _mean_samples(dtype):
    yield from _reduce_dims(dtype)
    yield Sample((T((40, 100), low=-1e4, high=1e4),), name="large magnitudes")
    yield Sample((T((3, 4)), [1]), {"dtype": "float64"}, name="dtype float64")


def _sum_tol():
    # Sums of up to 4000 terms of magnitude 1e4: PyTorch accumulates float32 (and bfloat16) in
    # float32 in its own order, kiln in double; partial sums of ~1e5 carry float32 ulps of ~1e-2.
    return {"float32": (2e-2, 1e-4), "bfloat16": (1e-1, 2e-2)}


NAN = float("nan")
INF = float("inf")
_NAN_ROWS = [[1.0, NAN, -2.0, 0.5], [-INF, 3.0, INF, 0.0], [0.25, -1.0, 2.0, NAN]]


def _with_nans(fn, *extra_args, dim_arg=True):
    """fn's samples plus rows holding NaN and +-inf (floating dtypes; forward only)."""
    def samples(dtype):
        yield from fn(dtype)
        if _is_float(dtype):
            x = T((3, 4), values=_NAN_ROWS, requires_grad=False)
            yield Sample((x,) + ((1,) if dim_arg else ()) + extra_args, name="nan and inf (propagate)")
            if not dim_arg:
                yield Sample((T((2, 2), values=[[1.0, -INF], [INF, 0.5]], requires_grad=False),) + extra_args,
                             name="inf, no nan")
    return samples


register(OpInfo("sum", _with_nans(_sum_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True, tol=_sum_tol()))


def _torch_prod(x, dim=None, keepdim=False, dtype=None):
    # torch.prod takes one int dim; a list is reduced one dim at a time.
    if dim is None:  # every dim; keepdim keeps them all as size 1, as torch.sum does
        r = torch.prod(x, dtype=dtype)
        return r.reshape([1] * x.dim()) if keepdim else r
    if isinstance(dim, int):
        return torch.prod(x, dim, keepdim, dtype=dtype)
    dims = sorted((d % max(x.dim(), 1) for d in dim), reverse=True)
    for d in dims:
        x = torch.prod(x, d, True, dtype=dtype)
        dtype = None
    return x if keepdim else x.squeeze(dims) if dims else x


register(OpInfo("prod", _with_nans(_prod_samples), torch_fn=_torch_prod, dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
register(OpInfo("amax", _with_nans(_minmax_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
register(OpInfo("amin", _with_nans(_minmax_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
register(OpInfo("mean", _with_nans(_mean_samples), bf16=True, tol=_sum_tol()))


# ---------------------------------------------------------------- argmax / argmin / max / min

def _arg_samples(dtype):
    if _is_float(dtype):
        yield Sample((T((3, 4)),), name="flattened")
        yield Sample((T(()),), name="0-d")
        yield Sample((T((2, 3, 4)), 1), name="dim")
        yield Sample((T((2, 3, 4)), -1, True), name="negative dim, keepdim")
        yield Sample((T((4, 5), layout="transposed"),), {"dim": 0}, name="transposed, keyword dim")
        yield Sample((T((3, 6), layout="strided"), 1), name="strided")
        yield Sample((T((3, 0)), 0), name="zero-size kept dim")
    else:
        yield Sample((T((3, 8), low=-3, high=3), 1), name="ties: first index")
        yield Sample((T((3, 8), low=-3, high=3),), name="ties, flattened")
        yield Sample((T((4, 5), low=-100, high=100, layout="transposed"), 0, True), name="transposed, keepdim")
    yield Sample((T((2, 4), dtype="float32", values=[[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]]), 1),
                 name="float ties: first index")


register(OpInfo("argmax", _with_nans(_arg_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
register(OpInfo("argmin", _with_nans(_arg_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))


def _max_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-1000, 1000)
    yield Sample((T((3, 4), low=lo, high=hi),), name="2-d")
    yield Sample((T((), low=lo, high=hi),), name="0-d")
    yield Sample((T((4, 5), layout="transposed", low=lo, high=hi),), name="transposed")
    yield Sample((T((3, 6), layout="strided", low=lo, high=hi),), name="strided")
    if _is_float(dtype):
        yield Sample((T((4, 6), low=-1e4, high=1e4),), name="large magnitudes")


def _max_dim_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-100000, 100000)  # ints: ties unlikely but checked
    yield Sample((T((3, 4), low=lo, high=hi), 1), name="dim")
    yield Sample((T((), low=lo, high=hi), 0), name="0-d")
    yield Sample((T((2, 3, 4), low=lo, high=hi), -2, True), name="negative dim, keepdim")
    yield Sample((T((2, 3, 4), low=lo, high=hi),), {"dim": 0, "keepdim": False}, name="keywords")
    yield Sample((T((4, 5), layout="transposed", low=lo, high=hi), 0), name="transposed")
    yield Sample((T((3, 6), layout="strided", low=lo, high=hi), 1), name="strided")
    yield Sample((T((3, 0), low=lo, high=hi), 0), name="zero-size kept dim")


register(OpInfo("max", _with_nans(_max_samples, dim_arg=False), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
register(OpInfo("min", _with_nans(_max_samples, dim_arg=False), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
register(OpInfo("max_dim", _with_nans(_max_dim_samples), kiln_fn=kiln.max, torch_fn=torch.max, dtypes=FLOATS + INTS, bf16=True))
register(OpInfo("min_dim", _with_nans(_max_dim_samples), kiln_fn=kiln.min, torch_fn=torch.min, dtypes=FLOATS + INTS, bf16=True))


# ---------------------------------------------------------------- var / std / var_mean

def _var_samples(dtype):
    yield Sample((T((3, 4)),), name="all elements")
    yield Sample((T((2, 3, 4)), [1]), name="one dim")
    yield Sample((T((2, 3, 4)), [-1, 0]), {"keepdim": True}, name="negative dims, keepdim")
    yield Sample((T((2, 3, 4)),), {"dim": [2], "correction": 0}, name="correction 0")
    yield Sample((T((2, 5)),), {"dim": 1, "correction": 2.5}, name="fractional correction")
    yield Sample((T((4, 5), layout="transposed"), [0]), name="transposed")
    yield Sample((T((3, 6), layout="strided"), [1]), name="strided")
    yield Sample((T((20, 50), low=1e3, high=1e3 + 1), [1]), name="large offset, small spread")
    yield Sample((T((20, 50), low=-1e4, high=1e4),), name="large magnitudes")
    yield Sample((T((3, 0)), [0]), name="zero-size kept dim")
    yield Sample((T((3, 4)), [1]), {"correction": 0, "keepdim": True}, name="population, keepdim")
    # A constant row: std's gradient there is 0 in PyTorch (d sqrt at 0 masked), var's is 0 anyway.
    yield Sample((T((2, 3), values=[[1.5, 1.5, 1.5], [0.0, 1.0, -2.0]]), [1]), name="constant row")
    # Zero degrees of freedom: the forward is inf; the gradient (inf * 0 terms) is forward-only here.
    yield Sample((T((3, 2), requires_grad=False), [1]), {"correction": 2}, name="no degrees of freedom: inf")


# Two-pass vs one-pass variance of 1000 values around 1e3 in float32: relative error ~ 1e-4.
_VAR_TOL = {"float32": (1e-4, 2e-4), "bfloat16": (5e-2, 3e-2)}
register(OpInfo("var", _var_samples, bf16=True, tol=_VAR_TOL))
register(OpInfo("std", _var_samples, bf16=True, tol=_VAR_TOL))
register(OpInfo("var_mean", _var_samples, bf16=True, tol=_VAR_TOL))


# ---------------------------------------------------------------- norm / logsumexp

def _norm_samples(dtype):
    yield Sample((T((3, 4)),), name="default p=2")
    yield Sample((T(()), 2), name="0-d")
    yield Sample((T((2, 3, 4)), 1, [1]), name="p=1 dim")
    yield Sample((T((2, 3, 4)), 3, [-1, 0], True), name="p=3 negative dims keepdim")
    yield Sample((T((2, 3, 4)), float("inf"), [2]), name="p=inf")
    yield Sample((T((2, 3, 4)), float("-inf"), [2]), name="p=-inf")
    # p=0 counts nonzeros: PyTorch's result requires grad (with a zero gradient), kiln's is a
    # constant (no graph); forward only.
    yield Sample((T((3, 4), requires_grad=False),), {"p": 0, "dim": [1]}, name="p=0")
    yield Sample((T((2, 3), values=[[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]), 2, [1]), name="zero row (subgradient 0)")
    zeros_in = T((2, 3), values=[[0.0, 1.5, -0.5], [1.0, -2.0, 0.0]])
    yield Sample((zeros_in, 0.5, [1]), name="p=0.5 with zero elements (gradient 0 there)")
    yield Sample((zeros_in, 3, [1]), name="p=3 with zero elements")
    yield Sample((T((2, 3), low=0.5, high=2.0), -1, [1]), name="p=-1")
    yield Sample((T((3, 4), low=0.5, high=2.0),), {"p": 0.5, "dim": [0]}, name="p=0.5")
    yield Sample((T((4, 5), layout="transposed"),), {"p": 2, "dim": [0]}, name="transposed")
    yield Sample((T((3, 6), layout="strided"), 2, [1], True), name="strided")
    yield Sample((T((10, 30), low=-1e4, high=1e4), 2), name="large magnitudes")
    yield Sample((T((10, 30), low=1e-3, high=2e-3), 2, [1]), name="small magnitudes")
    yield Sample((T((0, 3), requires_grad=False), 2, [0]), name="zero-size")


def _torch_norm(x, p=2, dim=None, keepdim=False):
    return torch.linalg.vector_norm(x, ord=p, dim=dim, keepdim=keepdim)


register(OpInfo("norm", _with_nans(_norm_samples), torch_fn=_torch_norm, bf16=True))


def _lse_samples(dtype):
    yield Sample((T((3, 4)), [1]), name="dim")
    yield Sample((T(()), [0]), name="0-d")
    yield Sample((T((2, 3, 4)), [-1, 0], True), name="negative dims, keepdim")
    yield Sample((T((2, 3, 4)),), {"dim": [1], "keepdim": False}, name="keywords")
    yield Sample((T((4, 5), layout="transposed"), [0]), name="transposed")
    yield Sample((T((3, 6), layout="strided"), [1]), name="strided")
    yield Sample((T((4, 8), low=-1e4, high=1e4), [1]), name="large magnitudes (no overflow)")
    yield Sample((T((3, 0)), [1]), name="zero-size reduced dim: -inf")
    yield Sample((T((2, 3), values=[[float("-inf")] * 3, [0.0, float("-inf"), 1.0]], requires_grad=False), [1]),
                 name="-inf entries")


def _with_nans_lse(fn):
    def samples(dtype):
        yield from fn(dtype)
        yield Sample((T((3, 4), values=_NAN_ROWS, requires_grad=False), [1]), name="nan and inf")
        yield Sample((T((2, 2), values=[[1.0, INF], [INF, INF]], requires_grad=False), [1]), name="+inf rows")
    return samples


register(OpInfo("logsumexp", _with_nans_lse(_lse_samples), bf16=True))


# ---------------------------------------------------------------- all / any / count_nonzero

def _bool_reduce_samples(dtype):
    lo, hi = (0, 2) if dtype in INTS else (-1, 2)
    yield Sample((T((3, 4), low=lo, high=hi),), name="all elements")
    yield Sample((T((), low=lo, high=hi),), name="0-d")
    yield Sample((T((2, 3, 4), low=lo, high=hi), [1]), name="dim")
    yield Sample((T((2, 3, 4), low=lo, high=hi), [-1, 0], True), name="negative dims, keepdim")
    yield Sample((T((4, 5), layout="transposed", low=lo, high=hi),), {"dim": [0]}, name="transposed")
    yield Sample((T((3, 6), layout="strided", low=lo, high=hi), [1]), name="strided")
    yield Sample((T((0, 3), low=lo, high=hi), [0]), name="zero-size")
    yield Sample((T((0, 3), low=lo, high=hi),), name="zero-size, all elements")
    yield Sample((T((2, 3), values=[[0, 0, 0], [1, 1, 1]]), [1]), name="constant rows")
    yield Sample((T((2, 3), low=lo, high=hi), []), name="empty dim list: no reduction")


def _count_samples(dtype):
    lo, hi = (-1, 2)
    yield Sample((T((3, 4), low=lo, high=hi),), name="all elements")
    yield Sample((T((), low=lo, high=hi),), name="0-d")
    yield Sample((T((2, 3, 4), low=lo, high=hi), [1]), name="dim")
    yield Sample((T((2, 3, 4), low=lo, high=hi),), {"dim": [-1, 0]}, name="negative dims")
    yield Sample((T((4, 5), layout="transposed", low=lo, high=hi), [0]), name="transposed")
    yield Sample((T((3, 6), layout="strided", low=lo, high=hi), [1]), name="strided")
    yield Sample((T((0, 3), low=lo, high=hi), [0]), name="zero-size")
    yield Sample((T((2, 3), values=[[0, 0, 0], [1, 1, 1]]), [1]), name="constant rows")


def _floats_with_zeros(fn):
    """Floats drawn from {-1, 0, 1} (rounded), so zeros occur."""
    def samples(dtype):
        for s in fn(dtype):
            if _is_float(dtype):
                s.args = tuple(_round(a) for a in s.args)
            yield s
    return samples


def _round(a):
    if isinstance(a, T) and a.values is None:
        return _Rounded(**a.__dict__)
    return a


class _Rounded(T):
    def array(self, rng, dtype):
        return np.round(super().array(rng, dtype))


register(OpInfo("all", _floats_with_zeros(_bool_reduce_samples), dtypes=("bool", "float32") + INTS + SMALL_INTS))
register(OpInfo("any", _floats_with_zeros(_bool_reduce_samples), dtypes=("bool", "float32") + INTS + SMALL_INTS))
register(OpInfo("count_nonzero", _floats_with_zeros(_count_samples), dtypes=("bool",) + FLOATS + INTS + SMALL_INTS))


# ---------------------------------------------------------------- scans

def _scan_samples(dtype, low=-3.0, high=3.0):
    kw = dict(low=low, high=high)
    yield Sample((T((3, 4), **kw), 1), name="dim 1")
    yield Sample((T((), **kw), 0), name="0-d")
    yield Sample((T((7,), **kw), 0), name="1-d")
    yield Sample((T((2, 3, 4), **kw), -2), name="negative dim")
    yield Sample((T((2, 3, 4), **kw),), {"dim": 0}, name="keyword dim")
    yield Sample((T((4, 5), layout="transposed", **kw), 1), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw), 1), name="strided")
    yield Sample((T((0, 3), **kw), 0), name="zero-size")


def _cumsum_samples(dtype):
    if _is_float(dtype):
        yield from _scan_samples(dtype)
        # 500-term running sums of +-1e4 in float32.
        yield Sample((T((4, 500), low=-1e4, high=1e4), 1), name="large magnitudes")
        yield Sample((T((3, 4)), 1), {"dtype": "float64"}, name="dtype float64")
    else:
        yield from _scan_samples(dtype, low=-50, high=50)
        yield Sample((T((3, 4), dtype="bool"), 1), name="bool input")
        yield Sample((T((3, 4), low=-50, high=50), 0), {"dtype": "float32"}, name="dtype float32")


def _cumprod_samples(dtype):
    if _is_float(dtype):
        yield from _scan_samples(dtype, low=0.5, high=1.5)
        yield Sample((T((3, 6), low=-1.5, high=1.5), 1), name="negative values")
        yield Sample((T((2, 5), values=[[1.0, 0.0, 2.0, -1.5, 3.0], [0.5, 2.0, 0.0, 1.0, 0.0]]), 1),
                     name="zeros")
        yield Sample((T((3, 4), low=0.5, high=1.5), 1), {"dtype": "float64"}, name="dtype float64")
    else:
        yield from _scan_samples(dtype, low=-3, high=4)


def _cummax_samples(dtype):
    if _is_float(dtype):
        yield from _scan_samples(dtype)
    else:
        # A wide range keeps ties (whose index PyTorch does not document) unlikely.
        yield from _scan_samples(dtype, low=-100000, high=100000)


register(OpInfo("cumsum", _with_nans(_cumsum_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True,
                tol={"float32": (1e-2, 1e-4), "bfloat16": (1e-1, 2e-2)}))
register(OpInfo("cumprod", _with_nans(_cumprod_samples), dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))
# Among equal values both kiln and PyTorch's CPU kernel report the last index (not documented by
# PyTorch, but relied on here for bfloat16, whose rounding makes ties).
register(OpInfo("cummax", _with_nans(_cummax_samples), dtypes=FLOATS + INTS, bf16=True))
register(OpInfo("cummin", _with_nans(_cummax_samples), dtypes=FLOATS + INTS, bf16=True))


def _values_if_bf16(r):
    """bfloat16 rounds distinct floats into ties, where the chosen index is unspecified: values only."""
    return (r[0],) if r[0].dtype in (kiln.bfloat16, torch.bfloat16) else r


# ---------------------------------------------------------------- sort / topk / argsort

def _sort_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-5, 5)  # ints: ties, resolved by stable=True
    kw = dict(low=lo, high=hi)
    yield Sample((T((3, 6), **kw),), name="last dim")
    yield Sample((T((), **kw),), name="0-d")
    yield Sample((T((2, 3, 4), **kw), 1), name="dim 1")
    yield Sample((T((2, 3, 4), **kw), -3, True), name="negative dim, descending")
    yield Sample((T((2, 3, 4), **kw),), {"dim": 2, "descending": True, "stable": True}, name="keywords")
    yield Sample((T((4, 5), layout="transposed", **kw), 0), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw),), name="strided")
    yield Sample((T((40, 50), **kw), 1), name="longer rows")
    yield Sample((T((0, 3), **kw), 0), name="zero-size")
    yield Sample((T((2, 6), dtype="float32", requires_grad=False,
                    values=[[1.0, 3.0, 1.0, 2.0, 3.0, 1.0], [0.0, 0.0, -1.0, 0.0, -1.0, 0.0]]),),
                 {"stable": True}, name="float ties, stable")
    yield Sample((T((2, 6), dtype="float32", requires_grad=False,
                    values=[[1.0, 3.0, 1.0, 2.0, 3.0, 1.0], [0.0, 0.0, -1.0, 0.0, -1.0, 0.0]]), -1, True),
                 {"stable": True}, name="float ties, stable descending")
    yield Sample((T((2, 5), dtype="float32", requires_grad=False,
                    values=[[1.0, float("nan"), -float("inf"), float("inf"), 0.0],
                            [float("nan"), 2.0, float("nan"), -1.0, 5.0]]),), name="nan and inf (nan sorts last)")


def _torch_sort(x, dim=-1, descending=False, stable=True):
    # kiln's schema defaults to stable=True; torch.sort's to False (ties in unspecified order).
    return torch.sort(x, dim=dim, descending=descending, stable=stable)


register(OpInfo("sort", _sort_samples, torch_fn=_torch_sort, dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))


def _argsort_samples(dtype):
    for s in _sort_samples(dtype):
        if s.kwargs.get("stable") is None:
            s.kwargs = dict(s.kwargs, stable=True)
        yield s


def _torch_argsort(x, dim=-1, descending=False, stable=True):
    return torch.argsort(x, dim=dim, descending=descending, stable=stable)


register(OpInfo("argsort", _argsort_samples, torch_fn=_torch_argsort, dtypes=FLOATS + INTS + SMALL_INTS, bf16=True))


def _topk_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-100000, 100000)
    kw = dict(low=lo, high=hi)
    yield Sample((T((3, 6), **kw), 2), name="k=2")
    yield Sample((T((), **kw), 1), name="0-d")
    yield Sample((T((), **kw), 0), name="0-d, k=0 (PyTorch returns the element)")
    yield Sample((T((2, 3, 4), **kw), 3, 1), name="dim 1")
    yield Sample((T((2, 3, 4), **kw), 2, -1, False), name="smallest")
    yield Sample((T((2, 3, 4), **kw), 4), {"dim": 2, "largest": True, "sorted": True}, name="k = size, keywords")
    yield Sample((T((2, 5), **kw), 0, 1), name="k=0")
    yield Sample((T((4, 5), layout="transposed", **kw), 2, 0), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw), 3), name="strided")
    yield Sample((T((30, 60), **kw), 5), name="longer rows")
    yield Sample((T((0, 3), **kw), 2), name="zero-size")


register(OpInfo("topk", _with_nans(_topk_samples, 2, 1, dim_arg=False), dtypes=FLOATS + INTS, bf16=True, output=_values_if_bf16))


def _kth_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-100000, 100000)
    kw = dict(low=lo, high=hi)
    yield Sample((T((3, 6), **kw), 2), name="k=2")
    yield Sample((T((), **kw), 1), name="0-d")
    yield Sample((T((2, 3, 4), **kw), 3, 1), name="dim 1")
    yield Sample((T((2, 3, 4), **kw), 1, -1, True), name="k=1 keepdim")
    yield Sample((T((2, 3, 4), **kw), 4), {"dim": 2, "keepdim": False}, name="k = size, keywords")
    yield Sample((T((4, 5), layout="transposed", **kw), 2, 0), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw), 3), name="strided")
    yield Sample((T((3, 0), **kw), 2, 0), name="zero-size kept dim")


register(OpInfo("kthvalue", _with_nans(_kth_samples, 2, 1, dim_arg=False), dtypes=FLOATS + INTS, bf16=True, output=_values_if_bf16))


def _median_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-100000, 100000)
    kw = dict(low=lo, high=hi)
    yield Sample((T((3, 5), **kw),), name="odd count")
    yield Sample((T((3, 4), **kw),), name="even count: lower median")
    yield Sample((T((), **kw),), name="0-d")
    yield Sample((T((4, 5), layout="transposed", **kw),), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw),), name="strided")


def _median_dim_samples(dtype):
    lo, hi = (-3, 3) if _is_float(dtype) else (-100000, 100000)
    kw = dict(low=lo, high=hi)
    yield Sample((T((3, 5), **kw), 1), name="odd")
    yield Sample((T((3, 4), **kw), 1), name="even: lower median")
    yield Sample((T((), **kw), 0), name="0-d")
    yield Sample((T((2, 3, 4), **kw), -2, True), name="negative dim keepdim")
    yield Sample((T((2, 3, 4), **kw),), {"dim": 0}, name="keyword dim")
    yield Sample((T((4, 5), layout="transposed", **kw), 0), name="transposed")
    yield Sample((T((3, 6), layout="strided", **kw), 1), name="strided")
    yield Sample((T((3, 0), **kw), 0), name="zero-size kept dim")


register(OpInfo("median", _with_nans(_median_samples, dim_arg=False), dtypes=FLOATS + INTS, bf16=True))
register(OpInfo("median_dim", _with_nans(_median_dim_samples), kiln_fn=kiln.median, torch_fn=torch.median, dtypes=FLOATS + INTS, bf16=True, output=_values_if_bf16))


# ---------------------------------------------------------------- searchsorted / bucketize

_SEQ = [-2.0, -1.0, -1.0, 0.0, 0.5, 2.0, 2.0, 3.0]


def _sorted_rows(dtype):
    return T((2, 4), values=[[-1.0, 0.0, 0.0, 2.0], [-3.0, -2.0, 1.0, 1.0]] if _is_float(dtype)
             else [[-1, 0, 0, 2], [-3, -2, 1, 1]])


def _search_samples(dtype):
    seq = T((8,), values=_SEQ if _is_float(dtype) else [int(v) for v in _SEQ])
    lo, hi = (-3, 4)
    vals = (lambda shape, **k: _Rounded(shape, low=lo, high=hi, **k)) if _is_float(dtype) else \
        (lambda shape, **k: T(shape, low=lo, high=hi, **k))
    yield Sample((seq, vals((3, 4))), name="1-d sequence, ties with boundaries")
    yield Sample((seq, vals((3, 4))), {"right": True}, name="right")
    yield Sample((seq, vals((5,))), {"out_int32": True}, name="out_int32")
    yield Sample((seq, vals(())), name="0-d values")
    yield Sample((seq, vals((0, 2))), name="zero-size values")
    yield Sample((_sorted_rows(dtype), vals((2, 5))), name="batched sequences")
    yield Sample((_sorted_rows(dtype), vals((2, 5))), {"right": True}, name="batched, right")
    yield Sample((seq, vals((4, 5), layout="transposed")), name="transposed values")
    if _is_float(dtype):
        nan_vals = T((4,), values=[NAN, INF, -INF, 0.0])
        yield Sample((seq, nan_vals), name="nan and inf values (nan goes last)")
        yield Sample((seq, nan_vals), {"right": True}, name="nan and inf values, right")


def _bucket_samples(dtype):
    for s in _search_samples(dtype):
        if s.args[0].shape != (8,):
            continue  # bucketize takes 1-d boundaries only
        yield Sample((s.args[1], s.args[0]), s.kwargs, name=s.name)


register(OpInfo("searchsorted", _search_samples, dtypes=FLOATS + INTS))
register(OpInfo("bucketize", _bucket_samples, dtypes=FLOATS + INTS))


# ---------------------------------------------------------------- nonzero / unique

def _nonzero_samples(dtype):
    mk = (lambda shape, **k: _Rounded(shape, low=-1, high=1, **k)) if _is_float(dtype) else \
        (lambda shape, **k: T(shape, low=-1, high=2, **k))
    yield Sample((mk((3, 4)),), name="2-d")
    yield Sample((mk((2, 3, 4)),), name="3-d")
    yield Sample((mk(()),), name="0-d")
    yield Sample((mk((7,)),), name="1-d")
    yield Sample((mk((4, 5), layout="transposed"),), name="transposed (row-major order)")
    yield Sample((mk((3, 6), layout="strided"),), name="strided")
    yield Sample((mk((0, 3)),), name="zero-size")
    yield Sample((T((2, 3), values=[[0, 0, 0], [0, 0, 0]]),), name="all zero")


def _unique_samples(dtype):
    mk = (lambda shape, **k: _Rounded(shape, low=-3, high=3, **k)) if _is_float(dtype) else \
        (lambda shape, **k: T(shape, low=-3, high=3, **k))
    yield Sample((mk((12,)),), name="1-d")
    yield Sample((mk((3, 4)),), {"return_inverse": True}, name="inverse (shape of input)")
    yield Sample((mk((3, 4)),), {"return_counts": True}, name="counts")
    yield Sample((mk((3, 4)),), {"sorted": True, "return_inverse": True, "return_counts": True}, name="all outputs")
    yield Sample((mk(()),), {"return_inverse": True, "return_counts": True}, name="0-d")
    yield Sample((mk((0,)),), {"return_inverse": True, "return_counts": True}, name="zero-size")
    yield Sample((mk((4, 5), layout="transposed"),), {"return_inverse": True}, name="transposed")
    yield Sample((T((4, 3), values=[[1, 2, 3], [0, 0, 1], [1, 2, 3], [0, 0, 0]]),),
                 {"dim": 0, "return_inverse": True, "return_counts": True}, name="dim 0 (unique rows)")
    yield Sample((T((2, 4), values=[[1, 0, 1, 2], [3, 1, 3, 0]]),),
                 {"dim": 1, "return_inverse": True, "return_counts": True}, name="dim 1 (unique columns)")
    yield Sample((T((2, 4), values=[[1, 0, 1, 2], [3, 1, 3, 0]]),),
                 {"dim": -1}, name="negative dim")
    yield Sample((T((0, 2)),), {"dim": 0, "return_inverse": True, "return_counts": True}, name="dim of size 0")
    if dtype in ("float32", "float64"):
        yield Sample((T((6,), values=[1.0, NAN, 1.0, NAN, -0.0, 0.0]),), {"return_inverse": True, "return_counts": True},
                     name="nan never equal, -0 == 0")


register(OpInfo("nonzero", _nonzero_samples, dtypes=("bool",) + FLOATS + INTS + SMALL_INTS))
register(OpInfo("unique", _unique_samples, kiln_fn=kiln.unique, torch_fn=torch.unique, dtypes=("bool",) + FLOATS + INTS + SMALL_INTS))


# float64 is compared tighter than the suite's default (1e-7): a float32 step hidden in a float64
# path (e.g. a product of two wrapped numbers) shows up as ~1e-8 errors.
for _op in set(OPS) - _BEFORE:
    OPS[_op].tol.setdefault("float64", (1e-10, 1e-10))
