"""PyTorch signatures that do not map one-to-one onto a single op of ops.def."""
import builtins

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


_MISSING = object()  # where()'s input and other not given (None is a value: where(c, None) raises, as in torch)


def where(condition, input=_MISSING, other=_MISSING):
    """where(condition, input, other); where(condition) is nonzero(as_tuple=True)."""
    if input is _MISSING and other is _MISSING:
        return tuple(_ops.nonzero(condition).unbind(1))
    if input is _MISSING or other is _MISSING:  # as torch: one of the two is not a call kiln has
        missing = "input" if input is _MISSING else "other"
        raise TypeError(f"where(): argument '{missing}' is missing: give both input and other, or neither "
                        "(where(condition) is nonzero(as_tuple=True))")
    return _ops.where(condition, input, other)


def sort(input, dim=-1, descending=False, *, stable=True):
    """sort; stable=None (PyTorch's schema: bool? stable) is accepted, and kiln's sort is always stable
    (an order among ties PyTorch's unstable sort may also give). The C++ op keeps bool stable."""
    return _ops.sort(input, dim, descending, stable=True if stable is None else stable)


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
_C.Tensor.sort = sort
_C.Tensor.unique = unique
_C.Tensor.where = lambda self, condition, other: _ops.where(condition, self, other)
_C.Tensor.type = lambda self, dtype=None: self.dtype if dtype is None else self.to(dtype)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other|, elementwise (as torch.isclose)."""
    # Non-finite values are close only to an equal value (inf - inf would pass the bound).
    finite = input.isfinite() & other.isfinite()
    close = (finite & ((input - other).abs() <= atol + rtol * other.abs())) | (input == other)
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other):
    """True if both have the same shape and elements (as torch.equal)."""
    return tuple(input.shape) == tuple(other.shape) and builtins.bool((input == other).all().item())


_C.Tensor.isclose = isclose
_C.Tensor.allclose = allclose
_C.Tensor.equal = equal


def _deepcopy(self, memo):
    """copy.deepcopy of a leaf tensor: a detached clone with the same requires_grad (as torch)."""
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support deepcopy; "
                           "detach() first")
    out = self.detach().clone()
    out.requires_grad_(self.requires_grad)
    memo[id(self)] = out
    return out


_C.Tensor.__deepcopy__ = _deepcopy
