"""Python indexing (x[...] and x[...] = v) against PyTorch: basic, integer-array, boolean, mixed
indices, assignment, gradients through indexing, and the errors."""
import numpy as np
import pytest
import torch

import kiln

RNG = np.random.default_rng(7)
DATA = RNG.uniform(-3, 3, size=(4, 5, 6))


def both(a, dtype=None):
    """The same array as a (kiln, torch) pair."""
    a = np.asarray(a)
    return kiln.tensor(a, dtype=dtype and getattr(kiln, dtype)), torch.tensor(a, dtype=dtype and getattr(torch, dtype))


def ints(values):
    return lambda lib: lib.tensor(values)


def mask(shape, seed=0):
    m = np.random.default_rng(seed).random(shape) < 0.5
    return lambda lib: lib.tensor(m)


# Index expressions: plain Python values, or fn(lib) building a tensor with kiln or torch.
INDICES = {
    # basic: ints, slices, None, ...
    "int": 1,
    "negative int": -1,
    "int, int, int (0-d)": (1, 2, 3),
    "slice": slice(1, 3),
    "slice with step": slice(None, None, 2),
    "negative slice bounds": slice(-3, -1),
    "slice past the end": slice(2, 100),
    "empty slice": slice(3, 1),
    "tuple of slices": (slice(1, None), slice(None, 4, 3)),
    "ellipsis": Ellipsis,
    "ellipsis then int": (Ellipsis, 2),
    "int, ellipsis, slice": (0, Ellipsis, slice(1, 3)),
    "None": None,
    "None in the middle": (slice(None), None, 1),
    "None, ellipsis, None": (None, Ellipsis, None),
    "True": True,
    "False": False,
    # integer arrays
    "int list": [0, 2, 2],
    "int tensor": ints([3, 0, -1]),
    "2-d int tensor": ints([[0, 1], [3, 2]]),
    "0-d int tensor": ints(2),
    "int32 tensor": lambda lib: lib.tensor([1, 3], dtype=lib.int32),
    "two int tensors": (ints([0, 3]), ints([4, 1])),
    "broadcasting int tensors": (ints([[0], [2]]), ints([1, 4, 0])),
    "separated int tensors (dims first)": (ints([0, 1]), slice(None), ints([5, 0])),
    "int tensor after a slice": (slice(1, 3), ints([0, 4])),
    "empty int tensor": lambda lib: lib.tensor([], dtype=lib.int64),
    "empty list": [],
    # booleans
    "bool mask, full": mask((4, 5, 6)),
    "bool mask, first dim": mask((4,)),
    "bool mask, first two dims": mask((4, 5)),
    "bool mask after a slice": (slice(None), mask((5,), 1)),
    "bool list": [True, False, True, True],
    "all-false mask": lambda lib: lib.tensor([False] * 4),
    # mixed
    "int, int tensor, slice": (1, ints([0, 2]), slice(None, 3)),
    "int tensor, None, int": (ints([1, 2]), None, 3),
    "ellipsis, int tensor": (Ellipsis, ints([5, 0, 1])),
    "mask and int tensor": (mask((4,), 2), ints([0])),
    "slice, int tensor, int": (slice(None, None, 2), ints([[1], [4]]), -2),
}


def build(index, lib):
    if callable(index):
        return index(lib)
    if isinstance(index, tuple):
        return tuple(build(i, lib) for i in index)
    return index


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", list(INDICES))
def test_getitem(name, layout):
    k, t = both(DATA if layout == "contiguous" else DATA.transpose(0, 2, 1).copy())
    if layout == "transposed":
        k, t = k.transpose(1, 2), t.transpose(1, 2)
    k.requires_grad_(True)
    t.requires_grad_(True)
    kr, tr = k[build(INDICES[name], kiln)], t[build(INDICES[name], torch)]
    assert tuple(kr.shape) == tuple(tr.shape)
    np.testing.assert_array_equal(kr.detach().numpy(), tr.detach().numpy())
    # The gradient scatters back to the indexed places (adding up repeated ones).
    w = RNG.uniform(-1, 1, size=tuple(tr.shape))
    (kg,) = kiln.autograd.grad([(kr * kiln.tensor(w)).sum()], [k], allow_unused=True)
    (tg,) = torch.autograd.grad([(tr * torch.tensor(w)).sum()], [t], allow_unused=True)
    if tg is None:
        assert kg is None or not np.any(kg.numpy())
    else:
        np.testing.assert_allclose(kg.numpy(), tg.numpy(), rtol=1e-12, atol=1e-12)


def test_getitem_returns_a_view_for_basic_indices():
    k = kiln.zeros(3, 4)
    k[1][2:4] = 5.0  # writes through the views
    t = torch.zeros(3, 4)
    t[1][2:4] = 5.0
    np.testing.assert_array_equal(k.numpy(), t.numpy())


SET_INDICES = {
    "int": 1,
    "slice with step": slice(None, None, 2),
    "ellipsis, int": (Ellipsis, 0),
    "None, int": (None, 2),
    "int tensor": ints([3, 0]),
    "negative int tensor": ints([-1, -4]),
    "two int tensors": (ints([0, 3]), ints([4, 1])),
    "separated int tensors": (ints([0, 1]), slice(None), ints([5, 0])),
    "bool mask, full": mask((4, 5, 6)),
    "bool mask, first dim": mask((4,), 3),
    "bool mask after a slice": (slice(None), mask((5,), 4)),
    "mixed": (1, ints([0, 2]), slice(None, 3)),
}


def values_for(shape, kind):
    if kind == "python scalar":
        return 2.5, 2.5
    if kind == "0-d tensor":
        return both(np.array(-1.25))
    if kind == "broadcast last dim":
        return both(RNG.uniform(-1, 1, size=shape[-1:]) if shape else np.array(0.5))
    return both(RNG.uniform(-1, 1, size=shape))


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("kind", ["python scalar", "0-d tensor", "broadcast last dim", "full shape"])
@pytest.mark.parametrize("name", list(SET_INDICES))
def test_setitem(name, kind, grad):
    """x[index] = v on x = leaf * 1 (so x may be written in place); with grad, the gradients of
    sum(x * w) reach v where it was written and the leaf everywhere else."""
    kl, tl = both(DATA)
    shape = tuple(tl[build(SET_INDICES[name], torch)].shape)
    kv, tv = values_for(shape, kind)
    leaves = [(kl, tl)] + ([(kv, tv)] if isinstance(kv, kiln.Tensor) else [])
    if grad:
        for k, t in leaves:
            k.requires_grad_(True)
            t.requires_grad_(True)
    k, t = kl * 1, tl * 1
    k[build(SET_INDICES[name], kiln)] = kv * 1 if grad and isinstance(kv, kiln.Tensor) else kv
    t[build(SET_INDICES[name], torch)] = tv * 1 if grad and isinstance(tv, torch.Tensor) else tv
    np.testing.assert_array_equal(k.detach().numpy(), t.detach().numpy())
    if grad:
        w = RNG.uniform(-1, 1, size=DATA.shape)
        kg = kiln.autograd.grad([(k * kiln.tensor(w)).sum()], [a for a, _ in leaves])
        tg = torch.autograd.grad([(t * torch.tensor(w)).sum()], [b for _, b in leaves])
        for a, b in zip(kg, tg):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_setitem_converts_dtype_and_takes_lists():
    k, t = both(np.zeros((3, 4)), "float32")
    k[0] = kiln.tensor([1, 2, 3, 4])  # int64 values into float32
    t[0] = torch.tensor([1, 2, 3, 4])
    k[1:, 1] = [7.5, -1.5]
    t[1:, 1] = torch.tensor([7.5, -1.5])
    np.testing.assert_array_equal(k.numpy(), t.numpy())
    assert k.dtype == kiln.float32


def test_setitem_drops_leading_size_1_dims_of_the_value():
    for grad in (False, True):
        kl, tl = both(DATA)
        kl.requires_grad_(grad)
        tl.requires_grad_(grad)
        k, t = kl * 1, tl * 1
        k[0] = kiln.ones(1, 1, 5, 6)
        t[0] = torch.ones(1, 1, 5, 6)
        np.testing.assert_array_equal(k.detach().numpy(), t.detach().numpy())


def test_a_list_of_lists_is_one_index_tensor():
    """A deliberate difference: PyTorch still reads x[[[0, 1], [1, 0]]] as x[[0, 1], [1, 0]] (deprecated,
    it warns that 2.9 will read it as a tensor); kiln reads it as NumPy does, as one 2-d index tensor."""
    k, t = both(DATA)
    np.testing.assert_array_equal(k[[[0, 1], [1, 0]]].numpy(), t[torch.tensor([[0, 1], [1, 0]])].numpy())


def test_setitem_on_integer_and_bool_tensors():
    k, t = both(np.arange(12).reshape(3, 4))
    k[k > 5] = 0
    t[t > 5] = 0
    k[:, 0] = -3
    t[:, 0] = -3
    np.testing.assert_array_equal(k.numpy(), t.numpy())
    kb, tb = both(np.zeros(5, dtype=bool))
    kb[[1, 3]] = True
    tb[[1, 3]] = True
    np.testing.assert_array_equal(kb.numpy(), tb.numpy())


def test_setitem_of_a_view_of_a_leaf_requiring_grad_is_an_error():
    k = kiln.zeros(3, 4, requires_grad=True)
    with pytest.raises(kiln.Error, match="leaf"):
        k[1] = 2.0


INPLACE_ON_VIEWS = {
    "copy_ into a row": lambda d, s: d[1].copy_(s * 2),
    "mul_ of a row": lambda d, s: d[1].mul_(s * 2),
    "copy_ into a column of a transposed view": lambda d, s: d.t()[:, 1].copy_(s),
    "a view written, then used": lambda d, s: (d[1].mul_(s), d[1].add_(d[0])),
    "two writes through different views": lambda d, s: (d[0].add_(s), d[:, 1].mul_(3)),
    "setitem of a row": lambda d, s: d.__setitem__(1, s * 2),
    # views taken before a write elsewhere: their history is regenerated from the base's new one
    "base written, an older view used": lambda d, s: (lambda v: (d.mul_(2), v.mul_(s)))(d[1]),
    "a view written, an older overlapping view used": lambda d, s: (lambda v: (d[1].copy_(s), v.mul_(3)))(d[:, 0]),
}


@pytest.mark.parametrize("base_grad", [True, False])
@pytest.mark.parametrize("name", list(INPLACE_ON_VIEWS))
def test_inplace_write_into_a_view_reaches_the_base(name, base_grad):
    """In-place writes into views of a non-leaf: the base's history is rebased (PyTorch's CopySlices),
    so the gradient of the base reaches the written source and, elsewhere, the base's old history."""
    if name == "a view written, an older overlapping view used" and not base_grad:
        pytest.skip("PyTorch rejects it: it takes the older view of a base without grad for a leaf")
    w = RNG.uniform(-1, 1, size=(3, 2))
    base = RNG.uniform(-1, 1, size=(3, 2))
    src = RNG.uniform(-1, 1, size=(2,))
    results = []
    for lib in (kiln, torch):
        a = lib.tensor(base, requires_grad=True)
        s = lib.tensor(src, requires_grad=True)
        d = a * 1 if base_grad else lib.tensor(base)
        INPLACE_ON_VIEWS[name](d, s)
        inputs = [a, s] if base_grad else [s]
        results.append([d.detach().numpy()] + [g.numpy() for g in lib.autograd.grad([(d * lib.tensor(w)).sum()], inputs)])
    for k, t in zip(*results):
        np.testing.assert_allclose(k, t, rtol=1e-12, atol=1e-12)


def test_setitem_gradient():
    """x = leaf * 1; x[idx] = v: the gradient reaches v at idx and the leaf everywhere else."""
    kl, tl = both(RNG.uniform(-1, 1, size=(4, 5)))
    kv, tv = both(RNG.uniform(-1, 1, size=(2, 5)))
    for x in (kl, tl, kv, tv):
        x.requires_grad_(True)
    kx, tx = kl * 1, tl * 1
    kx[kiln.tensor([3, 1])] = kv * 2
    tx[torch.tensor([3, 1])] = tv * 2
    w = RNG.uniform(-1, 1, size=(4, 5))
    kg = kiln.autograd.grad([(kx * kiln.tensor(w)).sum()], [kl, kv])
    tg = torch.autograd.grad([(tx * torch.tensor(w)).sum()], [tl, tv])
    for a, b in zip(kg, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


ERRORS = {
    "int out of range": 4,
    "negative int out of range": -5,
    "too many indices": (0, 0, 0, 0),
    "int tensor out of range": ints([0, 4]),
    "negative int tensor out of range": ints([-5]),
    "float tensor": lambda lib: lib.tensor([0.0, 1.0]),
    "mask of the wrong shape": lambda lib: lib.tensor([True, False]),
    "index tensors that do not broadcast": (ints([0, 1]), ints([0, 1, 2])),
    "a string": "a",
    "a float": 1.5,
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch's deprecation notice for x["a"]
@pytest.mark.parametrize("name", list(ERRORS))
def test_getitem_errors(name):
    k, t = both(DATA)
    with pytest.raises(Exception):
        t[build(ERRORS[name], torch)]  # the case really is an error in PyTorch
    with pytest.raises((kiln.Error, IndexError, TypeError, ValueError)):
        k[build(ERRORS[name], kiln)]


def test_two_ellipses_are_an_error():
    """A deliberate difference: PyTorch accepts x[..., ...] (and treats it as one ellipsis), NumPy and
    the Python array API allow a single ellipsis; kiln follows them rather than the quirk."""
    with pytest.raises(kiln.Error, match="single ellipsis"):
        kiln.zeros(2, 3)[..., ...]


def test_setitem_errors():
    k = kiln.zeros(3, 4)
    with pytest.raises((kiln.Error, IndexError)):
        k[3] = 1.0
    with pytest.raises((kiln.Error, ValueError, RuntimeError)):
        k[0] = kiln.zeros(5)  # values that do not broadcast to the indexed shape
    with pytest.raises((kiln.Error, IndexError)):
        k[kiln.tensor([0, 7])] = 1.0


def test_out_of_range_int_is_an_index_error():
    """Python's sequence protocol (iteration through __getitem__, list(x)) relies on IndexError."""
    k = kiln.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(IndexError):
        k[2]
    assert [r.tolist() for r in k] == [[1.0, 2.0], [3.0, 4.0]]
