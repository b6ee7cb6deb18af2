"""Tensor and function conveniences with PyTorch's signatures, added in Python over kiln's ops:
add/sub (and add_/sub_) with alpha=, Tensor.view_as, Tensor.__format__ (format specs on 0-d
tensors: f"{loss:.4f}"), einsum(equation, *operands) as well as a list."""
from . import _C

_ops = _C._ops
_T = _C.Tensor


def _scale_other(args, kwargs, alpha):
    """args/kwargs of add/sub with `other` multiplied by alpha; the call itself (and its errors
    for missing or wrong arguments) stays the op's."""
    if alpha == 1:
        return args, kwargs
    if len(args) >= 2:
        return (args[0], args[1] * alpha) + tuple(args[2:]), kwargs
    if "other" in kwargs:
        return args, {**kwargs, "other": kwargs["other"] * alpha}
    return args, kwargs


def _with_alpha(fn, sign):
    def call(*args, alpha=1, out=None, **kwargs):
        if out is not None:
            raise NotImplementedError(f"{fn.__name__}(): out= is not supported")
        args, kwargs = _scale_other(args, kwargs, alpha)
        return fn(*args, **kwargs)
    call.__name__ = fn.__name__
    call.__doc__ = f"{fn.__name__}(input, other, *, alpha=1): input {sign} alpha * other"
    return call


add = _with_alpha(_ops.add, "+")
sub = _with_alpha(_ops.sub, "-")
subtract = sub


def _method_with_alpha(method):
    def call(self, *args, alpha=1, **kwargs):
        args, kwargs = _scale_other((self,) + args, kwargs, alpha)
        return method(*args, **kwargs)
    call.__name__ = method.__name__
    return call


def einsum(equation, *operands):
    """einsum("ij,jk->ik", a, b) or einsum("ij,jk->ik", [a, b])."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _ops.einsum(equation, list(operands))


def _view_as(self, other):
    return self.view(list(other.shape))


def _format(self, spec):
    """A 0-d tensor formats as its number (torch's rule); other tensors take no spec."""
    if self.dim() == 0:
        return self.item().__format__(spec)
    return object.__format__(self, spec)


def install():
    for name in ("add", "sub", "add_", "sub_"):
        setattr(_T, name, _method_with_alpha(getattr(_T, name)))
    _T.subtract = _T.sub
    _T.view_as = _view_as
    _T.__format__ = _format
