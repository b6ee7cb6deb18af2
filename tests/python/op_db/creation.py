"""Creation prims and composites: fills, ranges, eye, tril/triu, one_hot, and the random
factories (compared by property: shape, dtype, range, moments, determinism under kiln.manual_seed)."""
import math

import numpy as np
import torch
import torch.nn.functional as F

import kiln
from op_db import OpInfo, Sample, T, register
from oracle import to_numpy

FLOATS = ("float32", "float64")
ALL = ("float32", "float64", "int64", "bool")


# ---------------------------------------------------------------- deterministic creation

def _full(dtype):
    yield Sample(((2, 3), 1.5 if dtype != "bool" else True), {"dtype": dtype}, name="2-d")
    yield Sample(((), 2), {"dtype": dtype}, name="0-d")
    yield Sample(((0, 3), 1), {"dtype": dtype}, name="zero-size")
    if dtype == "float32":  # the fill value's type decides the dtype when none is given
        yield Sample(((3,), 7), name="int fill: int64")
        yield Sample(((3,), 2.5), name="float fill: float32")
        yield Sample(((3,), False), name="bool fill: bool")
        yield Sample(((2, 2), -1e30), {"dtype": "float64"}, name="large magnitude")


register(OpInfo("full", _full, dtypes=ALL))


def _iota_torch(length, *, start=0, step=1, dtype=torch.int64):
    """iota(n, start, step)[i] = start + i * step (the XLA/JAX prim; PyTorch has only arange)."""
    if dtype.is_floating_point:
        return (start + torch.arange(length, dtype=torch.float64) * step).to(dtype)
    return start + torch.arange(length, dtype=dtype) * step


def _iota(dtype):
    yield Sample((5,), {"dtype": dtype}, name="0..4")
    yield Sample((6,), {"start": 3, "step": -2, "dtype": dtype}, name="start, negative step")
    yield Sample((0,), {"dtype": dtype}, name="empty")
    if dtype in FLOATS:
        yield Sample((7,), {"start": -1.5, "step": 0.25, "dtype": dtype}, name="fractional start/step")
    else:
        yield Sample((4,), name="default dtype int64")


register(OpInfo("iota", _iota, torch_fn=_iota_torch, dtypes=("int64", "int32", "float32", "float64")))


def _zeros_ones(dtype):
    yield Sample(((2, 3),), {"dtype": dtype}, name="2-d")
    yield Sample(((),), {"dtype": dtype}, name="0-d")
    yield Sample(((0, 4),), {"dtype": dtype}, name="zero-size")
    if dtype == "float32":
        yield Sample(((3,),), name="default dtype")


register(OpInfo("zeros", _zeros_ones, dtypes=ALL))
register(OpInfo("ones", _zeros_ones, dtypes=ALL))


def _like(dtype):
    yield Sample((T((2, 3)),), name="same dtype")
    yield Sample((T((3, 4), layout="transposed"),), name="transposed")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((0, 2)),), name="zero-size")
    other = "int64" if dtype != "int64" else "float64"
    yield Sample((T((2,)),), {"dtype": other}, name="dtype kwarg")


register(OpInfo("zeros_like", _like, dtypes=ALL))
register(OpInfo("ones_like", _like, dtypes=ALL))


def _full_like(dtype):
    fill = True if dtype == "bool" else 3
    for s in _like(dtype):
        yield Sample(s.args + (fill,), s.kwargs, name=s.name)
    if dtype in FLOATS:
        yield Sample((T((2, 2)), -2.5e4), name="large fill")


register(OpInfo("full_like", _full_like, dtypes=ALL))


def _check_shape_dtype(kr, tr, sample, dtype):
    """empty / empty_like: the values are unspecified; shape and dtype must match."""
    assert tuple(kr.shape) == tuple(tr.shape), f"shape {tuple(kr.shape)} != {tuple(tr.shape)}"
    assert str(kr.dtype).replace("kiln.", "") == str(tr.dtype).replace("torch.", ""), f"dtype {kr.dtype} != {tr.dtype}"


register(OpInfo("empty", _zeros_ones, check=_check_shape_dtype, dtypes=ALL))
register(OpInfo("empty_like", _like, check=_check_shape_dtype, dtypes=ALL))


def _arange(dtype):
    if dtype == "int64":
        yield Sample((5,), name="end only")
        yield Sample((2, 11, 3), name="start, end, step")
        yield Sample((10, -3, -4), name="negative step")
        yield Sample((3, 3), name="empty")
        yield Sample((0, 5), {"dtype": "float64"}, name="int arguments, float dtype")
    else:
        yield Sample((0.0, 1.0, 0.1), {"dtype": dtype}, name="fractional step")
        yield Sample((-2.5, 3), {"dtype": dtype}, name="float start")
        yield Sample((1e4, -1e4, -1.5e3), {"dtype": dtype}, name="large, negative step")
        yield Sample((1, 2.5, 0.5),) if dtype == "float32" else Sample((4,), {"dtype": dtype}, name="int end")


register(OpInfo("arange", _arange, dtypes=("int64", "float32", "float64")))


def _linspace(dtype):
    yield Sample((0, 1, 5), {"dtype": dtype}, name="0..1")
    # Large magnitudes away from 0: PyTorch's float32 linspace is off by about |end| * eps near 0
    # (its midpoint of -1e4..1e4 is 2.4e-4), an error no elementwise tolerance can express.
    yield Sample((1e4, 2e4, 7), {"dtype": dtype}, name="large")
    if dtype == "float64":
        yield Sample((-1e4, 1e4, 7), {"dtype": dtype}, name="large, through 0")
    yield Sample((3, -2, 11), {"dtype": dtype}, name="decreasing")
    yield Sample((2.5, 9, 1), {"dtype": dtype}, name="one step")
    yield Sample((0, 1, 0), {"dtype": dtype}, name="zero steps")
    yield Sample((-7, 13, 6), {"dtype": dtype}, name="integral ends, fractional step")
    if dtype == "float32":
        yield Sample((0, 10, 6), name="default dtype")


register(OpInfo("linspace", _linspace, dtypes=("float32", "float64", "int64")))


def _eye(dtype):
    yield Sample((3,), {"dtype": dtype}, name="square")
    yield Sample((2, 4), {"dtype": dtype}, name="wide")
    yield Sample((4, 2), {"dtype": dtype}, name="tall")
    yield Sample((0,), {"dtype": dtype}, name="zero-size")
    yield Sample((3, 0), {"dtype": dtype}, name="zero columns")
    if dtype == "float32":
        yield Sample((2,), name="default dtype")


register(OpInfo("eye", _eye, dtypes=ALL))


def _tri(dtype):
    yield Sample((T((4, 4)),), name="square")
    yield Sample((T((3, 5)), 1), name="wide, diagonal 1")
    yield Sample((T((5, 3)), -2), name="tall, diagonal -2")
    yield Sample((T((2, 3, 4), layout="transposed"),), {"diagonal": 10}, name="batched, transposed, past the size")
    yield Sample((T((3, 4), layout="strided"), -10), name="strided, before the start")
    yield Sample((T((2, 0, 3)),), name="zero-size")


register(OpInfo("tril", _tri, dtypes=ALL))
register(OpInfo("triu", _tri, dtypes=ALL))


def _one_hot(dtype):
    yield Sample((T((5,), dtype="int64", low=0, high=4), 4), name="1-d")
    yield Sample((T((2, 3), dtype="int64", low=0, high=6),), name="num_classes inferred")
    yield Sample((T((), dtype="int64", values=2), 3), name="0-d")
    yield Sample((T((0,), dtype="int64", low=0, high=3), 3), name="zero-size")
    yield Sample((T((3, 4), dtype="int64", low=0, high=5, layout="transposed"),), {"num_classes": 7},
                 name="transposed, kwarg")


register(OpInfo("one_hot", _one_hot, torch_fn=F.one_hot, dtypes=("int64",)))


# ---------------------------------------------------------------- random creation

SEED = 1234


def _seeded(fn):
    """Calls fn twice after the same manual_seed and once more (the stream moved on)."""
    def call(*args, **kwargs):
        kiln.manual_seed(SEED)
        a = fn(*args, **kwargs)
        kiln.manual_seed(SEED)
        b = fn(*args, **kwargs)
        c = fn(*args, **kwargs)
        return a, b, c
    return call


def _same_meta(k, t):
    _check_shape_dtype(k, t, None, None)


def _random_check(stat, seeded=True):
    """check= for a random op: kiln's result has torch's shape and dtype, meets stat(values, result),
    and (seeded) repeats exactly under the same seed and differs once the stream moved on."""
    def check(kr, tr, sample, dtype):
        if seeded:
            a, b, c = kr
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg="not reproducible under manual_seed")
            if to_numpy(a).size >= 16:
                assert np.any(to_numpy(a) != to_numpy(c)), "two draws gave the same values"
            kr = a
        _same_meta(kr, tr)
        stat(to_numpy(kr).astype(np.float64) if to_numpy(kr).dtype != np.bool_ else to_numpy(kr), kr)
    return check


def _uniform_stat(v, _):
    if v.size == 0:
        return
    assert v.min() >= 0 and v.max() < 1, f"uniform values outside [0, 1): {v.min()} .. {v.max()}"
    if v.size >= 1000:  # mean of n U(0,1): sd sqrt(1/12n); var of U(0,1) is 1/12
        n = v.size
        assert abs(v.mean() - 0.5) < 6 * math.sqrt(1 / 12 / n), f"uniform mean {v.mean()}"
        assert abs(v.var() - 1 / 12) < 0.01, f"uniform variance {v.var()}"
        hist = np.histogram(v, bins=10, range=(0, 1))[0] / n
        assert np.all(np.abs(hist - 0.1) < 6 * math.sqrt(0.09 / n)), f"uniform histogram {hist}"


def _normal_stat(v, _):
    if v.size < 1000:
        assert np.all(np.isfinite(v))
        return
    n = v.size
    assert abs(v.mean()) < 6 / math.sqrt(n), f"normal mean {v.mean()}"
    assert abs(v.std() - 1) < 6 / math.sqrt(2 * n), f"normal std {v.std()}"
    frac = np.mean(np.abs(v) < 1)  # P(|z| < 1) = 0.6827
    assert abs(frac - 0.6827) < 6 * math.sqrt(0.6827 * 0.3173 / n), f"normal P(|z|<1) {frac}"


def _sizes(dtype):
    yield Sample(((4000,),), {"dtype": dtype}, name="large 1-d (statistics)")
    yield Sample(((40, 50),), {"dtype": dtype}, name="2-d (statistics)")
    yield Sample(((),), {"dtype": dtype}, name="0-d")
    yield Sample(((0, 3),), {"dtype": dtype}, name="zero-size")
    if dtype == "float32":
        yield Sample(((3, 2),), name="default dtype")


register(OpInfo("rand", _sizes, kiln_fn=_seeded(kiln.rand), check=_random_check(_uniform_stat)))
register(OpInfo("randn", _sizes, kiln_fn=_seeded(kiln.randn), check=_random_check(_normal_stat)))


def _prim_random(kiln_op):
    """rand_uniform / rand_normal take their seed and offset as arguments: the same (seed, offset)
    gives the same values whatever the global generator; another seed gives others."""
    def call(size, seed, offset, **kwargs):
        kiln.manual_seed(1)
        a = kiln_op(size, seed, offset, **kwargs)
        kiln.manual_seed(2)
        b = kiln_op(size, seed, offset, **kwargs)
        c = kiln_op(size, seed + 1, offset, **kwargs)
        return a, b, c
    return call


def _prim_sizes(dtype):
    for s in _sizes(dtype):
        yield Sample((s.args[0], 77, 5), s.kwargs, name=s.name)


def _torch_rand(size, seed, offset, **kwargs):
    return torch.rand(size, **kwargs)


def _torch_randn(size, seed, offset, **kwargs):
    return torch.randn(size, **kwargs)


register(OpInfo("rand_uniform", _prim_sizes, kiln_fn=_prim_random(kiln.rand_uniform), torch_fn=_torch_rand,
                check=_random_check(_uniform_stat)))
register(OpInfo("rand_normal", _prim_sizes, kiln_fn=_prim_random(kiln.rand_normal), torch_fn=_torch_randn,
                check=_random_check(_normal_stat)))


def _like_sizes(dtype):
    yield Sample((T((4000,)),), name="large (statistics)")
    yield Sample((T((50, 40), layout="transposed"),), name="transposed (statistics)")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((0, 2)),), name="zero-size")
    other = "float64" if dtype == "float32" else "float32"
    yield Sample((T((30, 40)),), {"dtype": other}, name="dtype kwarg")


register(OpInfo("rand_like", _like_sizes, kiln_fn=_seeded(kiln.rand_like), check=_random_check(_uniform_stat)))
register(OpInfo("randn_like", _like_sizes, kiln_fn=_seeded(kiln.randn_like), check=_random_check(_normal_stat)))


def _randint_stat(low, high):
    def stat(v, _):
        if v.size == 0:
            return
        assert v.min() >= low and v.max() < high, f"randint values outside [{low}, {high}): {v.min()} .. {v.max()}"
        if v.size >= 1000 and high - low <= 20:  # every value drawn, each about equally often
            counts = np.bincount((v - low).astype(np.int64).ravel(), minlength=high - low)
            p = 1 / (high - low)
            assert np.all(np.abs(counts / v.size - p) < 6 * math.sqrt(p * (1 - p) / v.size)), f"counts {counts}"
    return stat


def _randint_check(kr, tr, sample, dtype):
    low, high = sample.args[0], sample.args[1]
    _random_check(_randint_stat(low, high))(kr, tr, sample, dtype)


def _randint(dtype):
    yield Sample((0, 10, (4000,)), name="[0, 10)")
    yield Sample((-5, 3, (40, 50)), name="negative low")
    yield Sample((2 ** 40, 2 ** 40 + 7, (3000,)), name="beyond 32 bits")
    yield Sample((0, 3, ()), name="0-d")
    yield Sample((0, 3, (0, 2)), name="zero-size")
    yield Sample((0, 100, (50,)), {"dtype": "int32"}, name="int32")
    yield Sample((0, 2, (20,)), {"dtype": "float32"}, name="float dtype")


register(OpInfo("randint", _randint, kiln_fn=_seeded(kiln.randint), check=_randint_check, dtypes=("int64",)))


def _perm_stat(v, _):
    assert np.array_equal(np.sort(v), np.arange(v.size)), f"not a permutation: {v}"


def _randperm(dtype):
    yield Sample((1000,), name="1000")
    yield Sample((17,), {"dtype": "int32"}, name="int32")
    yield Sample((5,), {"dtype": "float64"}, name="float64")
    yield Sample((1,), name="1")
    yield Sample((0,), name="0")


def _randperm_check(kr, tr, sample, dtype):
    _random_check(_perm_stat)(kr, tr, sample, dtype)
    a = to_numpy(kr[0])
    if a.size == 1000:  # position of each value: uniform, so the mean displacement is large
        assert np.mean(np.abs(a - np.arange(a.size))) > 200, "permutation is barely shuffled"


register(OpInfo("randperm", _randperm, kiln_fn=_seeded(kiln.randperm), check=_randperm_check, dtypes=("int64",)))


def _multinomial_check(kr, tr, sample, dtype):
    a, b, _ = kr
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b), err_msg="not reproducible under manual_seed")
    _same_meta(a, tr)
    v = to_numpy(a)
    probs = np.asarray(sample.args[0].values, dtype=np.float64).reshape(sample.args[0].shape)
    probs2 = probs.reshape(-1, probs.shape[-1])
    v2 = v.reshape(-1, v.shape[-1]) if v.size else v.reshape(probs2.shape[0], -1)
    replacement = sample.args[2] if len(sample.args) > 2 else sample.kwargs.get("replacement", False)
    for row, p in zip(v2, probs2):
        assert np.all(p[row] > 0), f"drew a zero-probability category: {row}"
        if not replacement:
            assert len(set(row.tolist())) == len(row), f"repeated category without replacement: {row}"
        elif row.size >= 1000:
            p = p / p.sum()
            freq = np.bincount(row, minlength=p.size) / row.size
            assert np.all(np.abs(freq - p) < 6 * np.sqrt(p * (1 - p) / row.size) + 1e-12), f"{freq} vs {p}"


def _multinomial(dtype):
    yield Sample((T((4,), values=[0.1, 0.2, 0.0, 0.7]), 3000, True), name="1-d, with replacement")
    yield Sample((T((2, 3), values=[[1, 2, 3], [5, 0, 1]]), 2000), {"replacement": True},
                 name="2-d unnormalized rows, kwarg")
    yield Sample((T((5,), values=[1, 0, 3, 2, 4]), 4), name="without replacement")
    yield Sample((T((3, 4), values=[[1, 1, 1, 1], [0, 0, 2, 1], [9, 1, 0, 3]]), 2), name="2-d without replacement")
    yield Sample((T((3,), values=[1, 2, 3]), 1), name="one sample")


register(OpInfo("multinomial", _multinomial, kiln_fn=_seeded(kiln.multinomial), check=_multinomial_check))
