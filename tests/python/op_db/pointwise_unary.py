"""Unary elementwise prims and the pointwise activation composites (relu, gelu, ...)."""
import math

import torch

import kiln
from op_db import OpInfo, Sample, T, register

F = torch.nn.functional
INF, NAN = math.inf, math.nan


def _unary(low=-3.0, high=3.0, big=None, ints=None, extra=()):
    """Generic samples: 2-d, 0-d, 3-d transposed, strided, zero-size; big=(low, high) adds a
    large-magnitude sample; ints=(low, high) adds an integer input (type promotion of int to
    float, or the op's integer kernel); extra: Samples or fns(dtype) -> Samples."""
    def gen(dtype):
        yield Sample((T((3, 4), low=low, high=high),), name="2-d")
        yield Sample((T((), low=low, high=high),), name="0-d")
        yield Sample((T((2, 3, 5), low=low, high=high, layout="transposed"),), name="transposed")
        yield Sample((T((4, 6), low=low, high=high, layout="strided"),), name="strided")
        yield Sample((T((0, 3), low=low, high=high),), name="zero-size")
        if big:
            yield Sample((T((64,), low=big[0], high=big[1]),), name=f"range {big}")
        if ints and dtype == "float32":
            yield Sample((T((2, 5), dtype="int64", low=ints[0], high=ints[1]),), name="int64 input")
        for e in extra:
            if callable(e):
                yield from e(dtype)
            else:
                yield e
    return gen


def _vals(values, grad=None, name="values"):
    return Sample((T((len(values),), values=values, requires_grad=grad),), name=name)


def _threaded(dtype):
    """One input above the kernels' parallel grain (32768 elements, src/eager/cpu/loops.h)."""
    if dtype == "float32":
        yield Sample((T((200, 200), layout="transposed"),), name="threaded, transposed")


SPECIAL = [0.0, -0.0, 1.0, -2.5, INF, -INF, NAN, 1e30, -1e-30]

# op: (samples, dtypes, bf16)
_FLOAT = ("float32", "float64")
_WITH_INTS = ("float32", "float64", "int64", "int32")

UNARY = {
    "neg": (_unary(big=(-1e4, 1e4)), _WITH_INTS + ("int8",)),
    "abs": (_unary(big=(-1e4, 1e4), extra=[_vals([0.0, -0.0, 2.0, -3.0], name="zeros: abs' is sign(0)=0")]),
            _WITH_INTS + ("int8",)),
    "sign": (_unary(big=(-1e4, 1e4), extra=[_vals([0.0, -0.0, 2.0, -3.0], name="zeros")]),
             _WITH_INTS),
    "exp": (_unary(-10, 10, big=(-80, 80), ints=(-3, 3), extra=[_vals([-1e-3, 1e-3, 0.0], name="small")]), _FLOAT),
    "exp2": (_unary(-10, 10, big=(-60, 60), ints=(-3, 3)), _FLOAT),
    "expm1": (_unary(big=(-1e-6, 1e-6), ints=(-3, 3)), _FLOAT),
    "log": (_unary(0.01, 10, big=(1e-3, 1e4), ints=(1, 9)), _FLOAT),
    "log2": (_unary(0.01, 10, big=(1e-3, 1e4), ints=(1, 9)), _FLOAT),
    "log1p": (_unary(-0.9, 3, big=(-1e-6, 1e-6), ints=(0, 9)), _FLOAT),
    "sqrt": (_unary(0.01, 10, big=(1e-3, 1e4), ints=(0, 9)), _FLOAT),
    "rsqrt": (_unary(0.05, 10, big=(1e-3, 1e4), ints=(1, 9)), _FLOAT),
    "reciprocal": (_unary(0.1, 3, extra=[Sample((T((3, 4), low=-3, high=-0.1),), name="negative"),
                                         Sample((T((2, 5), dtype="int64", low=1, high=5),), name="int64 input")]),
                   _FLOAT),
    "sin": (_unary(big=(-100, 100), ints=(-5, 5)), _FLOAT),
    "cos": (_unary(big=(-100, 100), ints=(-5, 5)), _FLOAT),
    "tan": (_unary(-1.4, 1.4, ints=(-1, 2)), _FLOAT),
    "tanh": (_unary(big=(-30, 30), ints=(-5, 5)), _FLOAT),
    "asin": (_unary(-0.95, 0.95, ints=(-1, 2)), _FLOAT),
    "acos": (_unary(-0.95, 0.95, ints=(-1, 2)), _FLOAT),
    "atan": (_unary(big=(-1e4, 1e4), ints=(-5, 5)), _FLOAT),
    "sinh": (_unary(-5, 5, ints=(-5, 5)), _FLOAT),
    "cosh": (_unary(-5, 5, ints=(-5, 5)), _FLOAT),
    "asinh": (_unary(big=(-1e4, 1e4), ints=(-5, 5)), _FLOAT),
    "acosh": (_unary(1.05, 10, big=(1.5, 1e4), ints=(1, 5)), _FLOAT),
    "atanh": (_unary(-0.95, 0.95, ints=(0, 1)), _FLOAT),
    "erf": (_unary(big=(-10, 10), ints=(-3, 3)), _FLOAT),
    "erfc": (_unary(big=(-10, 10), ints=(-3, 3)), _FLOAT),
    "erfinv": (_unary(-0.95, 0.95, ints=(0, 1)), _FLOAT),
    "sigmoid": (_unary(big=(-50, 50), ints=(-5, 5), extra=[_threaded]), _FLOAT),
    "floor": (_unary(big=(-1e4, 1e4)), _WITH_INTS),
    "ceil": (_unary(big=(-1e4, 1e4)), _WITH_INTS),
    "round": (_unary(big=(-1e4, 1e4), extra=[_vals([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.51],
                                                   name="halves round to even")]), _WITH_INTS),
    "trunc": (_unary(big=(-1e4, 1e4)), _WITH_INTS),
    "lgamma": (_unary(0.1, 10, big=(1, 1e3), ints=(1, 6),
                      extra=[Sample((T((8,), low=-2.9, high=-2.1),), name="negative non-integers")]), _FLOAT),
    "digamma": (_unary(0.1, 10, big=(1, 1e3), ints=(1, 6),
                       extra=[Sample((T((8,), low=-2.9, high=-2.1),), name="negative non-integers")]), _FLOAT),
}



def _with_specials(gen, nan=True, posinf=True):
    """Adds the special values (nan, +-inf, signed zeros, huge, tiny) as a forward-only sample."""
    def wrapped(dtype):
        yield from gen(dtype)
        if dtype in ("float32", "float64", "bfloat16"):
            vals = [v for v in SPECIAL if (nan or not math.isnan(v)) and (posinf or v != INF)]
            yield _vals(vals + [-1.0, 0.5, -3.0, 1e-30], grad=False, name="special values")
    return wrapped


_INT_EDGE = {"int8": [-128, 127, -1, 0], "int32": [-2**31, 2**31 - 1, -1, 0], "int64": [-2**63, 2**63 - 1, -1, 0]}


def _with_int_edges(gen):
    """Adds the integer extremes (abs/neg of the minimum wrap around, as in PyTorch)."""
    def wrapped(dtype):
        yield from gen(dtype)
        if dtype in _INT_EDGE:
            yield _vals(_INT_EDGE[dtype], name="integer extremes")
    return wrapped


# Deliberate difference: kiln's sign(nan) is nan (as NumPy's); PyTorch's is 0, which hides a NaN
# behind a valid-looking sign. The sign sample leaves NaN out.
for _op, (_gen, _dtypes) in UNARY.items():
    register(OpInfo(_op, _with_int_edges(_with_specials(_gen, nan=_op != "sign")), dtypes=_dtypes, bf16=True))


def _classify(dtype):
    if dtype in ("float32", "float64", "bfloat16"):
        yield _vals(SPECIAL, name="nan, inf, -inf, zeros, huge")
        yield Sample((T((3, 4), values=[[NAN, 1, INF, -INF], [0, -1, 2, NAN], [INF, INF, 3, 4]],
                        layout="contiguous"),), name="2-d nan/inf")
    yield Sample((T((3, 4)),), name="2-d")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((2, 3, 5), layout="transposed"),), name="transposed")
    yield Sample((T((0, 2)),), name="zero-size")


for _op in ("isnan", "isinf", "isfinite"):
    register(OpInfo(_op, _classify, dtypes=("float32", "float64", "int64", "bool"), bf16=True))


def _logical_not(dtype):
    yield Sample((T((3, 4), low=-2, high=2),), name="2-d")
    yield Sample((T((), low=-2, high=2),), name="0-d")
    yield Sample((T((2, 3, 5), low=-2, high=2, layout="transposed"),), name="transposed")
    yield Sample((T((0, 2)),), name="zero-size")
    if dtype.startswith("float"):
        yield _vals([0.0, -0.0, NAN, 1e-30, INF], name="zeros, nan, tiny")


register(OpInfo("logical_not", _logical_not, dtypes=("float32", "float64", "int64", "int32", "bool"), bf16=True))


def _bitwise_not(dtype):
    lo, hi = (0, 255) if dtype == "uint8" else (-100, 100)
    yield Sample((T((3, 4), low=lo, high=hi),), name="2-d")
    yield Sample((T((), low=lo, high=hi),), name="0-d")
    yield Sample((T((2, 3, 5), low=lo, high=hi, layout="strided"),), name="strided")
    yield Sample((T((0, 2)),), name="zero-size")


register(OpInfo("bitwise_not", _bitwise_not, dtypes=("int64", "int32", "int16", "int8", "uint8", "bool")))


# ---------------------------------------------------------------- activations (composites)

def _act(low=-3.0, high=3.0, kwargs_list=(), big=(-1e4, 1e4)):
    def gen(dtype):
        yield from _unary(low, high, big=big)(dtype)
        for kw in kwargs_list:
            yield Sample((T((4, 5), low=low, high=high),), dict(kw), name=f"kwargs {kw}")
    return gen


def _gelu(dtype):
    yield from _unary(big=(-20, 20))(dtype)
    yield Sample((T((4, 5)),), {"approximate": "tanh"}, name="tanh approximation")
    yield Sample((T((2, 3, 4), layout="transposed"),), {"approximate": "tanh"}, name="tanh, transposed")


ACTIVATIONS = {
    "relu": (_act(), kiln.relu, torch.relu, _WITH_INTS),
    "relu6": (_act(-8, 8), kiln.relu6, F.relu6, _FLOAT),
    "leaky_relu": (_act(kwargs_list=[{"negative_slope": 0.2}, {"negative_slope": 2}]),
                   kiln.leaky_relu, F.leaky_relu, _FLOAT),
    "elu": (_act(kwargs_list=[{"alpha": 0.5}, {"alpha": 2}]), kiln.elu, F.elu, _FLOAT),
    "selu": (_act(big=(-50, 50)), kiln.selu, F.selu, _FLOAT),
    "gelu": (_gelu, kiln.gelu, F.gelu, _FLOAT),
    "silu": (_act(big=(-50, 50)), kiln.silu, F.silu, _FLOAT),
    "mish": (_act(big=(-50, 50)), kiln.mish, F.mish, _FLOAT),
    "softplus": (_act(big=(-50, 50), kwargs_list=[{"beta": 2}, {"beta": 0.5, "threshold": 2}]),
                 kiln.softplus, F.softplus, _FLOAT),
    "hardtanh": (_act(kwargs_list=[{"min_val": -0.5, "max_val": 2.0}]), kiln.hardtanh, F.hardtanh, _FLOAT),
    "hardsigmoid": (_act(-5, 5), kiln.hardsigmoid, F.hardsigmoid, _FLOAT),
    "hardswish": (_act(-5, 5), kiln.hardswish, F.hardswish, _FLOAT),
}

# PyTorch quirk left out: its vectorized float32/bfloat16 gelu gives NaN for +inf (its scalar path
# and float64 give inf, as kiln does).
for _op, (_gen, _k, _t, _dtypes) in ACTIVATIONS.items():
    register(OpInfo(_op, _with_specials(_gen, posinf=_op != "gelu"), kiln_fn=_k, torch_fn=_t, dtypes=_dtypes,
                    bf16=True))


def _square(dtype):
    yield from _unary(big=(-1e4, 1e4))(dtype)


register(OpInfo("square", _with_int_edges(_with_specials(_square)), dtypes=_WITH_INTS, bf16=True))


def _logit(dtype):
    yield from _unary(0.05, 0.95)(dtype)
    yield Sample((T((4, 5), low=0.0, high=1.0),), {"eps": 0.1}, name="eps clamps (zero gradient outside)")
    yield Sample((T((6,), low=0.01, high=0.99),), {"eps": 1e-6}, name="tiny eps")
    yield _vals([0.0, 1.0, 0.5], grad=False, name="0 and 1 give -inf, inf")


register(OpInfo("logit", _logit, bf16=True))


def _nan_to_num(dtype):
    yield _vals(SPECIAL, name="defaults: nan->0, inf->max finite of the dtype")
    yield Sample((T((9,), values=SPECIAL),), {"nan": 1.5, "posinf": 100.0, "neginf": -7.0}, name="all given")
    yield Sample((T((9,), values=SPECIAL),), {"posinf": 3.0}, name="posinf only")
    yield Sample((T((3, 4)),), name="finite 2-d")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((2, 3, 5), layout="transposed"),), name="transposed")
    yield Sample((T((0, 3)),), name="zero-size")
    if dtype == "float32":
        yield Sample((T((4,), dtype="int64"),), name="int64 unchanged")


register(OpInfo("nan_to_num", _nan_to_num, bf16=True))
