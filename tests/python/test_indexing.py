"""x[index] and x[index] = v against torch for the index kinds the binding tells apart (Python
ints, NumPy ints, 0-d tensors, slices, None, ..., lists, integer and boolean tensors)."""
import numpy as np
import pytest
import torch

import kiln

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def _both(make):
    return make(kiln), make(torch)


INDICES = [
    lambda lib: 1,
    lambda lib: -1,
    lambda lib: np.int64(2),
    lambda lib: (1, -2),
    lambda lib: (slice(None), 2),
    lambda lib: (Ellipsis, 3),
    lambda lib: (None, 1, slice(1, 4, 2)),
    lambda lib: [0, 2],
    lambda lib: (1, [0, 3], slice(None)),
    lambda lib: lib.tensor([2, 0]),
    lambda lib: lib.tensor(1),
    lambda lib: lib.tensor(A[:, :, 0] > 20),
    lambda lib: (Ellipsis, lib.tensor([4, 0, 4])),
]


@pytest.mark.parametrize("i", range(len(INDICES)))
def test_getitem_matches_torch(i):
    k, t = kiln.tensor(A), torch.tensor(A)
    ki, ti = _both(INDICES[i])
    kout, tout = k[ki], t[ti]
    assert kout.shape == tuple(tout.shape)
    np.testing.assert_array_equal(np.array(kout.tolist(), dtype=np.float32).reshape(kout.shape), tout.numpy())


@pytest.mark.parametrize("i", range(len(INDICES)))
def test_setitem_matches_torch(i):
    k, t = kiln.tensor(A), torch.tensor(A)
    ki, ti = _both(INDICES[i])
    k[ki] = -7.0
    t[ti] = -7.0
    np.testing.assert_array_equal(k.numpy(), t.numpy())


def test_int_index_is_a_view():
    k = kiln.tensor(A)
    row = k[1]
    row[0, 0] = 123.0
    assert k[1, 0, 0].item() == 123.0
