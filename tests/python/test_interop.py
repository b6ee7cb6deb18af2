"""DLPack both ways without copies (torch and NumPy), incl. non-contiguous views and bfloat16;
numpy(), __array__, tolist(), item() against NumPy/torch's own view of the same data."""
import numpy as np
import pytest
import torch

import kiln


def test_from_dlpack_torch_shares_memory():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    k = kiln.from_dlpack(t)
    assert k.data_ptr() == t.data_ptr() and k.shape == (3, 4) and k.dtype == kiln.float32
    t[1, 2] = 100.0
    assert k[1, 2].item() == 100.0
    k.add_(1.0)  # writes through kiln are seen by torch
    assert t[0, 0].item() == 1.0


def test_from_dlpack_torch_non_contiguous_keeps_strides():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    view = base.t()[1:, ::2]  # transposed and strided
    k = kiln.from_dlpack(view)
    assert k.shape == tuple(view.shape) and k.stride() == view.stride()
    assert k.data_ptr() == view.data_ptr()
    np.testing.assert_array_equal(np.array(k.tolist()), view.numpy())
    base.zero_()
    assert np.all(np.array(k.tolist()) == 0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.int64, torch.int32, torch.uint8,
                                   torch.bool, torch.float64])
def test_dlpack_round_trip_dtypes(dtype):
    t = (torch.arange(6) % 3).to(dtype).reshape(2, 3)
    k = kiln.from_dlpack(t)
    assert str(k.dtype) == str(dtype).replace("torch", "kiln")
    assert k.data_ptr() == t.data_ptr()
    back = torch.from_dlpack(k)
    assert back.dtype == dtype and back.data_ptr() == t.data_ptr()
    assert torch.equal(back, t)


def test_torch_from_dlpack_of_kiln_shares_memory():
    x = kiln.randn(3, 4)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr()
    t[0, 1] = 5.0
    assert x[0, 1].item() == 5.0
    xt = x.T[1:]
    tt = torch.from_dlpack(xt)
    assert tt.stride() == xt.stride() and tt.data_ptr() == xt.data_ptr()
    np.testing.assert_array_equal(tt.numpy(), np.array(xt.tolist(), dtype=np.float32))


def test_kiln_bf16_to_torch_values():
    x = kiln.randn(5, dtype=kiln.float32)
    xb = x.bfloat16()
    tb = torch.from_dlpack(xb)
    assert tb.dtype == torch.bfloat16
    # torch's own rounding of the same float32 values gives the same bfloat16 bits.
    ref = torch.from_dlpack(x).to(torch.bfloat16)
    assert torch.equal(tb.view(torch.int16), ref.view(torch.int16))


def test_from_dlpack_numpy_shares_memory():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    k = kiln.from_dlpack(a)
    a[1, 1] = -1.0
    assert k.tolist() == a.tolist()
    s = np.arange(10, dtype=np.float32)[::3]
    ks = kiln.from_dlpack(s)
    assert ks.stride() == (3,) and ks.tolist() == s.tolist()
    kn = kiln.from_numpy(a)
    assert kn.data_ptr() == a.ctypes.data


def test_numpy_and_array_share_memory():
    x = kiln.randn(3, 4)
    n = x.numpy()
    assert n.ctypes.data == x.data_ptr() and n.dtype == np.float32
    n[2, 3] = 42.0
    assert x[2, 3].item() == 42.0
    xt = x.T
    assert np.asarray(xt).strides == tuple(s * 4 for s in xt.stride())
    np.testing.assert_array_equal(np.asarray(xt), n.T)
    assert np.array(kiln.tensor([1, 2]), dtype=np.float64).dtype == np.float64


def test_numpy_refusals_are_clear():
    with pytest.raises(kiln.Error, match="NumPy has no bfloat16") as e:
        kiln.zeros(2, dtype=kiln.bfloat16).numpy()
    assert "float()" in e.value.hint
    with pytest.raises(kiln.Error, match="requires grad") as e:
        kiln.zeros(2, requires_grad=True).numpy()
    assert "detach()" in e.value.hint


def test_tolist_and_item_match_torch():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3)).astype(np.float32)
    assert kiln.tensor(a).tolist() == torch.tensor(a).tolist()
    i = rng.integers(-5, 5, size=(4,))
    assert kiln.tensor(i).tolist() == torch.tensor(i).tolist()
    assert kiln.tensor([True, False]).tolist() == [True, False]
    for v in [3.5, -2, True]:
        kv, tv = kiln.tensor(v).item(), torch.tensor(v).item()
        assert kv == tv and type(kv) is type(tv)
    assert kiln.tensor(a)[1, 2].item() == torch.tensor(a)[1, 2].item()
    b = torch.randn(3).to(torch.bfloat16)
    assert kiln.from_dlpack(b).tolist() == b.tolist()


def test_tensor_copies_from_numpy_and_torch():
    a = np.ones(3, dtype=np.float32)
    k = kiln.tensor(a)  # kiln.tensor copies, as torch.tensor
    a[0] = 9.0
    assert k.tolist() == [1.0, 1.0, 1.0]
    assert kiln.tensor(torch.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("rtol,atol,equal_nan", [(1e-5, 1e-8, False), (1e-2, 0.0, False), (0.0, 0.5, True)])
def test_isclose_allclose_equal_match_torch(rtol, atol, equal_nan):
    a = np.array([1.0, 2.0, np.inf, -np.inf, np.nan, 0.0, 100.0], dtype=np.float32)
    b = np.array([1.0 + 1e-6, 2.01, np.inf, np.inf, np.nan, 0.4, 100.5], dtype=np.float32)
    k = kiln.isclose(kiln.tensor(a), kiln.tensor(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    t = torch.isclose(torch.tensor(a), torch.tensor(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
    assert k.tolist() == t.tolist()
    assert kiln.allclose(kiln.tensor(a[:2]), kiln.tensor(b[:2]), rtol, atol) == \
        torch.allclose(torch.tensor(a[:2]), torch.tensor(b[:2]), rtol, atol)
    assert kiln.equal(kiln.tensor(a[:2]), kiln.tensor(a[:2])) and not kiln.equal(kiln.tensor(a[:2]), kiln.tensor(a[:1]))
