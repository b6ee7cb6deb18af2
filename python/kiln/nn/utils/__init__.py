"""nn.utils: gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_) and nn.utils.rnn
(padding and packing variable-length sequences)."""
import math

from ... import _C
from ..._grad_mode import no_grad
from . import rnn  # noqa: F401


def _grads(parameters):
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales all gradients together so their joint norm is at most max_norm; returns the norm
    before clipping (a 0-d tensor)."""
    grads = _grads(parameters)
    if not grads:
        return _C._ops.zeros([])
    norm_type = float(norm_type)
    with no_grad():
        if norm_type == math.inf:
            total = _C._ops.stack([g.abs().max().to(_C.float32) for g in grads]).max()
        else:
            norms = _C._ops.stack([_C._ops.norm(g.to(_C.float32), norm_type) for g in grads])
            total = _C._ops.norm(norms, norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error, use `error_if_nonfinite=False`")
        # A tensor, as in torch: no host read, so a compiled training step can clip.
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    with no_grad():
        for g in _grads(parameters):
            g.copy_(_C._ops.clamp(g, -clip_value, clip_value))
