"""Binary elementwise prims, where, convert_element_type, and the pointwise composites with
several operands (clamp, lerp, addcmul, xlogy, masked_fill, dropout, ...)."""
import math

import numpy as np
import torch

import kiln
from op_db import OpInfo, Sample, T, register

INF, NAN = math.inf, math.nan
_FLOAT = ("float32", "float64")
_INTS = ("int64", "int32")


def _v(values, dtype=None, grad=None):
    a = np.array(values)
    return T(a.shape, dtype=dtype, values=values, requires_grad=grad)


def _binary(lo=-3.0, hi=3.0, olo=None, ohi=None, scalar=2.5, big=None, extra=()):
    """Generic samples of op(x, y): same shape, broadcasts, python scalar, 0-d, zero-size,
    non-contiguous; y drawn from [olo, ohi) (default [lo, hi)); big=(low, high) adds a
    large-magnitude pair; extra: Samples or fns(dtype) -> Samples."""
    olo = lo if olo is None else olo
    ohi = hi if ohi is None else ohi

    def gen(dtype):
        x = lambda shape, **kw: T(shape, low=lo, high=hi, **kw)  # noqa: E731
        y = lambda shape, **kw: T(shape, low=olo, high=ohi, **kw)  # noqa: E731
        integral = dtype in ("int64", "int32", "int16", "int8", "uint8", "bool")
        s = int(scalar) if scalar is not None and integral else scalar
        yield Sample((x((3, 4)), y((3, 4))), name="same shape")
        yield Sample((x((2, 3, 4), layout="transposed"), y((4,))), name="broadcast, transposed")
        yield Sample((x((3, 1)), y((1, 4), layout="strided")), name="broadcast both, strided")
        if scalar is not None:
            yield Sample((x((5,), layout="strided"), s), name="python scalar")
        else:
            yield Sample((x((5,), layout="strided"), y((5,), layout="strided")), name="strided")
        yield Sample((x(()), y(())), name="0-d")
        yield Sample((x(()), y((0, 3))), name="0-d and zero-size")
        yield Sample((x((4, 3)), y(())), name="tensor and 0-d")
        if big:
            yield Sample((T((32,), low=big[0], high=big[1]), T((32,), low=big[0], high=big[1])), name=f"range {big}")
        for e in extra:
            if callable(e):
                yield from e(dtype)
            else:
                yield e
    return gen


def _promotion(op_lo=1, op_hi=4, bools=True, scalars=True):
    """Type promotion: int tensor + float scalar, int32 + int64, bool + int, float32 tensor +
    float64 0-d tensor, int tensor + float64 0-d tensor (checked once, in the float32 run)."""
    def gen(dtype):
        if dtype != "float32":
            return
        if scalars:
            yield Sample((T((3, 4), dtype="int64", low=op_lo, high=op_hi), 2.5), name="int64 tensor, float scalar")
            yield Sample((T((3, 4), dtype="int32", low=op_lo, high=op_hi),
                          T((3, 4), dtype="int64", low=op_lo, high=op_hi)),
                     name="int32 + int64")
        if bools:  # PyTorch refuses bool operands for sub
            yield Sample((T((3, 4), dtype="bool"), T((3, 4), dtype="int64", low=op_lo, high=op_hi)),
                         name="bool + int64")
        yield Sample((T((3, 4), low=op_lo, high=op_hi), T((), dtype="float64", low=op_lo, high=op_hi)),
                     name="float32 tensor, float64 0-d tensor")
        yield Sample((T((3, 4), dtype="int32", low=op_lo, high=op_hi), T((), dtype="float64", low=op_lo, high=op_hi)),
                     name="int32 tensor, float64 0-d tensor")
        yield Sample((T((3,), low=op_lo, high=op_hi), T((3,), dtype="float64", low=op_lo, high=op_hi)),
                     name="float32 + float64")
    return gen


_ARITH_DTYPES = ("float32", "float64", "int64", "int32")

# Forward-only pairs of special values: zero divisors, infinities, NaN, signed zeros.
_SA = [1.0, -1.0, 0.0, -0.0, INF, -INF, NAN, 5.0, -5.0, INF, 0.0, 3.0, -3.0, 1.0]
_SB = [0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0, INF, INF, INF, -0.0, -INF, NAN, -0.0]
_SPECIAL_PAIR = Sample((_v(_SA, grad=False), _v(_SB, grad=False)), name="special values")


def _specials(dtype):
    if dtype not in _INTS and dtype != "bool":
        yield _SPECIAL_PAIR



def _threaded(dtype):
    """One operand pair above the kernels' parallel grain (32768 elements, src/eager/cpu/loops.h),
    transposed and broadcast, so the threaded strided loop is compared too (float32 run only)."""
    if dtype == "float32":
        yield Sample((T((200, 200), layout="transposed"), T((200, 1))), name="threaded, transposed + broadcast")


register(OpInfo("add", _binary(big=(-1e4, 1e4), extra=[_promotion(), _specials, _threaded]), dtypes=_ARITH_DTYPES,
                bf16=True))
register(OpInfo("sub", _binary(big=(-1e4, 1e4), extra=[_promotion(bools=False), _specials]), dtypes=_ARITH_DTYPES,
                bf16=True))
register(OpInfo("mul", _binary(big=(-1e2, 1e2), extra=[_promotion(), _specials]), dtypes=_ARITH_DTYPES, bf16=True))

# Integer division by negatives: the rounding direction is what differs between the ops.
_NUM = [7, -7, 7, -7, 0, 5, -1, 6]
_DEN = [2, 2, -2, -2, 3, -5, 3, -4]


def _div_extra(dtype):
    yield _SPECIAL_PAIR
    neg = T((3, 4), low=-3, high=-0.5)
    yield Sample((T((3, 4)), neg), name="negative divisor")
    for mode in ("floor", "trunc"):
        yield Sample((T((3, 4), low=-10, high=10), T((3, 4), low=0.5, high=3)), {"rounding_mode": mode},
                     name=f"rounding_mode={mode}")
        yield Sample((T((2, 3, 4), low=-10, high=10, layout="transposed"), neg), {"rounding_mode": mode},
                     name=f"rounding_mode={mode}, negative divisor")
        yield Sample((T((5,), low=-10, high=10), 1.5), {"rounding_mode": mode}, name=f"rounding_mode={mode}, scalar")
        yield Sample((_v(_NUM, "int64"), _v(_DEN, "int64")), {"rounding_mode": mode}, name=f"int64 {mode}, negatives")
        yield Sample((_v(_NUM, "int32"), -3), {"rounding_mode": mode}, name=f"int32 {mode}, negative scalar")
    yield Sample((_v(_NUM, "int64"), _v(_DEN, "int64")), name="int64 / int64 is true division")
    yield Sample((_v(_NUM, "int64"), 2), name="int64 / python int")


def _int_div_operands(dtype):
    if dtype in _INTS:
        yield Sample((_v(_NUM), _v(_DEN)), name="negatives")
        yield Sample((_v(_NUM), -3), name="negative scalar divisor")
        yield Sample((_v(_NUM), T((), values=-4)), name="negative 0-d divisor")
    else:
        yield Sample((_v([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0, -6.0]),
                      _v([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 3.0, 4.0])),
                     name="signs")
        yield Sample((T((3, 4), low=-10, high=10), T((3, 4), low=-3, high=-0.5)), name="negative divisor")
        yield _SPECIAL_PAIR


def _div_nonzero(lo=1.0, hi=3.5):
    """Positive divisors in [lo, hi) (ints: [1, 3)), plus the sign cases."""
    return _binary(-10, 10, lo, hi, scalar=1.5, extra=[_int_div_operands, _promotion()])



register(OpInfo("div", _binary(-10, 10, 0.5, 3, scalar=1.5, extra=[_div_extra]), bf16=True))
register(OpInfo("floor_divide", _div_nonzero(), dtypes=_ARITH_DTYPES, bf16=True))
register(OpInfo("remainder", _div_nonzero(), dtypes=_ARITH_DTYPES, bf16=True))
register(OpInfo("fmod", _div_nonzero(), dtypes=_ARITH_DTYPES, bf16=True))
register(OpInfo("true_divide", _binary(-10, 10, 0.5, 3, scalar=1.5, extra=[_promotion(), _specials]), bf16=True))


def _pow_extra(dtype):
    if dtype in _INTS:
        yield Sample((_v([-3, -2, -1, 0, 1, 2, 3]), _v([3, 2, 5, 2, 7, 0, 1])), name="negative bases")
        yield Sample((_v([-3, -2, 2]), 3), name="scalar exponent")
        return
    neg = T((3, 4), low=-3, high=-0.5)
    for e in (2, 3, -1, -2, 0):
        yield Sample((neg, e), name=f"negative base, exponent {e}")
    yield Sample((neg, _v([[2.0, 3.0, -1.0, 0.0]] * 3, grad=False)),
                 name="negative base, integer-valued tensor exponent")
    yield Sample((_v([-2.0, -1.5, 2.0], grad=False), 0.5), name="negative base, fractional exponent: nan")
    yield Sample((T((3, 4), low=0.5, high=3), 0.5), name="sqrt")
    yield _SPECIAL_PAIR
    yield Sample((_v([0.0, 0.0, -0.0, NAN, 1.0, -INF, -INF, INF, -2.0], grad=False),
                  _v([-1.0, -2.0, -1.0, 0.0, NAN, 3.0, 2.0, -1.0, INF], grad=False)), name="special powers")
    yield Sample((_v([0.0, 1.0, 2.0]), _v([2.0, 3.0, 1.0])), name="zero base (exponent gradient 0)")
    yield Sample((T((2, 3), low=0.5, high=2), T((2, 3), dtype="float64", low=-2, high=2)), name="float32 ** float64")
    if dtype == "float32":
        yield Sample((T((4,), dtype="int64", low=1, high=5), 0.5), name="int64 ** float scalar")
        yield Sample((T((4,), dtype="int64", low=-3, high=4), 2), name="int64 ** python int")


register(OpInfo("pow", _binary(0.5, 3, -2, 2, scalar=2, extra=[_pow_extra]), dtypes=_ARITH_DTYPES, bf16=True))
register(OpInfo("float_power", _binary(0.5, 3, -2, 2, scalar=2, extra=[_pow_extra]), dtypes=_ARITH_DTYPES, bf16=True))


def _minmax_extra(dtype):
    if dtype in _INTS:
        return
    yield Sample((_v([1.0, NAN, 3.0, NAN], grad=False), _v([NAN, 2.0, 1.0, NAN], grad=False)), name="nan propagates")
    yield Sample((_v([1.0, 2.0, -1.0]), _v([1.0, 0.5, -1.0])), name="ties split the gradient")
    yield Sample((T((3, 4), low=-1e4, high=1e4), T((4,), low=-1e4, high=1e4)), name="large")


for _op in ("maximum", "minimum"):
    register(OpInfo(_op, _binary(scalar=None, extra=[_minmax_extra, _specials, _promotion(scalars=False)]),
                    dtypes=_ARITH_DTYPES, bf16=True))


def _atan2_extra(dtype):
    yield Sample((_v([1.0, -1.0, 1.0, -1.0, 0.0, 0.0]), _v([1.0, 1.0, -1.0, -1.0, 2.0, -2.0])), name="quadrants")
    yield Sample((T((3, 4), low=-1e4, high=1e4), T((3, 4), low=-1e-3, high=1e-3)), name="magnitudes")
    if dtype == "float32":
        yield Sample((T((4,), dtype="int64", low=1, high=5), T((4,), dtype="int64", low=1, high=5)),
                     name="int64 inputs give float32")


register(OpInfo("atan2", _binary(scalar=None, extra=[_atan2_extra, _specials]), bf16=True))
def _hypot_extra(dtype):
    yield Sample((_v([0.0, 3.0, -5.0]), _v([1.0, -4.0, 12.0])), name="pythagorean")
    yield from _specials(dtype)


register(OpInfo("hypot", _binary(scalar=None, big=(-1e4, 1e4), extra=[_hypot_extra]), bf16=True))


# No NaN as the sign source: NaN's sign bit is not a value (PyTorch's bfloat16 conversion makes
# NaN negative, kiln's positive).
_COPYSIGN_SPECIAL = Sample((_v(_SA, grad=False), _v([1.0 if math.isnan(b) else b for b in _SB], grad=False)),
                           name="special values")


def _copysign_extra(dtype):
    yield _COPYSIGN_SPECIAL
    yield Sample((T((6,)), _v([0.0, -0.0, 1.0, -1.0, INF, -INF])), name="signed zeros and infs")
    if dtype == "float32":
        yield Sample((T((4,), dtype="int64"), T((4,), dtype="int64")), name="int64 inputs give float32")


register(OpInfo("copysign", _binary(extra=[_copysign_extra]), bf16=True))


def _nextafter_extra(dtype):
    yield Sample((_v([0.0, 1.0, 1.0, -1.0, 2.0, 0.0]), _v([1.0, 2.0, 0.0, -INF, 2.0, -1.0])), name="directions, equal")


register(OpInfo("nextafter", _binary(scalar=None, extra=[_nextafter_extra, _specials]), bf16=True))


def _compare(dtype):
    ints = dtype in _INTS or dtype == "bool"
    yield from _binary(-3, 3, scalar=1)(dtype)
    # Small integer-valued data: many ties.
    yield Sample((T((4, 5), dtype="int64", low=-2, high=2), T((5,), dtype="int64", low=-2, high=2)), name="ties")
    if not ints:
        yield Sample((_v([1.0, NAN, NAN, INF, -INF, 0.0]), _v([NAN, 1.0, NAN, INF, 1.0, -0.0])),
                     name="nan, inf, signed zero")
        yield Sample((_v([1.0, 2.0, 2.5]), 2), name="float tensor, python int")
        yield Sample((T((3,), dtype="int64"), 1.5), name="int tensor, float scalar")
        yield Sample((T((3, 2)), T((2,), dtype="float64")), name="float32 vs float64")
        yield Sample((T((3, 2), dtype="int32"), T((2,), dtype="int64")), name="int32 vs int64")


for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    register(OpInfo(_op, _compare, dtypes=("float32", "float64", "int64", "int32", "bool"), bf16=True))


def _logical(dtype):
    yield from _binary(-2, 2, scalar=None)(dtype)
    yield Sample((T((3, 4), dtype="bool"), T((4,), dtype="int64", low=-1, high=2)), name="bool and int64")
    if dtype in ("float32", "bfloat16"):
        yield Sample((_v([0.0, NAN, -0.0, 1.0]), _v([1.0, 1.0, 1.0, 0.0])), name="nan is true, -0.0 false")


for _op in ("logical_and", "logical_or", "logical_xor"):
    register(OpInfo(_op, _logical, dtypes=("float32", "int64", "int32", "bool"), bf16=True))


def _bitwise(dtype):
    lo, hi = (0, 255) if dtype == "uint8" else (-100, 100)
    yield from _binary(lo, hi, scalar=5)(dtype)
    if dtype == "int64":
        yield Sample((T((3,), dtype="int32", low=-100, high=100), T((3,), low=-100, high=100)), name="int32 with int64")
        yield Sample((T((3,), dtype="bool"), T((3,), low=-100, high=100)), name="bool with int64")


for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    register(OpInfo(_op, _bitwise, dtypes=("int64", "int32", "int16", "int8", "uint8", "bool")))


def _shift(dtype):
    bits = {"int64": 64, "int32": 32, "int16": 16, "int8": 8, "uint8": 8}[dtype]
    lo = 0 if dtype == "uint8" else -50
    yield from _binary(lo, 50, 0, min(bits, 8) - 1, scalar=3)(dtype)
    yield Sample((T((6,), low=lo, high=50), T((6,), low=bits - 3, high=bits)), name="large shift amounts")
    a = [5, 5, 100, 1, 7] if dtype == "uint8" else [-5, 5, 100, 1, -7]
    amounts = [bits, bits + 6, bits - 1, 0 if dtype == "uint8" else -1, 100]
    yield Sample((_v(a), _v(amounts)), name="shift >= width or negative: 0 / sign fill")
    if dtype == "int64":
        yield Sample((T((3,), dtype="int32", low=-50, high=50), T((3,), low=0, high=5)), name="int32 with int64")


register(OpInfo("shift_left", _shift, torch_fn=torch.bitwise_left_shift,
                dtypes=("int64", "int32", "int16", "int8", "uint8")))
register(OpInfo("shift_right_arithmetic", _shift, torch_fn=torch.bitwise_right_shift,
                dtypes=("int64", "int32", "int16", "int8", "uint8")))


# ---------------------------------------------------------------- where, convert_element_type

def _where(dtype):
    c = lambda shape, **kw: T(shape, dtype="bool", **kw)  # noqa: E731
    yield Sample((c((3, 4)), T((3, 4)), T((3, 4))), name="same shape")
    yield Sample((c((3, 1)), T((2, 3, 4), layout="transposed"), T((4,))), name="broadcast all three")
    yield Sample((c((5,), layout="strided"), T((5,)), 0.5 if dtype not in _INTS else 0), name="python scalar other")
    yield Sample((c(()), T((2, 3)), T(())), name="0-d condition")
    yield Sample((c((0, 3)), T((0, 3)), T((3,))), name="zero-size")
    if dtype == "float32":
        yield Sample((c((4,)), T((4,)), T((4,), dtype="float64")), name="float32 and float64")
        yield Sample((c((4,)), T((4,), dtype="int64"), 2.5), name="int64 and float scalar")
        yield Sample((c((4,)), T((4,), dtype="int32"), T((4,), dtype="int64")), name="int32 and int64")


def _where_scalars(dtype):
    if dtype == "float32":
        yield Sample((T((2, 3), dtype="bool"), 1.0, 0.0), name="two python floats")
        yield Sample((T((2, 3), dtype="bool"), 1, 0), name="two python ints")
        yield Sample((T((2, 3), dtype="bool"), T((3,), dtype="int32"), 7), name="int32 and python int")


def _where_all(dtype):
    yield from _where(dtype)
    yield from _where_scalars(dtype)


register(OpInfo("where", _where_all, kiln_fn=kiln.where, torch_fn=torch.where, dtypes=_ARITH_DTYPES + ("bool",),
                bf16=True))


def _convert(dtype):
    floating = dtype in _FLOAT or dtype == "bfloat16"
    targets = ["float64", "float32", "bfloat16", "int64", "int32", "bool"]
    if not floating:
        targets = ["float32", "float64", "int64", "int32", "int8", "bool"]
    for to in targets:
        yield Sample((T((3, 4), low=-100, high=100), to), name=f"to {to}")
    yield Sample((T((2, 3, 4), layout="transposed"), "float64"), name="transposed")
    yield Sample((T(()), "float32"), name="0-d")
    yield Sample((T((0, 3)), "int64"), name="zero-size")
    if floating:
        yield Sample((_v([-2.7, -0.5, 0.0, -0.0, 0.5, 2.7, 1e-30], grad=False), "int64"), name="truncates toward zero")
        yield Sample((_v([NAN, INF, -INF, 0.0, -0.0, 1e-30], grad=False), "bool"), name="nan/inf/zero to bool")
        yield Sample((T((4,), dtype="bool"), "float32"), name="bool to float")


register(OpInfo("convert_element_type", _convert, torch_fn=lambda x, d: x.to(d),
                dtypes=("float32", "float64", "int64", "int32", "bool"), bf16=True))


# ---------------------------------------------------------------- composites

def _clamp(dtype):
    ints = dtype in _INTS
    lo, hi = (-1, 2) if ints else (-1.0, 1.5)
    yield Sample((T((3, 4)), lo, hi), name="both")
    yield Sample((T((3, 4)),), {"min": lo}, name="min only")
    yield Sample((T((2, 3, 4), layout="transposed"),), {"max": hi}, name="max only, transposed")
    yield Sample((T(()), lo, hi), name="0-d")
    yield Sample((T((0, 3)), lo, hi), name="zero-size")
    yield Sample((T((5,), layout="strided"), T((5,), low=-2, high=0), T((1,), low=0.5, high=2)), name="tensor bounds")
    yield Sample((T((6,), requires_grad=False), hi, lo), name="min > max: all max")
    if not ints:
        yield Sample((_v([NAN, -INF, INF, 0.2], grad=False), lo, hi), name="nan stays nan")
        yield Sample((T((3, 4), low=-1e4, high=1e4), -1e3, 1e3), name="large")
    if dtype == "float32":
        yield Sample((T((4,), dtype="int64", low=-5, high=5), -1.5, 2.5), name="int tensor, float bounds")


register(OpInfo("clamp", _clamp, torch_fn=torch.clamp, dtypes=_ARITH_DTYPES, bf16=True))


def _clamp_one(which):
    def gen(dtype):
        b = 0.5 if dtype not in _INTS else 1
        yield Sample((T((3, 4)), b), name="2-d")
        yield Sample((T((2, 3, 4), layout="transposed"), -b), name="transposed")
        yield Sample((T(()), b), name="0-d")
        yield Sample((T((0, 2)), b), name="zero-size")
        yield Sample((T((5,), layout="strided"),), {which: b}, name="keyword")
        if dtype not in _INTS:
            yield Sample((_v([NAN, -INF, INF], grad=False), b), name="nan, inf")
    return gen


register(OpInfo("clamp_min", _clamp_one("min"), dtypes=_ARITH_DTYPES, bf16=True))
register(OpInfo("clamp_max", _clamp_one("max"), dtypes=_ARITH_DTYPES, bf16=True))


def _lerp(dtype):
    yield Sample((T((3, 4)), T((3, 4)), T((3, 4), low=0, high=1)), name="tensor weight")
    yield Sample((T((3, 4)), T((3, 4)), 0.3), name="python weight")
    yield Sample((T((2, 3, 4), layout="transposed"), T((4,)), T((3, 1), low=0, high=1)), name="broadcast")
    yield Sample((T((5,), layout="strided"), T(()), T((5,), low=0.5, high=1.5)), name="weight above 0.5 and 1")
    yield Sample((T(()), T(()), 0.75), name="0-d")
    yield Sample((T((0, 3)), T((3,)), 0.5), name="zero-size")
    yield Sample((T((3, 4), low=-1e4, high=1e4), T((3, 4), low=-1e4, high=1e4), 0.9), name="large")


register(OpInfo("lerp", _lerp, bf16=True))


def _addc(denominator):
    lo2, hi2 = (0.5, 3.0) if denominator else (-3.0, 3.0)

    def gen(dtype):
        t2 = lambda shape, **kw: T(shape, low=lo2, high=hi2, **kw)  # noqa: E731
        yield Sample((T((3, 4)), T((3, 4)), t2((3, 4))), name="same shape")
        yield Sample((T((3, 4)), T((3, 4)), t2((3, 4))), {"value": 0.5}, name="value")
        yield Sample((T((2, 3, 4), layout="transposed"), T((4,)), t2((3, 1))), {"value": -2}, name="broadcast")
        yield Sample((T((5,), layout="strided"), T(()), t2((5,))), name="strided, 0-d")
        yield Sample((T(()), T(()), t2(())), name="0-d")
        yield Sample((T((0, 3)), T((3,)), t2((3,))), name="zero-size")
        if denominator:
            yield Sample((T((3, 4)), T((3, 4)), T((3, 4), low=-3, high=-0.5)), name="negative denominator")
    return gen


register(OpInfo("addcmul", _addc(False), bf16=True))
register(OpInfo("addcdiv", _addc(True), bf16=True))


def _xlogy(dtype):
    yield from _binary(-3, 3, 0.1, 5, scalar=2.5)(dtype)
    yield _SPECIAL_PAIR
    yield Sample((_v([0.0, 0.0, 0.0, 1.0, 2.0], grad=False), _v([0.0, 2.0, NAN, 0.0, INF], grad=False)),
                 name="x == 0 gives 0 unless y is nan")
    yield Sample((_v([0.0, 0.0, 1.5]), _v([0.5, 2.0, 3.0])), name="x == 0, gradient")
    if dtype == "float32":
        yield Sample((T((4,), dtype="int64", low=0, high=4), T((4,), dtype="int64", low=1, high=4)),
                     name="ints give float")


register(OpInfo("xlogy", _xlogy, torch_fn=torch.xlogy, bf16=True))


def _rsub(dtype):
    yield from _binary(big=(-1e4, 1e4))(dtype)
    yield from _specials(dtype)
    if dtype == "float32":
        yield Sample((T((3,), dtype="int64"), 2.5), name="int64 tensor, float scalar")
        yield Sample((T((3,), dtype="int32"), T((3,), dtype="int64")), name="int32, int64")


register(OpInfo("rsub", _rsub, dtypes=_ARITH_DTYPES, bf16=True))


def _masked_fill(dtype):
    m = lambda shape, **kw: T(shape, dtype="bool", **kw)  # noqa: E731
    v = 1.5 if dtype not in _INTS and dtype != "bool" else (3 if dtype != "bool" else True)
    yield Sample((T((3, 4)), m((3, 4)), v), name="same shape")
    yield Sample((T((2, 3, 4), layout="transposed"), m((4,)), v), name="broadcast mask, transposed")
    yield Sample((T((5,), layout="strided"), m(()), v), name="0-d mask")
    yield Sample((T(()), m(()), v), name="0-d")
    yield Sample((T((0, 3)), m((3,)), v), name="zero-size")
    if dtype in _FLOAT:
        yield Sample((T((3, 4)), m((3, 4))), {"value": -INF}, name="-inf (attention masks)")
        yield Sample((T((3, 4)), m((3, 4)), 2), name="int value into float")


register(OpInfo("masked_fill", _masked_fill, dtypes=_ARITH_DTYPES + ("bool",), bf16=True))


# dropout is random: compared by property. Kept elements are x / (1 - p), dropped ones 0; the
# dropped fraction is p within 5 standard deviations; the gradient is the same mask / (1 - p);
# eval mode and p = 0 are the identity; the same seed gives the same mask.
def _dropout_samples(dtype):
    yield Sample((T((100, 100), low=0.5, high=2), 0.3, True), name="p=0.3")
    yield Sample((T((50, 40), low=0.5, high=2, layout="transposed"), 0.7, True), name="p=0.7, transposed")
    yield Sample((T((64,), low=0.5, high=2), 0.0, True), name="p=0")
    yield Sample((T((64,), low=0.5, high=2), 1.0, True), name="p=1: all zero")
    yield Sample((T((64,), low=0.5, high=2), 0.5, False), name="eval: identity")
    yield Sample((T((0, 3), low=0.5, high=2), 0.5, True), name="zero-size")


def _dropout_check(kr, tr, sample, dtype):
    _, p, train = sample.args
    (xk, kr), tr = kr, tr[1]
    xn = xk.detach().float().numpy()
    assert tuple(kr.shape) == tuple(tr.shape) and str(kr.dtype) == "kiln." + dtype, "shape/dtype"
    out = kr.detach().float().numpy()
    if not train or p == 0:
        np.testing.assert_array_equal(out, xn)
        return
    kept = out != 0
    if p == 1:
        assert not kept.any()
        return
    rtol = 1e-2 if dtype == "bfloat16" else 1e-6
    np.testing.assert_allclose(out[kept], xn[kept] / (1 - p), rtol=rtol)
    n = out.size
    if n:
        sd = math.sqrt(p * (1 - p) / n)
        assert abs((~kept).mean() - p) < 5 * sd + 1e-12, f"dropped fraction {(~kept).mean()} vs p={p}"
    # Gradient: mask / (1 - p).
    if dtype in _FLOAT:
        xg = xk.detach().requires_grad_(True)  # a leaf of the same (possibly non-contiguous) data
        kiln.manual_seed(7)
        y = kiln.dropout(xg, p, True)
        g, = kiln.autograd.grad([y.sum()], [xg])
        np.testing.assert_allclose(g.numpy(), (y.detach().numpy() != 0) / (1 - p), rtol=1e-6)
    # Determinism under manual_seed.
    kiln.manual_seed(123)
    a = kiln.dropout(xk, p, True).float().numpy()
    kiln.manual_seed(123)
    b = kiln.dropout(xk, p, True).float().numpy()
    np.testing.assert_array_equal(a, b)


register(OpInfo("dropout", _dropout_samples, kiln_fn=lambda x, p, train: (x, kiln.dropout(x, p, train)),
                torch_fn=lambda x, p, train: (x, torch.nn.functional.dropout(x, p, train)),
                check=_dropout_check, grad=False, bf16=True))
