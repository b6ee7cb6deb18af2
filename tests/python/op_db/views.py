"""Layout / view prims and the shape composites (reshape, transpose, split, stack, pad, ...)."""
import torch
import torch.nn.functional as F

import kiln
from op_db import OpInfo, Sample, T, register

ANY = ("float32", "float64", "int64", "bool")  # dtype-agnostic data movement: ints and bools too


def _method(name):
    """Calls the op as a Tensor method in both frameworks (for ops torch has only as methods)."""
    return lambda x, *a, **k: getattr(x, name)(*a, **k)


# ---------------------------------------------------------------- layout / view prims

def _view(dtype):
    yield Sample((T((3, 4)), (4, 3)), name="2-d to 2-d")
    yield Sample((T((2, 3, 4)), (-1, 4)), name="-1 size")
    yield Sample((T(()), (1, 1)), name="0-d to (1, 1)")
    yield Sample((T((1,)), ()), name="(1,) to 0-d")
    yield Sample((T((0, 4)), (2, 0, 2)), name="zero-size")
    yield Sample((T((3, 4), layout="strided"), (3, 2, 2)), name="strided input, split last dim")
    yield Sample((T((2, 3, 4), layout="transposed"), (2, 3, 2, 2)), name="transposed input, split a strided dim")


register(OpInfo("view", _view, torch_fn=_method("view"), dtypes=ANY))


def _broadcast_in_dim_torch(x, shape, broadcast_dimensions):
    """PyTorch has no broadcast_in_dim (a JAX/XLA prim): x's dim i becomes output dim
    broadcast_dimensions[i] (size equal, or 1 to broadcast); the other output dims are new."""
    inter = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        inter[d] = x.shape[i]
    return x.reshape(inter).expand(shape)


def _broadcast_in_dim(dtype):
    yield Sample((T((3,)), (2, 3), [1]), name="new leading dim")
    yield Sample((T((3,)), (3, 2), [0]), name="new trailing dim")
    yield Sample((T((3, 1)), (2, 3, 4), [1, 2]), name="size-1 dim broadcast")
    yield Sample((T(()), (2, 3), []), name="0-d")
    yield Sample((T((2, 4), layout="transposed"), (2, 5, 4), [0, 2]), name="non-contiguous, middle dim")
    yield Sample((T((0, 3)), (0, 2, 3), [0, 2]), name="zero-size")


register(OpInfo("broadcast_in_dim", _broadcast_in_dim, torch_fn=_broadcast_in_dim_torch, dtypes=ANY))


def _permute(dtype):
    yield Sample((T((2, 3, 4)), [2, 0, 1]), name="3-d")
    yield Sample((T((2, 3, 4)), [-1, -3, -2]), name="negative dims")
    yield Sample((T(()), []), name="0-d")
    yield Sample((T((3, 5), layout="transposed"), [1, 0]), name="transposed")
    yield Sample((T((2, 0, 3)), [1, 2, 0]), name="zero-size")


register(OpInfo("permute", _permute, dtypes=ANY))


def _slice_torch(x, dim=0, start=None, end=None, step=1):
    idx = [slice(None)] * x.dim()
    idx[dim] = slice(start, end, step)
    return x[tuple(idx)]


def _slice(dtype):
    yield Sample((T((6, 4)), 0, 1, 5), name="rows 1:5")
    yield Sample((T((6, 7)), -1, 1, None, 3), name="negative dim, step 3, open end")
    yield Sample((T((6, 4)), 0, -4, -1), name="negative start/end")
    yield Sample((T((6, 4)), 1, 2, 100), name="end past the size (clamped)")
    yield Sample((T((6, 4)), 0, 4, 2), name="empty result (start > end)")
    yield Sample((T((4, 6), layout="strided"),), {"dim": 1, "start": 1, "step": 2}, name="strided, kwargs")
    yield Sample((T((5,)),), name="defaults")


register(OpInfo("slice", _slice, torch_fn=_slice_torch, dtypes=ANY))


def _squeeze(dtype):
    yield Sample((T((1, 3, 1, 4)),), name="all size-1 dims")
    yield Sample((T((1, 3, 1, 4)), [0]), name="one dim")
    yield Sample((T((1, 3, 1, 4)), [-2, 0]), name="negative dims")
    yield Sample((T((2, 3)), [1]), name="not size 1 (no-op)")
    yield Sample((T(()),), name="0-d")
    yield Sample((T(()), [0]), name="0-d, dim 0")
    yield Sample((T((1, 0, 1)),), name="zero-size")
    yield Sample((T((3, 1), layout="transposed"), [1]), name="transposed")


def _squeeze_torch(x, dim=None):
    return torch.squeeze(x) if dim is None else torch.squeeze(x, tuple(dim))


register(OpInfo("squeeze", _squeeze, torch_fn=_squeeze_torch, dtypes=ANY))


def _unsqueeze(dtype):
    yield Sample((T((3, 4)), 0), name="front")
    yield Sample((T((3, 4)), 2), name="back")
    yield Sample((T((3, 4)), -1), name="negative dim")
    yield Sample((T(()), 0), name="0-d")
    yield Sample((T((0, 2)), 1), name="zero-size")
    yield Sample((T((3, 4), layout="strided"), -2), name="strided")


register(OpInfo("unsqueeze", _unsqueeze, dtypes=ANY))


def _expand(dtype):
    yield Sample((T((3, 1)), (3, 4)), name="size-1 dim")
    yield Sample((T((3,)), (2, 3)), name="new leading dim")
    yield Sample((T((3, 1)), (2, -1, 5)), name="-1 keeps a size")
    yield Sample((T(()), (2, 2)), name="0-d")
    yield Sample((T((1, 3), layout="strided"), (0, 3)), name="to zero-size, strided")
    yield Sample((T((4, 1), layout="transposed"), (4, 3)), name="transposed")


register(OpInfo("expand", _expand, torch_fn=_method("expand"), dtypes=ANY))


def _as_strided(dtype):
    yield Sample((T((12,)), (3, 4), (4, 1)), name="reshape-like")
    yield Sample((T((12,)), (4, 3), (1, 4)), name="transposed strides")
    yield Sample((T((10,)), (4, 3), (2, 1)), name="overlapping windows")
    yield Sample((T((4, 5)), (2, 2), (5, 1), 3), name="storage offset")
    yield Sample((T((6,)), (2, 3), (0, 1)), name="stride 0")
    yield Sample((T((6,)), (0, 3), (3, 1)), name="zero-size")
    yield Sample((T((6,)), (), ()), {"storage_offset": 5}, name="0-d, kwarg")
    # as_strided addresses the input's storage, whatever the input's own strides and offset.
    yield Sample((T((3, 4), layout="strided"), (3, 3), (8, 1)), name="strided input: raw storage")
    yield Sample((T((4, 3), layout="transposed"), (2, 6), (6, 1)), name="transposed input: raw storage")


register(OpInfo("as_strided", _as_strided, dtypes=ANY))


def _diagonal(dtype):
    yield Sample((T((4, 4)),), name="main")
    yield Sample((T((3, 5)), 1), name="offset 1")
    yield Sample((T((3, 5)), -2), name="offset -2")
    yield Sample((T((3, 5)), 7), name="offset past the size (empty)")
    yield Sample((T((2, 3, 4)), 0, -1, 0), name="negative dims")
    yield Sample((T((2, 3, 4)),), {"offset": 1, "dim1": 2, "dim2": 1}, name="kwargs, dims swapped")
    yield Sample((T((4, 3), layout="transposed"),), name="transposed")
    yield Sample((T((0, 3)),), name="zero-size")


register(OpInfo("diagonal", _diagonal, dtypes=ANY))


def _cat(dtype):
    yield Sample(([T((2, 3)), T((4, 3))],), name="dim 0")
    yield Sample(([T((2, 3)), T((2, 1)), T((2, 5))], 1), name="dim 1, three tensors")
    yield Sample(([T((2, 3, 4)), T((2, 3, 2), layout="transposed")], -1), name="negative dim, non-contiguous")
    yield Sample(([T((2, 3)), T((0, 3)), T((1, 3), layout="strided")],), name="zero-size piece, strided")
    yield Sample(([T((3,))],), {"dim": 0}, name="one tensor, kwarg")
    yield Sample(([T((0, 2)), T((0, 2))],), name="all zero-size")
    if dtype == "float32":  # type promotion across the inputs
        yield Sample(([T((2, 2)), T((1, 2), dtype="float64"), T((1, 2), dtype="int64")],), name="mixed dtypes")


register(OpInfo("cat", _cat, dtypes=ANY))


def _constant_pad(dtype):
    yield Sample((T((3, 4)), [1, 2]), name="last dim")
    yield Sample((T((2, 3, 4)), [1, 0, 2, 1], 2.5), name="two dims, value")
    yield Sample((T((3, 5)), [-1, 2, 0, -2]), name="negative pads crop")
    yield Sample((T((2, 3, 4), layout="transposed"), [0, 0, 1, 1, 2, 0]), name="three dims, transposed")
    yield Sample((T((0, 3)), [1, 1]), name="zero-size")
    yield Sample((T((3,)), [2, 2]), {"value": -1.0}, name="kwarg value")


def _constant_pad_torch(x, pad, value=0):
    return F.pad(x, pad, mode="constant", value=value)


register(OpInfo("constant_pad", _constant_pad, torch_fn=_constant_pad_torch, dtypes=("float32", "float64", "int64")))


def _flip(dtype):
    yield Sample((T((3, 4)), [0]), name="dim 0")
    yield Sample((T((2, 3, 4)), [0, 2]), name="two dims")
    yield Sample((T((2, 3, 4)), [-1]), name="negative dim")
    yield Sample((T(()), []), name="0-d")
    yield Sample((T((3, 4), layout="transposed"), [1, 0]), name="transposed")
    yield Sample((T((4, 3), layout="strided"), [1]), name="strided")
    yield Sample((T((0, 3)), [0, 1]), name="zero-size")


register(OpInfo("flip", _flip, dtypes=ANY))


# ---------------------------------------------------------------- copy_

def _copy_torch(dst, src, into=None):
    d = dst.clone()
    (d if into is None else d[into]).copy_(src)
    return d


def _copy(dtype):
    yield Sample((T((3, 4), requires_grad=False), T((3, 4))), name="same shape")
    yield Sample((T((2, 3, 4), requires_grad=False), T((4,))), name="broadcast src")
    yield Sample((T((3, 4), requires_grad=False), T((3, 4), layout="transposed")), name="transposed src")
    yield Sample((T((3, 4), requires_grad=False, layout="transposed"), T((3, 4), layout="strided")),
                 name="transposed destination, strided src")
    yield Sample((T((), requires_grad=False), T(())), name="0-d")
    yield Sample((T((0, 2), requires_grad=False), T((2,))), name="zero-size")
    other = "float32" if dtype == "float64" else "float64"
    yield Sample((T((3,), requires_grad=False), T((3,), dtype=other)), name="converts src dtype")
    yield Sample((T((3,), requires_grad=False), T((3,), dtype="int64", low=-5, high=5)), name="int src")
    # Into a view of the destination: the destination's history is rebased, gradients reach both.
    yield Sample((T((3, 4)), T((4,))), {"into": 1}, name="into a row view")
    yield Sample((T((4, 6), layout="transposed"), T((2, 3), layout="strided")), {"into": (slice(1, 3), slice(None, None, 2))},
                 name="into a strided view of a transposed destination")
    yield Sample((T((3, 4), requires_grad=False), T((3, 1))), {"into": (slice(None), slice(2, 4))},
                 name="into a view of a destination without grad, broadcast src")
    yield Sample((T((3, 4)), T((3, 4))), name="whole destination overwritten: zero gradient for dst")


def _kiln_copy_fn(dst, src, into=None):
    """copy_ into a clone of dst, or into the view clone[into]: the gradient reaches src where it was
    copied to and dst everywhere else."""
    d = dst.clone()
    kiln.copy_(d if into is None else d[into], src)
    return d


register(OpInfo("copy_", _copy, kiln_fn=_kiln_copy_fn, torch_fn=_copy_torch))


# ---------------------------------------------------------------- shape composites

def _reshape(dtype):
    yield Sample((T((3, 4)), (4, 3)), name="2-d")
    yield Sample((T((2, 3, 4)), (-1,)), name="flatten with -1")
    yield Sample((T((2, 3, 4), layout="transposed"), (6, 4)), name="transposed (copies)")
    yield Sample((T((3, 4), layout="strided"), (2, 6)), name="strided (copies)")
    yield Sample((T(()), (1,)), name="0-d")
    yield Sample((T((0, 3)), (3, 0)), name="zero-size")


register(OpInfo("reshape", _reshape, dtypes=ANY))


def _flatten(dtype):
    yield Sample((T((2, 3, 4)),), name="all")
    yield Sample((T((2, 3, 4, 5)), 1, 2), name="middle dims")
    yield Sample((T((2, 3, 4)), -2), name="negative start")
    yield Sample((T((2, 3, 4), layout="transposed"),), {"start_dim": 0, "end_dim": -2}, name="kwargs, transposed")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((2, 0, 3)), 0, 1), name="zero-size")


register(OpInfo("flatten", _flatten, dtypes=ANY))


def _unflatten(dtype):
    yield Sample((T((2, 12)), 1, (3, 4)), name="last dim")
    yield Sample((T((12, 2)), 0, (2, -1, 3)), name="-1 size")
    yield Sample((T((2, 6)), -1, (6, 1)), name="negative dim")
    yield Sample((T((4, 6), layout="transposed"), 0, (2, 2)), name="transposed")
    yield Sample((T((0, 6)), 1, (2, 3)), name="zero-size")


register(OpInfo("unflatten", _unflatten, dtypes=ANY))


def _transpose(dtype):
    yield Sample((T((3, 4)), 0, 1), name="2-d")
    yield Sample((T((2, 3, 4)), -1, 0), name="negative dim")
    yield Sample((T((2, 3, 4)), 1, 1), name="same dim")
    yield Sample((T((5,)), 0, -1), name="1-d")
    yield Sample((T(()), 0, -1), name="0-d")
    yield Sample((T((3, 4), layout="strided"), 0, 1), name="strided")
    yield Sample((T((0, 3)), 0, 1), name="zero-size")


register(OpInfo("transpose", _transpose, dtypes=ANY))


def _t(dtype):
    yield Sample((T((3, 4)),), name="2-d")
    yield Sample((T((5,)),), name="1-d")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((3, 4), layout="transposed"),), name="transposed")
    yield Sample((T((0, 3)),), name="zero-size")


register(OpInfo("t", _t, dtypes=ANY))


def _mT(dtype):
    yield Sample((T((3, 4)),), name="2-d")
    yield Sample((T((2, 3, 4)),), name="batched")
    yield Sample((T((2, 3, 4), layout="strided"),), name="strided")
    yield Sample((T((2, 0, 3)),), name="zero-size")


register(OpInfo("mT", _mT, torch_fn=lambda x: x.mT, dtypes=ANY))


def _expand_as(dtype):
    yield Sample((T((3, 1)), T((3, 4), requires_grad=False)), name="size-1 dim")
    yield Sample((T(()), T((2, 3), requires_grad=False)), name="0-d")
    yield Sample((T((4,), layout="strided"), T((2, 4), requires_grad=False)), name="strided")


register(OpInfo("expand_as", _expand_as, torch_fn=_method("expand_as"), dtypes=ANY))


def _repeat(dtype):
    yield Sample((T((2, 3)), (2, 2)), name="2-d")
    yield Sample((T((3,)), (2, 1, 2)), name="more repeats than dims")
    yield Sample((T(()), (3,)), name="0-d")
    yield Sample((T((2, 3), layout="transposed"), (1, 3)), name="transposed")
    yield Sample((T((2, 3)), (0, 2)), name="zero repeats")


register(OpInfo("repeat", _repeat, torch_fn=_method("repeat"), dtypes=ANY))


def _narrow(dtype):
    yield Sample((T((5, 4)), 0, 1, 3), name="dim 0")
    yield Sample((T((5, 4)), -1, 2, 2), name="negative dim")
    yield Sample((T((5, 4)), 0, -2, 2), name="negative start")
    yield Sample((T((5, 4)), 1, 4, 0), name="zero length")
    yield Sample((T((4, 6), layout="strided"), 1, 1, 3), name="strided")


register(OpInfo("narrow", _narrow, dtypes=ANY))


def _select(dtype):
    yield Sample((T((3, 4)), 0, 1), name="dim 0")
    yield Sample((T((3, 4)), -1, -1), name="negative dim and index")
    yield Sample((T((5,)), 0, 2), name="1-d to 0-d")
    yield Sample((T((3, 4, 2), layout="transposed"), 1, 3), name="transposed")
    yield Sample((T((3, 0)), 0, 2), name="zero-size")


register(OpInfo("select", _select, dtypes=ANY))


def _split(dtype):
    yield Sample((T((6, 3)), 2), name="even")
    yield Sample((T((7, 3)), 3), name="uneven")
    yield Sample((T((3, 7)), 4, -1), name="negative dim")
    yield Sample((T((3, 4), layout="transposed"), 10, 1), name="bigger than the dim")
    yield Sample((T((0, 3)), 2), name="zero-size")


register(OpInfo("split", _split, kiln_fn=lambda x, s, dim=0: kiln._C._ops.split(x, s, dim), dtypes=ANY))


def _split_with_sizes(dtype):
    yield Sample((T((6, 3)), [1, 2, 3]), name="dim 0")
    yield Sample((T((3, 5)), [5, 0], -1), name="negative dim, a zero size")
    yield Sample((T((4, 6), layout="strided"), [3, 3]), {"dim": 1}, name="strided, kwarg")


register(OpInfo("split_with_sizes", _split_with_sizes, torch_fn=lambda x, s, dim=0: torch.split(x, s, dim),
                dtypes=ANY))


def _chunk(dtype):
    yield Sample((T((6, 3)), 3), name="even")
    yield Sample((T((7, 3)), 3), name="uneven")
    yield Sample((T((5, 2)), 6), name="more chunks than elements")
    yield Sample((T((3, 4), layout="transposed"), 2, -1), name="negative dim, transposed")
    yield Sample((T((6,)), 4), name="fewer chunks than asked (sizes 2, 2, 2)")
    yield Sample((T((0, 3)), 2), name="zero-size: that many empty chunks")


register(OpInfo("chunk", _chunk, dtypes=ANY))


def _unbind(dtype):
    yield Sample((T((3, 4)),), name="dim 0")
    yield Sample((T((3, 4)), -1), name="negative dim")
    yield Sample((T((2, 3, 4), layout="strided"), 1), name="strided")
    yield Sample((T((2, 0)), 0), name="zero-size")


register(OpInfo("unbind", _unbind, dtypes=ANY))


def _stack(dtype):
    yield Sample(([T((2, 3)), T((2, 3))],), name="dim 0")
    yield Sample(([T((2, 3)), T((2, 3), layout="transposed"), T((2, 3))], -1), name="last dim, transposed")
    yield Sample(([T(()), T(())],), name="0-d")
    yield Sample(([T((0, 2)), T((0, 2))], 1), name="zero-size")
    if dtype == "float32":
        yield Sample(([T((2,)), T((2,), dtype="int64")], -1), name="mixed dtypes")


register(OpInfo("stack", _stack, dtypes=ANY))


def _one_arg(dtype):
    yield Sample((T((3, 4)),), name="contiguous")
    yield Sample((T((3, 4), layout="transposed"),), name="transposed")
    yield Sample((T((2, 3, 4), layout="strided"),), name="strided")
    yield Sample((T(()),), name="0-d")
    yield Sample((T((0, 3)),), name="zero-size")


register(OpInfo("contiguous", _one_arg, torch_fn=_method("contiguous"), dtypes=ANY))
register(OpInfo("clone", _one_arg, dtypes=ANY))


def _roll(dtype):
    yield Sample((T((3, 4)), [1], [0]), name="one dim")
    yield Sample((T((3, 4)), [-1, 5], [1, 0]), name="two dims, negative and wrapping shifts")
    yield Sample((T((3, 4)), [2]), name="no dims: the flattened tensor")
    yield Sample((T((3, 4), layout="transposed"), [1], [-1]), name="transposed, negative dim")
    yield Sample((T((0, 3)), [1], [1]), name="zero-size")
    yield Sample((T((3, 4)), [-7, 9], [0, 1]), name="shifts beyond the size")
    yield Sample((T(()), [3]), name="0-d")


register(OpInfo("roll", _roll, dtypes=ANY))


def _movedim(dtype):
    yield Sample((T((2, 3, 4)), [0], [2]), name="one dim")
    yield Sample((T((2, 3, 4)), [0, -1], [-1, 0]), name="two dims, negative")
    yield Sample((T((2, 3, 4), layout="strided"), [1, 2], [0, 1]), name="strided")
    yield Sample((T((2, 0, 3)), [1], [0]), name="zero-size")


register(OpInfo("movedim", _movedim, dtypes=ANY))


def _pad(dtype):
    yield Sample((T((2, 3, 4)), [1, 2]), name="constant default")
    yield Sample((T((2, 3, 4)), [1, 1, 2, 0], "constant", 1.5), name="constant value")
    yield Sample((T((2, 3, 5)), [2, 1], "reflect"), name="reflect 1-d")
    yield Sample((T((1, 2, 4, 5)), [1, 2, 3, 0], "reflect"), name="reflect 2-d")
    yield Sample((T((2, 3, 4), layout="transposed"), [2, 3], "replicate"), name="replicate, transposed")
    yield Sample((T((1, 2, 3, 4)), [1, 0, 2, 2], "replicate"), name="replicate 2-d")
    yield Sample((T((2, 3, 4)), [2, 1], "circular"), name="circular")
    yield Sample((T((1, 2, 3, 4)), [1, 2, 2, 1]), {"mode": "circular"}, name="circular 2-d, kwarg")
    yield Sample((T((3, 4)), [-1, 1]), name="negative constant pad")
    yield Sample((T((1, 2, 3, 4, 5)), [1, 2, 2, 1, 1, 1], "reflect"), name="reflect 3-d")
    yield Sample((T((1, 2, 3, 4, 5), layout="strided"), [0, 2, 1, 1, 2, 0], "replicate"), name="replicate 3-d, strided")
    yield Sample((T((2, 3, 4)), [-1, 2], "circular"), name="circular, negative pad")
    yield Sample((T((2, 3, 4)), [3, 3], "replicate"), name="replicate wider than the dim")


def _pad_torch(x, pad, mode="constant", value=None):
    return F.pad(x, pad, mode=mode, value=value)


register(OpInfo("pad", _pad, torch_fn=_pad_torch))
