"""PyTorch signatures that do not map one-to-one onto a single op of ops.def."""
from . import _C

_ops = _C._ops


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    out, inverse, counts = _ops.unique(input, sorted, return_inverse, return_counts, dim)
    extra = ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return (out, *extra) if extra else out


def split(tensor, split_size_or_sections, dim=0):
    if isinstance(split_size_or_sections, (list, tuple)):
        return _ops.split_with_sizes(tensor, split_size_or_sections, dim)
    return _ops.split(tensor, split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return _ops.chunk(input, chunks, dim)


def where(condition, input=None, other=None):
    """where(condition, input, other); where(condition) is nonzero(as_tuple=True)."""
    if input is None and other is None:
        return tuple(_ops.nonzero(condition).unbind(1))
    return _ops.where(condition, input, other)


def clamp(input, min=None, max=None):
    """clamp with numbers or tensors as bounds."""
    if isinstance(min, _C.Tensor) or isinstance(max, _C.Tensor):
        out = input
        if min is not None:
            out = _ops.maximum(out, min)
        if max is not None:
            out = _ops.minimum(out, max)
        return out
    return _ops.clamp(input, min, max)


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


def numel(input):
    return input.numel()


_C.Tensor.split = split
_C.Tensor.clamp = clamp
_C.Tensor.unique = unique
_C.Tensor.where = lambda self, condition, other: _ops.where(condition, self, other)
_C.Tensor.type = lambda self, dtype=None: self.dtype if dtype is None else self.to(dtype)
