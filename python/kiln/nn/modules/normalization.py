"""LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d with torch's parameters, buffers and updates."""
from ... import _C
from .. import functional as F
from .. import _checks, init
from ..module import Module
from ..parameter import Parameter


def _shape(s):
    return (s,) if isinstance(s, int) else tuple(s)


def _empty(shape, dtype):
    return _C._ops.empty(list(shape), dtype=dtype or _C.float32)


def _affine(m, shape, affine, bias, dtype):
    """A norm's optional per-element scale (weight) and shift (bias); _reset_affine sets them to 1 and 0."""
    if affine:
        m.weight = Parameter(_empty(shape, dtype))
        m.register_parameter("bias", Parameter(_empty(shape, dtype)) if bias else None)
    else:
        m.register_parameter("weight", None)
        m.register_parameter("bias", None)


def _reset_affine(m):
    if m.weight is not None:
        init.ones_(m.weight)
    if m.bias is not None:
        init.zeros_(m.bias)


def _running_stats(m, n, track, dtype):
    """The running_mean / running_var / num_batches_tracked buffers of batch and instance norms."""
    for name, make in (("running_mean", lambda: _C._ops.zeros([n], dtype=dtype or _C.float32)),
                       ("running_var", lambda: _C._ops.ones([n], dtype=dtype or _C.float32)),
                       ("num_batches_tracked", lambda: _C._ops.zeros([], dtype=_C.int64))):
        m.register_buffer(name, make() if track else None)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine(self, self.normalized_shape, elementwise_affine, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(self.normalized_shape, dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        _checks.sizes("GroupNorm", ("num_groups",), num_groups=num_groups, num_channels=num_channels)
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine(self, (num_channels,), affine, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"


class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        _checks.sizes(type(self).__name__, num_features=num_features)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine(self, (num_features,), affine, bias, dtype)
        _running_stats(self, num_features, track_running_stats, dtype)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def forward(self, input):
        if input.dim() not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(f'{d}D' for d in self._dims)} input "
                             f"(got {input.dim()}D input)")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        update = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if update else None, self.running_var if update else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    _dims = (5,)


class _InstanceNorm(Module):
    """Per-sample, per-channel normalisation; torch's defaults (affine=False, no running stats)."""
    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        _checks.sizes(type(self).__name__, num_features=num_features)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine(self, (num_features,), affine, bias, dtype)
        _running_stats(self, num_features, track_running_stats, dtype)
        self.reset_parameters()

    reset_running_stats = _BatchNorm.reset_running_stats
    reset_parameters = _BatchNorm.reset_parameters

    def forward(self, input):
        n = self._spatial
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"{type(self).__name__}: expected {n + 1}D or {n + 2}D input (got {input.dim()}D input)")
        batched = input.dim() == n + 2
        x = input if batched else input.unsqueeze(0)
        momentum = self.momentum if self.momentum is not None else 0.0
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, momentum, self.eps)
        return y if batched else y.squeeze(0)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """torch's legacy cross-channel LRN of 4-d input: x * (k + alpha/size * sum of x^2 over a
    channel window)^-beta, with the window torch's running sum gives (channel 0 stays in every
    window; see _cross_map_window)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        N, C, H, W = input.shape
        window = _C.tensor(_cross_map_window(C, self.size), dtype=input.dtype)
        sq = (input * input).reshape([N, C, H * W])
        scale = window.matmul(sq).reshape([N, C, H, W]) * (self.alpha / self.size) + self.k
        return input * scale.pow(-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _cross_map_window(channels, size):
    """rows[c][j] = 1 where channel j counts for channel c: torch's running sum starts from
    channels [0, pre_pad), adds channel c + pre_pad - 1 at each c and drops c - pre_pad only once
    c > pre_pad, so channel 0 is never dropped."""
    pre = int((size - 1) / 2 + 1)
    rows = []
    for c in range(channels):
        hi = min(c + pre, channels)
        dropped = range(1, c - pre + 1) if c > pre else range(0)
        rows.append([1.0 if j < hi and j not in dropped else 0.0 for j in range(channels)])
    return rows
