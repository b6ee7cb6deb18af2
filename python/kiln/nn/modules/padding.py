"""Padding layers (Constant/Zero/Reflection/Replication/Circular, 1-3 d): F.pad with torch's
constructor arguments; an int pads every side by it."""
from .. import functional as F
from ..module import Module


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        self.padding = tuple(padding) if isinstance(padding, (list, tuple)) else (padding,) * (2 * self._n)
        if len(self.padding) != 2 * self._n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {2 * self._n} ints, got {padding}")
        if value is not None:
            self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, self._mode, getattr(self, "value", None))

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if hasattr(self, "value") else "")


def _pads(mode, prefix):
    out = {}
    for n in (1, 2, 3):
        out[n] = type(f"{prefix}{n}d", (_PadNd,), {"_n": n, "_mode": mode, "__module__": __name__})
    return out


class _Constant(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_Constant):
    _n = 1


class ConstantPad2d(_Constant):
    _n = 2


class ConstantPad3d(_Constant):
    _n = 3


class _Zero(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_Zero):
    _n = 1


class ZeroPad2d(_Zero):
    _n = 2


class ZeroPad3d(_Zero):
    _n = 3


ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _pads("reflect", "ReflectionPad").values()
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _pads("replicate", "ReplicationPad").values()
CircularPad1d, CircularPad2d, CircularPad3d = _pads("circular", "CircularPad").values()
