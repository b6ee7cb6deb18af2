"""Grad-mode and autocast context managers (also usable as decorators)."""
import functools

from . import _C


class _Mode:
    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapped


class no_grad(_Mode):
    """Ops inside record no autograd history (as torch.no_grad)."""
    def __init__(self):
        self._args = ()

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(False)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)


class enable_grad(_Mode):
    def __init__(self):
        self._args = ()

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(True)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)


inference_mode = no_grad


class autocast(_Mode):
    """Runs matmul-like ops in `dtype` (bfloat16 by default) and precision-sensitive ops in
    float32, as torch.autocast. `device_type` is accepted for PyTorch compatibility."""
    def __init__(self, device_type="cpu", dtype=None, enabled=True):
        self._args = (device_type, dtype, enabled)
        self._dtype = dtype if dtype is not None else _C.bfloat16
        self._enabled = enabled

    def __enter__(self):
        _C._autocast_push(self._dtype, self._enabled)
        return self

    def __exit__(self, *exc):
        _C._autocast_pop()
