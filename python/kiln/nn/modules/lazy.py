"""Lazy modules (LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d, LazyBatchNorm1d/2d/3d,
LazyInstanceNorm1d/2d/3d):
their input size (in_features, in_channels, num_features) comes from the first input. Until then
the parameters are UninitializedParameter placeholders; the first forward materializes them in
place (the same Parameter objects, so an optimizer built before it keeps them), initializes them
as the eager layer does, and the module becomes that layer (LazyLinear -> Linear), as in torch."""
from ... import _C
from ..parameter import Parameter
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d


class UninitializedParameter(Parameter):
    """A Parameter without a shape yet; materialize(shape) gives it one and makes it a Parameter."""
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(_C._ops.empty([0], dtype=dtype or _C.float32), requires_grad)

    def materialize(self, shape, device=None, dtype=None):
        self.data = _C._ops.empty(list(shape), dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return "<UninitializedParameter>"


class UninitializedBuffer(_C.Tensor):
    """A buffer without a shape yet; lazy modules replace it by a real tensor on first use."""

    def __init__(self, requires_grad=False, device=None, dtype=None):
        super().__init__(_C._ops.empty([0], dtype=dtype or _C.float32))

    def materialize(self, shape, device=None, dtype=None):
        return _C._ops.empty(list(shape), dtype=dtype or self.dtype)

    def __repr__(self):
        return "<UninitializedBuffer>"


class LazyModuleMixin:
    """The first forward calls initialize_parameters(input), turns the module into cls_to_become
    and runs that class's forward."""
    cls_to_become = None

    def has_uninitialized_params(self):
        return any(isinstance(p, UninitializedParameter) for p in self.parameters()) or \
            any(isinstance(b, UninitializedBuffer) for b in self.buffers())

    def forward(self, input, *args, **kwargs):
        self.initialize_parameters(input)
        self.__class__ = self.cls_to_become
        return self.forward(input, *args, **kwargs)

    def _placeholders(self, names):
        for n in names:
            if getattr(self, n, None) is not None:
                setattr(self, n, UninitializedParameter())


class LazyLinear(LazyModuleMixin, Linear):
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, out_features, bias, dtype=dtype)
        self._placeholders(("weight", "bias"))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()


class _LazyConv(LazyModuleMixin):
    def _lazy_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                   output_padding=None, dtype=None):
        extra = {} if output_padding is None else {"output_padding": output_padding}
        # in_channels = groups for now: a valid placeholder; the first input gives the real one
        type(self).cls_to_become.__init__(self, groups, out_channels, kernel_size, stride=stride, padding=padding,
                                          dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode,
                                          dtype=dtype, **extra)
        self.in_channels = 0
        self._placeholders(("weight", "bias"))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        batched = input.dim() == self._n + 2
        self.in_channels = input.shape[1 if batched else 0]
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        g = self.groups
        shape = ((self.in_channels, self.out_channels // g) if self._transposed
                 else (self.out_channels, self.in_channels // g)) + tuple(self.kernel_size)
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv(base, transposed):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, *args, device=None, dtype=None, **kwargs):
        if transposed:
            names = ("output_padding", "groups", "bias", "dilation", "padding_mode")
            defaults = dict(output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros")
        else:
            names = ("dilation", "groups", "bias", "padding_mode")
            defaults = dict(dilation=1, groups=1, bias=True, padding_mode="zeros")
        opts = {**defaults, **dict(zip(names, args)), **kwargs}
        self._lazy_init(out_channels, kernel_size, stride, padding, opts["dilation"], opts["groups"], opts["bias"],
                        opts["padding_mode"], opts.get("output_padding"), dtype)
    return type("Lazy" + base.__name__, (_LazyConv, base), {"cls_to_become": base, "__init__": __init__,
                                                            "__module__": __name__})


LazyConv1d, LazyConv2d, LazyConv3d = (_lazy_conv(c, False) for c in (Conv1d, Conv2d, Conv3d))
LazyConvTranspose1d, LazyConvTranspose2d = (_lazy_conv(c, True) for c in (ConvTranspose1d, ConvTranspose2d))


class _LazyNorm(LazyModuleMixin):

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        type(self).cls_to_become.__init__(self, 0, eps, momentum, affine, track_running_stats, dtype=dtype)
        self._placeholders(("weight", "bias"))
        for n in ("running_mean", "running_var"):
            if self._buffers.get(n) is not None:
                self._buffers[n] = UninitializedBuffer()

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        self.num_features = input.shape[1]
        if self.weight is not None:
            self.weight.materialize((self.num_features,))
            if self.bias is not None:
                self.bias.materialize((self.num_features,))
        for n in ("running_mean", "running_var"):
            if isinstance(self._buffers.get(n), UninitializedBuffer):
                self._buffers[n] = self._buffers[n].materialize((self.num_features,))
        self.reset_parameters()


def _lazy_norm(base):
    return type("Lazy" + base.__name__, (_LazyNorm, base), {"cls_to_become": base, "__module__": __name__})


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (_lazy_norm(c) for c in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (_lazy_norm(c) for c in (InstanceNorm1d, InstanceNorm2d,
                                                                                       InstanceNorm3d))
