"""nn.functional with torch.nn.functional's signatures, each mapped onto kiln ops. The deprecated
torch arguments size_average and reduce keep their positions but must be None; `inplace=True`
computes out of place and writes the result back."""
from .. import _C

_ops = _C._ops


def _inplace(x, y, inplace):
    """y written back into x when inplace (kiln's autograd then refuses a backward through ops
    that read x before: relu_ is the one activation with an in-place op of its own)."""
    if inplace:
        x.copy_(y)
        return x
    return y


# --- activations ---------------------------------------------------------------------------------
def relu(input, inplace=False):
    return input.relu_() if inplace else _ops.relu(input)


def relu6(input, inplace=False):
    return _inplace(input, _ops.relu6(input), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace(input, _ops.leaky_relu(input, negative_slope), inplace)


def gelu(input, approximate="none"):
    return _ops.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _inplace(input, _ops.silu(input), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _inplace(input, _ops.hardtanh(input, min_val, max_val), inplace)


def hardsigmoid(input, inplace=False):
    return _inplace(input, _ops.hardsigmoid(input), inplace)


def sigmoid(input):
    return _ops.sigmoid(input)


def tanh(input):
    return _ops.tanh(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("softmax(): dim must be given (kiln does not guess it)")
    return _ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("log_softmax(): dim must be given (kiln does not guess it)")
    return _ops.log_softmax(input, dim, dtype)


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _inplace(input, _ops.dropout(input, p, training), inplace)


# --- linear, embedding, normalisation ------------------------------------------------------------
def linear(input, weight, bias=None):
    return _ops.linear(input, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): max_norm, scale_grad_by_freq and sparse are not supported")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    return _ops.embedding(input, weight, padding_idx)


def one_hot(tensor, num_classes=-1):
    return _ops.one_hot(tensor, num_classes)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _ops.layer_norm(input, list(normalized_shape), weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _ops.rms_norm(input, list(normalized_shape), weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _ops.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _ops.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalises each (sample, channel) over its spatial dims. With running statistics, as torch:
    use_input_stats updates them with the batch average of the instances' means and unbiased
    variances; otherwise they normalise (as batch_norm in evaluation)."""
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm(): use_input_stats=False needs running_mean and running_var")
        return _ops.batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    out = _ops.instance_norm(input, weight, bias, eps)
    if running_mean is not None or running_var is not None:
        from .._grad_mode import no_grad
        dims = list(range(2, input.dim()))
        with no_grad():
            x = input.detach()
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(x.mean(dims).mean(0) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(x.var(dims, correction=1).mean(0) * momentum)
    return out


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    return _ops.normalize(input, p, dim, eps)


def pad(input, pad, mode="constant", value=None):
    return _ops.pad(input, list(pad), mode, value)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    return _ops.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                             enable_gqa=enable_gqa)


# --- convolution and pooling ---------------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _ops.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _ops.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _ops.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _ops.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def _stride(stride):
    return [] if stride is None or stride == [] or stride == () else stride


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool1d(): return_indices is not supported")
    return _ops.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool2d(): return_indices is not supported")
    return _ops.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _ops.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d(): divisor_override is not supported")
    return _ops.avg_pool2d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool2d(input, output_size):
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    size = [input.shape[-2 + i] if s is None else s for i, s in enumerate(output_size)]
    return _ops.adaptive_avg_pool2d(input, size)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return _ops.unfold(input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _ops.fold(input, output_size, kernel_size, dilation, padding, stride)


# --- losses (torch's positions, incl. the deprecated size_average/reduce, which must stay None) ----
def _legacy(size_average, reduce):
    if size_average is not None or reduce is not None:
        raise TypeError("size_average and reduce are deprecated in PyTorch and not supported; use reduction=")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    _legacy(size_average, reduce)
    return _ops.cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    _legacy(size_average, reduce)
    return _ops.nll_loss(input, target, weight, reduction, ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _legacy(size_average, reduce)
    return _ops.mse_loss(input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    _legacy(size_average, reduce)
    return _ops.l1_loss(input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _legacy(size_average, reduce)
    return _ops.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    return _ops.huber_loss(input, target, reduction, delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    _legacy(size_average, reduce)
    return _ops.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    _legacy(size_average, reduce)
    return _ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    _legacy(size_average, reduce)
    return _ops.kl_div(input, target, reduction, log_target)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _ops.cosine_similarity(x1, x2, dim, eps)


# =================================================================================================
# The rest of torch.nn.functional, composed from kiln ops in Python (each differentiable through
# the ops it uses). Functions whose op kiln lacks (grid_sample, ctc_loss, max_unpool, the
# *_with_indices pools, conv_transpose3d, fp8 matmuls) are not here.
# =================================================================================================
import math as _math  # noqa: E402


def _full_like(x, value):
    return _ops.full_like(x, value)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    _legacy(size_average, reduce)
    return reduction


# --- activations ---------------------------------------------------------------------------------
def threshold(input, threshold, value, inplace=False):
    return _inplace(input, _ops.where(input > threshold, input, _full_like(input, value)), inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def relu_(input):
    return relu(input, inplace=True)


def elu(input, alpha=1.0, inplace=False):
    return _inplace(input, _ops.elu(input, alpha), inplace)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)): elu of x / alpha, scaled by alpha."""
    if alpha == 0:
        raise ValueError("ZeroDivisionError in celu: alpha cannot be 0")
    return _inplace(input, _ops.elu(input / alpha, 1.0) * alpha, inplace)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def selu(input, inplace=False):
    return _inplace(input, _ops.selu(input), inplace)


def selu_(input):
    return selu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def hardswish(input, inplace=False):
    return _inplace(input, _ops.hardswish(input), inplace)


def mish(input, inplace=False):
    return _inplace(input, _ops.mish(input), inplace)


def glu(input, dim=-1):
    return _ops.glu(input, dim)


def hardshrink(input, lambd=0.5):
    return _ops.where(input.abs() > lambd, input, _full_like(input, 0.0))


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise ValueError(f"softshrink: lambda must be >= 0, got {lambd}")
    zero = _full_like(input, 0.0)
    return _ops.where(input > lambd, input - lambd, _ops.where(input < -lambd, input + lambd, zero))


def tanhshrink(input):
    return input - _ops.tanh(input)


def softsign(input):
    return input / (input.abs() + 1)


def softplus(input, beta=1.0, threshold=20.0):
    return _ops.softplus(input, beta, threshold)


def logsigmoid(input):
    return -_ops.softplus(-input, 1.0, 20.0)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        raise TypeError("softmin(): dim must be given (kiln does not guess it)")
    return _ops.softmax(-input, dim, dtype)


def prelu(input, weight):
    """x where x >= 0, weight * x elsewhere; weight has one value or one per channel (dim 1)."""
    w = weight
    if weight.numel() != 1:
        if input.dim() < 2 or input.shape[1] != weight.numel():
            raise ValueError(f"prelu: weight has {weight.numel()} values but the input has "
                             f"{input.shape[1] if input.dim() >= 2 else 1} channels (dim 1)")
        w = weight.reshape([1, weight.numel()] + [1] * (input.dim() - 2))
    return _ops.where(input >= 0, input, input * w)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training and
    is (lower + upper) / 2 in evaluation."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _ops.rand(list(input.shape), dtype=input.dtype) * (upper - lower) + lower
    return _inplace(input, _ops.where(input >= 0, input, input * slope), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard=True returns the one-hot argmax
    whose gradient is the soft sample's (straight-through)."""
    u = _ops.rand(list(logits.shape), dtype=logits.dtype).clamp(min=eps, max=1.0 - 1e-7)
    gumbels = -(-u.log()).log()
    y_soft = _ops.softmax((logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _ops.zeros_like(logits).scatter(dim, index, _ops.ones_like(index, dtype=logits.dtype))
    return y_hard - y_soft.detach() + y_soft


def has_torch_function(*args, **kwargs):
    """kiln has no __torch_function__ overrides: always False."""
    return False


has_torch_function_unary = has_torch_function_variadic = has_torch_function


# --- dropout -------------------------------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, shape):
    return (_ops.rand(list(shape), dtype=input.dtype) >= p).to(input.dtype)


def _feature_shape(input, spatial, name):
    """The mask shape of channel-wise dropout: (N, C, 1, ...) batched, (C, 1, ...) unbatched."""
    if input.dim() not in (spatial + 1, spatial + 2):
        raise ValueError(f"{name}: expected {spatial + 1}D or {spatial + 2}D input, got {input.dim()}D")
    lead = 2 if input.dim() == spatial + 2 else 1
    return list(input.shape[:lead]) + [1] * (input.dim() - lead)


def _feature_dropout(input, p, training, inplace, spatial, name):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace(input, input * 0.0, inplace)
    mask = _keep_mask(input, p, _feature_shape(input, spatial, name))
    return _inplace(input, input * mask / (1.0 - p), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


_SELU_ALPHA_SCALE = 1.7580993408473766  # selu's scale * alpha: the value dropped units take (negated)


def _alpha_dropout(input, p, training, inplace, shape):
    """Dropped units are set to SELU's negative saturation and the result is rescaled so that
    inputs of zero mean and unit variance keep them (as torch's alpha dropout)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace(input, input * 0.0, inplace)
    keep = _keep_mask(input, p, shape)
    a = 1.0 / _math.sqrt((_SELU_ALPHA_SCALE ** 2 * p + 1) * (1 - p))
    b = (keep - 1.0) * (_SELU_ALPHA_SCALE * a) + _SELU_ALPHA_SCALE * a * p
    return _inplace(input, input * (keep * a) + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    if input.dim() < 2:
        raise ValueError("feature_alpha_dropout: expected an input with at least 2 dims (N, C, ...)")
    return _alpha_dropout(input, p, training, inplace, list(input.shape[:2]) + [1] * (input.dim() - 2))


# --- pooling -------------------------------------------------------------------------------------
def _ntuple(v, n):
    return list(v) if isinstance(v, (list, tuple)) else [v] * n


def _adaptive_1d(input, dim, size, reduce):
    """Adaptive pooling along one dim: bin i covers [floor(i*L/n), ceil((i+1)*L/n)), as torch."""
    length = input.shape[dim]
    if size is None or size == length:
        return input
    bins = []
    for i in range(size):
        start, end = (i * length) // size, -((-(i + 1) * length) // size)
        piece = input.narrow(dim, start, end - start)
        bins.append(piece.mean(dim, keepdim=True) if reduce == "mean" else piece.amax(dim, keepdim=True))
    return _ops.cat(bins, dim)


def _adaptive(input, output_size, n, reduce, name):
    """Averages and maxima over boxes are separable: pool each spatial dim in turn."""
    if input.dim() not in (n + 1, n + 2):
        raise ValueError(f"{name}: expected {n + 1}D or {n + 2}D input, got {input.dim()}D")
    sizes = _ntuple(output_size, n)
    out = input
    for i, s in enumerate(sizes):
        out = _adaptive_1d(out, input.dim() - n + i, s, reduce)
    return out


def _no_indices(name, return_indices):
    if return_indices:
        raise NotImplementedError(f"{name}(): return_indices is not supported")


def adaptive_avg_pool1d(input, output_size):
    return _adaptive(input, output_size, 1, "mean", "adaptive_avg_pool1d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive(input, output_size, 3, "mean", "adaptive_avg_pool3d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    _no_indices("adaptive_max_pool1d", return_indices)
    return _adaptive(input, output_size, 1, "max", "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    _no_indices("adaptive_max_pool2d", return_indices)
    return _adaptive(input, output_size, 2, "max", "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    _no_indices("adaptive_max_pool3d", return_indices)
    return _adaptive(input, output_size, 3, "max", "adaptive_max_pool3d")


def _pool3d(input, pool2d, kernel_size, stride, padding, extra_hw, extra_d, name):
    """A 3-d max or average pool as a 2-d pool over (H, W) then one over D: both reductions and
    torch's per-dim window counts are separable."""
    if input.dim() not in (4, 5):
        raise ValueError(f"{name}: expected 4D or 5D input, got {input.dim()}D")
    batched = input.dim() == 5
    x = input if batched else input.unsqueeze(0)
    k, p = _ntuple(kernel_size, 3), _ntuple(padding, 3)
    s = k if stride is None or stride == [] or stride == () else _ntuple(stride, 3)
    N, C, D, H, W = x.shape
    y = pool2d(x.reshape([N, C * D, H, W]), k[1:], s[1:], p[1:], *extra_hw)
    H2, W2 = y.shape[-2:]
    y = pool2d(y.reshape([N, C, D, H2 * W2]), [k[0], 1], [s[0], 1], [p[0], 0], *extra_d)
    y = y.reshape([N, C, y.shape[2], H2, W2])
    return y if batched else y.squeeze(0)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    _no_indices("max_pool3d", return_indices)
    d = _ntuple(dilation, 3)
    return _pool3d(input, _ops.max_pool2d, kernel_size, stride, padding, (d[1:], ceil_mode), ([d[0], 1], ceil_mode),
                   "max_pool3d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("avg_pool3d(): divisor_override is not supported")
    extra = (ceil_mode, count_include_pad)
    return _pool3d(input, _ops.avg_pool2d, kernel_size, stride, padding, extra, extra, "avg_pool3d")


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n, avg):
    """(sum of x^p over each window)^(1/p), as torch: p-th powers averaged, times the window size."""
    k = _ntuple(kernel_size, n)
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(_math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d)


# --- convolution-like, shuffles, resampling ------------------------------------------------------
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """A 1-d transposed convolution as a 2-d one over a height of 1."""
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    one = lambda v, fill: [fill] + _ntuple(v, 1)  # noqa: E731
    y = _ops.conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), bias, one(stride, 1), one(padding, 0),
                              one(output_padding, 0), groups, one(dilation, 1)).squeeze(2)
    return y if batched else y.squeeze(0)


def conv_tbc(input, weight, bias, pad=0):
    """Convolution over (time, batch, channels) input with a (kernel, in, out) weight."""
    y = _ops.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, [1], [pad], [1], 1)
    return y.permute(2, 0, 1)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]."""
    O, I, J = weight.shape
    lead = list(input1.shape[:-1])
    x1, x2 = input1.reshape([-1, I]), input2.reshape([-1, J])
    y = (x1.matmul(weight.permute(1, 0, 2).reshape([I, O * J])).reshape([-1, O, J]) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + [O])


def pixel_shuffle(input, upscale_factor):
    return _ops.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), the inverse of pixel_shuffle."""
    r = downscale_factor
    *lead, C, H, W = input.shape
    if H % r or W % r:
        raise ValueError(f"pixel_unshuffle: height {H} and width {W} must be divisible by downscale_factor {r}")
    x = input.reshape(list(lead) + [C, H // r, r, W // r, r])
    n = len(lead)
    x = x.permute(list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3])
    return x.reshape(list(lead) + [C * r * r, H // r, W // r])


def channel_shuffle(input, groups):
    """(N, g*k, *) -> channels regrouped as (k, g), as torch.nn.ChannelShuffle."""
    N, C = input.shape[:2]
    if C % groups:
        raise ValueError(f"channel_shuffle: {C} channels are not divisible by groups={groups}")
    rest = list(input.shape[2:])
    return input.reshape([N, groups, C // groups] + rest).transpose(1, 2).reshape([N, C] + rest)


native_channel_shuffle = channel_shuffle


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    if antialias:
        raise NotImplementedError("interpolate(): antialias is not supported")
    if mode in ("nearest", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    n = input.dim() - 2
    if size is not None:
        size = _ntuple(size, n)
    if scale_factor is not None:
        scale_factor = [float(s) for s in _ntuple(scale_factor, n)]
        if recompute_scale_factor:
            size = [int(_math.floor(input.shape[2 + i] * s)) for i, s in enumerate(scale_factor)]
            scale_factor = None
    return _ops.interpolate(input, size, scale_factor, mode, align_corners)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of an affine map: (N, H, W, 2) for 2-d sizes, (N, D, H, W, 3) for 3-d."""
    align = bool(align_corners)
    spatial = list(size[2:])
    if len(spatial) not in (2, 3) or theta.shape[-2:] != (len(spatial), len(spatial) + 1):
        raise ValueError(f"affine_grid: expected theta of shape (N, {len(spatial)}, {len(spatial) + 1}) "
                         f"for size {list(size)}, got {list(theta.shape)}")

    def axis(steps):
        if steps <= 1:
            return _ops.zeros([max(steps, 0)], dtype=theta.dtype)
        line = _ops.linspace(-1.0, 1.0, steps, dtype=theta.dtype)
        return line if align else line * ((steps - 1) / steps)

    coords = [axis(s) for s in reversed(spatial)]  # x (width) first, as torch's grid
    n = len(spatial)
    parts = []
    for i, c in enumerate(coords):
        shape = [1] * n
        shape[n - 1 - i] = c.shape[0]
        parts.append(c.reshape(shape).expand(spatial))
    parts.append(_ops.ones(spatial, dtype=theta.dtype))
    base = _ops.stack(parts, -1).reshape([1, -1, n + 1])
    grid = base.matmul(theta.transpose(1, 2))
    return grid.reshape([size[0]] + spatial + [n])


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, as torch."""
    if input.dim() < 3:
        raise ValueError(f"local_response_norm: expected 3D or higher input, got {input.dim()}D")
    N, C = input.shape[:2]
    sq = (input * input).reshape([N, C, -1]).transpose(1, 2).reshape([-1, 1, C])
    sq = _ops.constant_pad(sq, [size // 2, (size - 1) // 2], 0.0)
    div = _ops.avg_pool1d(sq, [size], [1], [0], False, True).reshape([N, -1, C]).transpose(1, 2)
    div = div.reshape(list(input.shape)).mul(alpha).add(k).pow(beta)
    return input / div


def pdist(input, p=2.0):
    """The p-norm distances between the rows of an (N, M) input, for i < j in row-major order."""
    n = input.shape[0]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if not pairs:
        return _ops.zeros([0], dtype=input.dtype)
    left = _C.tensor([i for i, _ in pairs], dtype=_C.int64)
    right = _C.tensor([j for _, j in pairs], dtype=_C.int64)
    return (input.index_select(0, left) - input.index_select(0, right)).norm(p, [1])


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _ops.pairwise_distance(x1, x2, p, eps, keepdim)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if max_norm is not None or scale_grad_by_freq or sparse or per_sample_weights is not None \
            or include_last_offset or padding_idx is not None:
        raise NotImplementedError("embedding_bag(): max_norm, scale_grad_by_freq, sparse, per_sample_weights, "
                                  "include_last_offset and padding_idx are not supported")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets has to be None if input is 2D")
        bags, length = input.shape
        offsets = _ops.arange(0, bags * length, length, dtype=_C.int64)
        input = input.reshape([-1])
    elif offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
    return _ops.embedding_bag(input, weight, offsets, mode)


# --- losses --------------------------------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zero = _full_like(input, 0.0)
    loss = (_ops.where(target != 1, (margin - input).clamp_min(0), zero)
            + _ops.where(target != -1, input, zero))
    return _reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-target * input).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = input1.dim() - 1
    eps = 1e-12  # torch's: keeps zero vectors finite
    cos = (input1 * input2).sum(d) / ((input1 * input1).sum(d).add(eps) * (input2 * input2).sum(d).add(eps)).sqrt()
    zero = _full_like(cos, 0.0)
    loss = _ops.where(target == 1, 1 - cos, zero) + _ops.where(target == -1, (cos - margin).clamp_min(0), zero)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin}")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _ops.minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:  # Stirling's term target*log(target) - target + log(2*pi*target)/2, for target > 1
        t = _ops.where(target > 1, target, _full_like(target, 1.0))
        stirling = t * t.log() - t + 0.5 * (2 * _math.pi * t).log()
        loss = loss + _ops.where(target > 1, stirling, _full_like(stirling, 0.0))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = _full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp(min=eps) - var).detach()  # clamped, with the gradient of var itself (as torch)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * _math.log(2 * _math.pi)
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C, times weight[y]."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    t = (target.reshape([1]) if unbatched else target).to(_C.int64)
    C = x.shape[1]
    z = (margin - x.gather(1, t.unsqueeze(1)) + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    z = z * (1 - _ops.one_hot(t, C).to(x.dtype))
    loss = z.sum(1) / C
    return _reduce(loss.squeeze(0) if unbatched else loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j (up to the first -1) and non-target classes i of
    max(0, 1 - (x[y_j] - x[i])) / C."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    t = (target.unsqueeze(0) if unbatched else target).to(_C.int64)
    C = x.shape[1]
    valid = (t >= 0).to(_C.int64).cumprod(1).to(x.dtype)  # the prefix before the first -1
    idx = t.clamp_min(0)
    is_target = (_ops.one_hot(idx, C).to(x.dtype) * valid.unsqueeze(2)).sum(1) > 0
    x_y = x.gather(1, idx)
    term = (1 - x_y.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)
    term = term * valid.unsqueeze(2) * (1 - is_target.to(x.dtype)).unsqueeze(1)
    loss = term.sum([1, 2]) / C
    return _reduce(loss.squeeze(0) if unbatched else loss, reduction)


# --- attention -----------------------------------------------------------------------------------
def _additive_mask(mask, dtype):
    """A bool mask (True = not allowed) as 0 / -inf; a float mask as it is."""
    if mask.dtype == _C.bool:
        return _ops.zeros(list(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))
    return mask.to(dtype)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """torch's multi-head attention over (L, N, E) query and (S, N, kdim/vdim) key/value (or
    unbatched (L, E)): returns (output (L, N, E), weights (N, L, S) averaged over heads, or
    (N, H, L, S), or None)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward(): static_k and static_v are not supported")
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, E = query.shape
    if E != embed_dim_to_check:
        raise ValueError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    H = num_heads
    D = E // H
    if use_separate_proj_weight:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)  # (L|S, N, E)

    if attn_mask is None and is_causal:
        attn_mask = _ops.ones([tgt_len, key.shape[0]], dtype=_C.bool).triu(1)
    mask = None
    if attn_mask is not None:
        mask = _additive_mask(attn_mask, q.dtype)
        if mask.dim() == 2:
            mask = mask.unsqueeze(0)  # (1, L, S), or (N*H, L, S) as given
    kpm = _additive_mask(key_padding_mask, q.dtype) if key_padding_mask is not None else None  # (N, S)

    def extend(k, v, mask, kpm, k_extra, v_extra):
        """One more key/value position (bias_k/bias_v or zeros), which every query may attend."""
        k, v = _ops.cat([k, k_extra], 0), _ops.cat([v, v_extra], 0)
        if mask is not None:
            mask = _ops.constant_pad(mask, [0, 1], 0.0)
        if kpm is not None:
            kpm = _ops.constant_pad(kpm, [0, 1], 0.0)
        return k, v, mask, kpm

    if bias_k is not None and bias_v is not None:
        k, v, mask, kpm = extend(k, v, mask, kpm, bias_k.expand([1, bsz, E]), bias_v.expand([1, bsz, E]))
    if add_zero_attn:
        zeros = _ops.zeros([1, bsz, E], dtype=q.dtype)
        k, v, mask, kpm = extend(k, v, mask, kpm, zeros, zeros)
    src_len = k.shape[0]

    def heads(x, n):  # (n, N, E) -> (N, H, n, D)
        return x.reshape([n, bsz, H, D]).permute(1, 2, 0, 3)

    q, k, v = heads(q, tgt_len), heads(k, src_len), heads(v, src_len)
    scores = q.matmul(k.transpose(-2, -1)) * (1.0 / _math.sqrt(D))  # (N, H, L, S)
    if mask is not None:
        scores = scores + mask.reshape([-1, H if mask.shape[0] != 1 else 1, tgt_len, src_len])
    if kpm is not None:
        scores = scores + kpm.reshape([bsz, 1, 1, src_len])
    attn = softmax(scores, dim=-1)
    if dropout_p > 0.0 and training:
        attn = dropout(attn, dropout_p, True)
    out = attn.matmul(v).permute(2, 0, 1, 3).reshape([tgt_len, bsz, E])
    out = linear(out, out_proj_weight, out_proj_bias)
    weights = None
    if need_weights:
        weights = attn.mean(1) if average_attn_weights else attn
        if not batched:
            weights = weights.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, weights


# --- sampling ------------------------------------------------------------------------------------
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples (N, C, H, W) input at the (N, Ho, Wo, 2) grid's (x, y) in [-1, 1]: bilinear or
    nearest, zeros or border padding (reflection and bicubic are not supported). Differentiable in
    input and grid through gathers of the four neighbours."""
    if mode not in ("bilinear", "nearest") or padding_mode not in ("zeros", "border"):
        raise NotImplementedError(f"grid_sample(): mode={mode!r} with padding_mode={padding_mode!r} is not supported "
                                  "(bilinear or nearest; zeros or border)")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise ValueError(f"grid_sample(): expected (N, C, H, W) input and an (N, Ho, Wo, 2) grid, got "
                         f"{list(input.shape)} and {list(grid.shape)}")
    N, C, H, W = input.shape
    Ho, Wo = grid.shape[1:3]

    def unnormalize(coord, size):
        pos = (coord + 1) * ((size - 1) / 2) if align_corners else ((coord + 1) * size - 1) / 2
        return pos.clamp(0, size - 1) if padding_mode == "border" else pos

    x, y = unnormalize(grid[..., 0], W), unnormalize(grid[..., 1], H)  # (N, Ho, Wo)
    flat = input.reshape([N, C, H * W])

    def corner(xi, yi):
        """input at integer (xi, yi), zero outside; (N, C, Ho, Wo)."""
        inside = ((xi >= 0) & (xi <= W - 1) & (yi >= 0) & (yi <= H - 1)).to(input.dtype)
        idx = (yi.clamp(0, H - 1) * W + xi.clamp(0, W - 1)).to(_C.int64).reshape([N, 1, Ho * Wo])
        v = flat.gather(2, idx.expand([N, C, Ho * Wo])).reshape([N, C, Ho, Wo])
        return v * inside.unsqueeze(1)

    if mode == "nearest":
        return corner(x.round(), y.round())
    x0, y0 = x.floor(), y.floor()
    wx1, wy1 = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    wx0, wy0 = 1 - wx1, 1 - wy1
    return (corner(x0, y0) * wx0 * wy0 + corner(x0 + 1, y0) * wx1 * wy0
            + corner(x0, y0 + 1) * wx0 * wy1 + corner(x0 + 1, y0 + 1) * wx1 * wy1)
