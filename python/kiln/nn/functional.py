"""nn.functional with torch.nn.functional's signatures, each mapped onto kiln ops. The deprecated
torch arguments size_average and reduce keep their positions but must be None; `inplace=True`
computes out of place and writes the result back."""
from .. import _C

_ops = _C._ops


def _inplace(x, y, inplace):
    if inplace:
        x.copy_(y)
        return x
    return y


# --- activations ---------------------------------------------------------------------------------
def relu(input, inplace=False):
    return _inplace(input, _ops.relu(input), inplace)


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
    if running_mean is not None or running_var is not None or not use_input_stats:
        raise NotImplementedError("instance_norm(): running statistics are not supported")
    return _ops.instance_norm(input, weight, bias, eps)


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
