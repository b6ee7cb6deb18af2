"""Factories with PyTorch's signatures: sizes as varargs or a sequence, requires_grad=."""
import builtins
import math

from . import _C

_ops = _C._ops


def _sizes(size, fn, size_kw=None):
    """The size of a factory call: varargs, one sequence, or the size= keyword (as torch)."""
    if size_kw is not None:
        if size:
            raise TypeError(f"{fn}(): size given both positionally and as size=")
        size = (size_kw,)
    if not size:  # as torch: zeros() is an error; zeros(()) and zeros([]) are 0-d
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return tuple(size[0])
    return tuple(size)


def _size_kw(fn, kwargs):
    """size= (the one keyword a varargs-size factory takes besides dtype, device, requires_grad)."""
    extra = set(kwargs) - {"size"}
    if extra:
        raise TypeError(f"{fn}() got an unexpected keyword argument '{sorted(extra)[0]}'")
    return kwargs.get("size")


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(*size, dtype=None, device=None, requires_grad=False, **size_kw):
    return _finish(_ops.zeros(_sizes(size, "zeros", _size_kw("zeros", size_kw)), dtype=dtype, device=device),
                   requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, **size_kw):
    return _finish(_ops.ones(_sizes(size, "ones", _size_kw("ones", size_kw)), dtype=dtype, device=device),
                   requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, **size_kw):
    return _finish(_ops.empty(_sizes(size, "empty", _size_kw("empty", size_kw)), dtype=dtype, device=device),
                   requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return _finish(_ops.full(size, fill_value, dtype=dtype, device=device), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, **size_kw):
    return _finish(_ops.rand(_sizes(size, "rand", _size_kw("rand", size_kw)), dtype=dtype, device=device),
                   requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, **size_kw):
    return _finish(_ops.randn(_sizes(size, "randn", _size_kw("randn", size_kw)), dtype=dtype, device=device),
                   requires_grad)


def randint(*args, low=None, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size), each bound and the size positional or
    keyword (randint(10, size=(3,)), randint(low=2, high=5, size=(4,))), as torch.randint."""
    args = list(args)
    if size is None and args and isinstance(args[-1], (list, tuple)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif len(args) > 2:
        raise TypeError("randint(): expected randint(high, size) or randint(low, high, size)")
    if high is None or size is None:
        raise TypeError("randint(): high and size must be given (randint(high, size) or randint(low, high, size))")
    if generator is not None:
        raise NotImplementedError("randint(): generator= is not supported; use kiln.manual_seed")
    return _finish(_ops.randint(0 if low is None else low, high, tuple(size), dtype=dtype, device=device),
                   requires_grad)


def randperm(n, *, dtype=None, device=None):
    return _ops.randperm(n, dtype=dtype, device=device)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """arange(end) or arange(start, end, step=1), as torch.arange."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, float) and not math.isfinite(v):  # the length would be infinite or NaN
            raise ValueError(f"arange(): argument '{name}' must be a finite number, got {v}")
    return _finish(_ops.arange(start, end, step, dtype=dtype, device=device), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    return _finish(_ops.linspace(start, end, steps, dtype=dtype, device=device), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    return _finish(_ops.eye(n, m, dtype=dtype, device=device), requires_grad)


def _like(op):
    def make(input, *args, dtype=None, requires_grad=False, **kwargs):
        kwargs.pop("device", None)
        return _finish(op(input, *args, dtype=dtype, **kwargs), requires_grad)
    make.__name__ = op.__name__
    return make


zeros_like = _like(_ops.zeros_like)
ones_like = _like(_ops.ones_like)
empty_like = _like(_ops.empty_like)
full_like = _like(_ops.full_like)
rand_like = _like(_ops.rand_like)
randn_like = _like(_ops.randn_like)


# Tensor.new_* use the tensor's dtype unless told otherwise.
def _new(factory):
    def method(self, *size, dtype=None, requires_grad=False, **kwargs):
        kwargs.pop("device", None)
        return factory(*size, dtype=dtype or self.dtype, requires_grad=requires_grad, **kwargs)
    return method


_C.Tensor.new_zeros = _new(zeros)
_C.Tensor.new_ones = _new(ones)
_C.Tensor.new_empty = _new(empty)


def _new_full(self, size, fill_value, *, dtype=None, requires_grad=False, device=None):
    return full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, requires_grad=False, device=None):
    return _C.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


_C.Tensor.new_full = _new_full
_C.Tensor.new_tensor = _new_tensor
del builtins
