"""The oracle database: for each op of kiln's registry, how to call it in kiln and in PyTorch,
and the sample inputs to call it with (in the spirit of PyTorch's OpInfo).

An entry (see OpInfo) names the op by its kiln id (the first field of its ops.def line). The
family modules (pointwise.py, shape.py, nn.py, ...) add entries with `register(OpInfo(...))`, or
declare `skip(op_id, reason)` for an op the suite cannot compare with PyTorch. test_ops.py fails
for any registry op that has neither, so a new op without oracle coverage fails the suite.
"""
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

OPS = {}    # op id -> OpInfo
SKIPS = {}  # op id -> reason


@dataclass
class T:
    """A sample tensor, built identically for kiln and PyTorch from one NumPy array.

    layout: "contiguous"; "transposed" (the data is made with the last two dims swapped, then
    transposed back: same values, non-contiguous); "strided" (every other element of a larger
    array along the last dim).
    low/high: uniform range for floats; ints draw from [low, high). values: explicit data.
    """
    shape: tuple
    dtype: Optional[str] = None  # None: the sample's dtype
    layout: str = "contiguous"
    low: float = -3.0
    high: float = 3.0
    values: Optional[object] = None
    requires_grad: Optional[bool] = None  # None: floating tensors of differentiable ops do

    def array(self, rng, dtype):
        dt = self.dtype or dtype
        if self.values is not None:
            return np.array(self.values, dtype=_np_dtype(dt)).reshape(self.shape)
        shape = tuple(self.shape)
        if self.layout == "transposed" and len(shape) >= 2:
            shape = shape[:-2] + (shape[-1], shape[-2])
        if self.layout == "strided":
            shape = shape[:-1] + (shape[-1] * 2,) if shape else shape
        if dt == "bool":
            a = rng.random(shape) < 0.5
        elif dt in ("int64", "int32", "int16", "int8", "uint8"):
            a = rng.integers(int(self.low), int(self.high), size=shape)
        else:
            a = rng.uniform(self.low, self.high, size=shape)
        return a.astype(_np_dtype(dt)) if dt != "bfloat16" else a.astype(np.float32)


@dataclass
class Sample:
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class OpInfo:
    """How to check one op.

    op: kiln op id. kiln_fn(*args, **kwargs) / torch_fn(*args, **kwargs) are the two calls
    (default: kiln.<public name> and torch.<public name>). samples(dtype) yields Samples whose
    T fields become tensors. dtypes: the dtypes checked (names). grad: compare gradients of the
    floating inputs (for differentiable ops). bf16: also compare bfloat16 forward. atol/rtol:
    per-dtype overrides {dtype: (atol, rtol)}. output: optional fn(result) -> tuple of tensors to
    compare (e.g. to drop indices that PyTorch and kiln may legitimately choose differently).
    check: optional fn(kiln_result, torch_result, sample, dtype) for ops compared by property
    (random ops); it raises AssertionError on a mismatch.
    """
    op: str
    samples: Callable
    kiln_fn: Optional[Callable] = None
    torch_fn: Optional[Callable] = None
    dtypes: tuple = ("float32", "float64")
    grad: bool = True
    bf16: bool = False
    tol: dict = field(default_factory=dict)
    output: Optional[Callable] = None
    check: Optional[Callable] = None
    grad_output: Optional[Callable] = None  # fn(result) -> tensors whose gradient is checked


def register(info):
    assert info.op not in OPS, f"{info.op} registered twice"
    OPS[info.op] = info
    return info


def skip(op, reason):
    assert op not in SKIPS and reason
    SKIPS[op] = reason


def _np_dtype(name):
    return {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": np.float32,
            "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
            "bool": np.bool_}[name]


def load_all():
    """Imports every family module (each registers its entries)."""
    import importlib
    import pkgutil
    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")
