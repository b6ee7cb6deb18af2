"""Indexing prims (gather, scatter*, index_select, index_put) and the indexing composites
(index, index_add, masked_select, take_along_dim)."""
import numpy as np
import torch

from op_db import OpInfo, Sample, T, register

DATA = ("float32", "float64", "int64")  # the indexed data; indices are int64 (int32 where torch takes it)


def I(shape, high, low=0, dtype="int64"):
    """An index tensor with values in [low, high)."""
    return T(shape, dtype=dtype, low=low, high=high)


def V(values, dtype="int64"):
    """An index tensor with explicit values."""
    a = np.array(values)
    return T(a.shape, dtype=dtype, values=values)


def M(shape):
    return T(shape, dtype="bool")


# ---------------------------------------------------------------- gather / scatter

def _gather(dtype):
    yield Sample((T((3, 4)), 1, I((3, 2), 4)), name="dim 1")
    yield Sample((T((3, 4)), 0, I((5, 4), 3)), name="dim 0, index longer than self")
    yield Sample((T((3, 4, 5)), -1, I((2, 3, 6), 5)), name="negative dim, index smaller in other dims")
    yield Sample((T((4, 3), layout="transposed"), 0, I((2, 3), 4)), name="transposed self")
    yield Sample((T(()), 0, V(0)), name="0-d")
    yield Sample((T((3, 4)), 1, I((3, 0), 4)), name="zero-size index")


register(OpInfo("gather", _gather, dtypes=DATA))


def _scatter(dtype):
    # Each destination written once: PyTorch leaves the winner of duplicate indices unspecified.
    yield Sample((T((4, 3)), 0, V([[0, 3, 1], [2, 1, 0]]), T((2, 3))), name="dim 0")
    # PyTorch's backward cannot give src a gradient when src is larger than index (it returns one of
    # index's shape and autograd rejects it), so only self's gradient is compared here.
    yield Sample((T((3, 5)), -1, V([[4, 0], [1, 2], [3, 3]]), T((3, 4), requires_grad=False)),
                 name="negative dim, src larger")
    yield Sample((T((3, 4), layout="transposed"), 1, V([[1, 2], [0, 3], [3, 1]]), T((3, 2), layout="strided")),
                 name="transposed self, strided src")
    yield Sample((T(()), 0, V(0), T(())), name="0-d")
    yield Sample((T((3, 4)), 0, I((0, 4), 3), T((0, 4))), name="zero-size index")


register(OpInfo("scatter", _scatter, dtypes=DATA))


def _scatter_add(dtype):
    yield Sample((T((4, 3)), 0, I((5, 3), 4), T((5, 3))), name="dim 0, duplicates accumulate")
    # src larger than index: no src gradient in PyTorch (see scatter).
    yield Sample((T((3, 5)), -1, I((3, 6), 5), T((3, 7), requires_grad=False)), name="negative dim, src larger")
    yield Sample((T((3, 4), layout="transposed"), 1, I((2, 3), 4), T((2, 3), layout="strided")),
                 name="transposed self, strided src")
    yield Sample((T(()), 0, V(0), T(())), name="0-d")
    yield Sample((T((3, 4)), 1, I((3, 0), 4), T((3, 0))), name="zero-size")


register(OpInfo("scatter_add", _scatter_add, dtypes=DATA))


def _scatter_reduce(dtype):
    # index and src have the same shape: PyTorch differentiates scatter_reduce only then.
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            yield Sample((T((4, 3)), 0, I((6, 3), 4), T((6, 3)), reduce), {"include_self": include_self},
                         name=f"{reduce}, include_self={include_self}, dim 0")
            yield Sample((T((3, 4), layout="transposed"), -1, I((3, 5), 4), T((3, 5), layout="strided"), reduce),
                         {"include_self": include_self}, name=f"{reduce}, include_self={include_self}, non-contiguous")
        yield Sample((T((3, 4)), 1, I((2, 0), 4), T((2, 0)), reduce), name=f"{reduce}, zero-size")
    # Ties: the gradient is split evenly between equal winners. With include_self=False, self's values
    # differ from every winner here: PyTorch still counts a self equal to the result as a winner then
    # (so a lone src winner tied with an excluded self gets half its gradient, the rest is lost),
    # a quirk kiln deliberately does not copy: excluded self takes no share.
    src = [[1.0, 1.5, 1.5], [1.5, 2.0, 0.5], [1.0, 2.0, 1.5]]
    index = V([[0, 1, 1], [1, 1, 0], [0, 0, 1]])
    for reduce in ("amax", "amin"):
        yield Sample((T((2, 3), values=[[1.0, 2.0, 0.5], [1.5, 1.5, 1.5]]), 0, index, T((3, 3), values=src), reduce),
                     name=f"{reduce} ties with self, include_self=True")
        yield Sample((T((2, 3), values=[[7.0, -7.0, 7.5], [-7.5, 8.0, -8.0]]), 0, index, T((3, 3), values=src), reduce),
                     {"include_self": False}, name=f"{reduce} ties within src, include_self=False")


register(OpInfo("scatter_reduce", _scatter_reduce, dtypes=DATA))


def _index_select(dtype):
    yield Sample((T((5, 3)), 0, I((4,), 5)), name="dim 0, duplicates")
    yield Sample((T((3, 5)), -1, I((7,), 5, dtype="int32")), name="negative dim, int32 index")
    yield Sample((T((4, 3), layout="transposed"), 1, I((2,), 3)), name="transposed")
    yield Sample((T((4, 6), layout="strided"), 1, V(2)), name="0-d index, strided")
    yield Sample((T((4, 3)), 0, I((0,), 4)), name="zero-size index")
    yield Sample((T(()), 0, V([0])), name="0-d self")


register(OpInfo("index_select", _index_select, dtypes=DATA))


def _index_put(dtype):
    # accumulate=False with unique positions: PyTorch leaves the winner of duplicates unspecified.
    yield Sample((T((5, 3)), [V([0, 4, 2])], T((3, 3))), name="rows")
    yield Sample((T((5, 3)), [V([-1, 1])], T((3,))), name="negative indices, broadcast values")
    yield Sample((T((4, 5)), [V([[0], [3]]), V([1, 4, 2])], T((2, 3))), name="two broadcasting index tensors")
    yield Sample((T((4, 5)), [None, V([4, 0])], T((4, 2))), name="None hole")
    yield Sample((T((4, 5)), [M((4, 5))], T(())), name="bool mask, 0-d value")
    yield Sample((T((5, 3)), [V([0, 1, 0, 4, 1])], T((5, 3)), True), name="accumulate with duplicates")
    yield Sample((T((4, 5), layout="transposed"), [None, V([-1, 2], dtype="int32")], T((4, 2)), True),
                 name="transposed, int32 index, accumulate")
    yield Sample((T((3, 4, 2)), [V([0, 2]), None, V([1, 0])], T((2, 4))),
                 name="indices separated by a hole (result dims go first)")
    yield Sample((T((4, 3)), [I((0,), 4)], T((0, 3))), name="zero-size index")


def _index_put_torch(x, indices, values, accumulate=False):
    return torch.ops.aten.index_put(x, indices, values, accumulate)


register(OpInfo("index_put", _index_put, torch_fn=_index_put_torch, dtypes=DATA))


# ---------------------------------------------------------------- composites

def _index(dtype):
    yield Sample((T((5, 3)), [V([0, 4, 4, 2])]), name="rows with duplicates")
    yield Sample((T((5, 3)), [V([-1, -5])]), name="negative indices")
    yield Sample((T((4, 5)), [V([[0], [3]]), V([1, 4, 2])]), name="two broadcasting index tensors")
    yield Sample((T((4, 5)), [None, V([[4, 0], [1, 1]])]), name="None hole, 2-d index")
    yield Sample((T((3, 4, 2)), [V([0, 2]), None, V([1, 0])]), name="separated indices (result dims go first)")
    yield Sample((T((4, 5)), [M((4, 5))]), name="bool mask over all dims")
    yield Sample((T((4, 5)), [None, M((5,))]), name="bool mask on dim 1")
    yield Sample((T((4, 5), layout="transposed"), [V([1, 3], dtype="int32")]), name="transposed, int32 index")
    yield Sample((T((4, 6), layout="strided"), [I((0,), 4)]), name="strided, zero-size index")
    yield Sample((T((4, 3)), [V(2)]), name="0-d index")


register(OpInfo("index", _index, torch_fn=lambda x, indices: torch.ops.aten.index.Tensor(x, indices), dtypes=DATA))


def _index_add(dtype):
    yield Sample((T((5, 3)), 0, I((4,), 5), T((4, 3))), name="dim 0, duplicates")
    yield Sample((T((3, 5)), -1, I((2,), 5), T((3, 2))), {"alpha": 2}, name="negative dim, alpha")
    yield Sample((T((4, 3), layout="transposed"), 1, V([2, 0]), T((4, 2), layout="strided")),
                 name="transposed self, strided source")
    yield Sample((T((4, 3)), 0, I((0,), 4), T((0, 3))), name="zero-size")


register(OpInfo("index_add", _index_add, dtypes=DATA))


def _masked_select(dtype):
    yield Sample((T((3, 4)), M((3, 4))), name="same shape")
    yield Sample((T((3, 4)), M((4,))), name="broadcast mask")
    yield Sample((T((4,)), M((3, 4))), name="broadcast self")
    yield Sample((T((3, 4), layout="transposed"), M((3, 4))), name="transposed")
    yield Sample((T(()), M(())), name="0-d")
    yield Sample((T((0, 3)), M((0, 3))), name="zero-size")


register(OpInfo("masked_select", _masked_select, dtypes=DATA))


def _take_along_dim(dtype):
    yield Sample((T((3, 4)), I((3, 2), 4), 1), name="dim 1")
    yield Sample((T((3, 4)), I((5,), 12)), name="no dim: the flattened tensor")
    yield Sample((T((3, 4)), I((1, 4), 3), 0), name="broadcast index")
    yield Sample((T((3, 4, 2), layout="transposed"), I((3, 4, 1), 2), -1), name="negative dim, transposed")
    yield Sample((T((3, 4)), I((3, 0), 4)), {"dim": 1}, name="zero-size, kwarg")


register(OpInfo("take_along_dim", _take_along_dim, dtypes=DATA))
