"""kiln.save / kiln.load in PyTorch's zip checkpoint format (issue 14 item 6): kiln's checkpoints
load in torch.load, torch.save's load in kiln, both with weights_only=True; views keep sharing their
storage; damaged files raise a kiln.Error; safetensors files work as before; tensors pickle."""
import collections
import copy
import io
import os
import pickle

import numpy as np
import pytest
import torch

import kiln
from kiln import nn

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


class Config:  # a user class a script might pickle next to its weights
    def __init__(self, n_layer):
        self.n_layer = n_layer


def values(t):
    """The elements as Python numbers, through float32 for the 16-bit floats."""
    if str(t.dtype).endswith(("bfloat16", "float16")):
        t = t.float()
    return t.tolist()


def sample_tensors(M):
    """The same tensors built in M (torch or kiln) from the same NumPy data."""
    rng = np.random.default_rng(0)
    out = {}
    for name in DTYPES:
        base = rng.standard_normal((3, 5)).astype(np.float32) * 50
        t = M.from_numpy(base)
        out[name] = t.to(getattr(M, name)) if name != "bool" else t > 0
    return out


@pytest.mark.parametrize("weights_only", [True, False])
def test_kiln_checkpoint_loads_in_torch(tmp_path, weights_only):
    ks = sample_tensors(kiln)
    base = kiln.arange(24, dtype=kiln.float32).reshape(4, 6)
    ckpt = {
        "tensors": ks,
        "base": base, "transposed": base.t(), "slice": base[1:3, 2:5], "row": base[2],  # views of one storage
        "scalar": kiln.tensor(2.5),
        "model_args": {"n_layer": 4, "n_embd": 128, "bias": False, "name": "gpt", "dropout": 0.1},
        "iter_num": 1200, "best_val_loss": 1.25, "tags": ["a", ("b", None)],
        "dtype": kiln.bfloat16, "device": kiln.device("cpu"),
    }
    path = tmp_path / "ckpt.pt"
    kiln.save(ckpt, path)
    t = torch.load(path, weights_only=weights_only)
    for name in DTYPES:
        assert str(t["tensors"][name].dtype) == f"torch.{name}"
        assert values(t["tensors"][name]) == values(ks[name]), name
    assert t["transposed"].stride() == (1, 6) and t["slice"].storage_offset() == 8
    for key in ("base", "transposed", "slice", "row", "scalar"):
        assert t[key].tolist() == ckpt[key].tolist(), key
    # The four views still share one storage: writing through one shows in the others.
    assert len({t[k].untyped_storage().data_ptr() for k in ("base", "transposed", "slice", "row")}) == 1
    t["base"][2, 3] = -1.0
    assert t["row"][3].item() == -1.0 and t["slice"][1, 1].item() == -1.0 and t["transposed"][3, 2].item() == -1.0
    assert t["model_args"] == ckpt["model_args"] and t["iter_num"] == 1200 and t["tags"] == ["a", ("b", None)]
    assert t["dtype"] is torch.bfloat16 and t["device"] == torch.device("cpu")
    # Storages are aligned as torch writes them, so torch can map the file.
    assert torch.load(path, mmap=True, weights_only=True)["base"].tolist() == base.tolist()


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_checkpoint_loads_in_kiln(tmp_path, weights_only):
    ts = sample_tensors(torch)
    base = torch.arange(24.0).reshape(4, 6)
    ckpt = {"tensors": ts, "base": base, "transposed": base.t(), "slice": base[1:3, 2:5],
            "param": torch.nn.Parameter(torch.ones(3)), "args": {"lr": 3e-4, "name": "x"}, "step": 7,
            "dtype": torch.float16, "device": torch.device("cpu"), "size": base.shape}
    path = tmp_path / "torch.pt"
    torch.save(ckpt, path)
    k = kiln.load(path, weights_only=weights_only)
    for name in DTYPES:
        assert k["tensors"][name].dtype == getattr(kiln, name)
        assert values(k["tensors"][name]) == values(ts[name]), name
    assert k["transposed"].tolist() == base.t().tolist() and k["slice"].tolist() == base[1:3, 2:5].tolist()
    assert k["transposed"].stride() == (1, 6)
    k["base"][1, 3] = 100.0  # shared storage after loading
    assert k["slice"][0, 1].item() == 100.0 and k["transposed"][3, 1].item() == 100.0
    assert isinstance(k["param"], nn.Parameter) and k["param"].requires_grad
    assert k["args"] == {"lr": 3e-4, "name": "x"} and k["step"] == 7
    assert k["dtype"] == kiln.float16 and str(k["device"]) == "cpu" and k["size"] == (4, 6)


def _torch_and_kiln_models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    km = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    return tm, km


def test_training_checkpoint_moves_both_ways(tmp_path):
    """A script's checkpoint (model + AdamW state + args) written by torch resumes in kiln, and back."""
    tm, km = _torch_and_kiln_models()
    topt = torch.optim.AdamW(tm.parameters(), lr=1e-2)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    for _ in range(2):
        topt.zero_grad()
        tm(torch.from_numpy(x)).pow(2).mean().backward()
        topt.step()
    torch.save({"model": tm.state_dict(), "optimizer": topt.state_dict(), "model_args": {"d": 8}}, tmp_path / "t.pt")

    ck = kiln.load(tmp_path / "t.pt")
    km.load_state_dict(ck["model"])
    kopt = kiln.optim.AdamW(km.parameters(), lr=1e-2)
    kopt.load_state_dict(ck["optimizer"])
    np.testing.assert_allclose(km(kiln.from_numpy(x)).tolist(), tm(torch.from_numpy(x)).tolist(), atol=1e-6)
    # One more step on each side from the same state: the same weights.
    for m, opt, X in ((tm, topt, torch.from_numpy(x)), (km, kopt, kiln.from_numpy(x))):
        opt.zero_grad()
        m(X).pow(2).mean().backward()
        opt.step()
    kiln.save({"model": km.state_dict(), "optimizer": kopt.state_dict()}, tmp_path / "k.pt")
    back = torch.load(tmp_path / "k.pt", weights_only=True)
    for name, value in tm.state_dict().items():
        np.testing.assert_allclose(back["model"][name].tolist(), value.tolist(), atol=1e-6, err_msg=name)
    assert back["optimizer"]["param_groups"][0]["lr"] == 1e-2
    assert set(back["optimizer"]["state"][0]) == set(topt.state_dict()["state"][0])
    tm2, _ = _torch_and_kiln_models()
    tm2.load_state_dict(back["model"])
    topt2 = torch.optim.AdamW(tm2.parameters(), lr=1e-2)
    topt2.load_state_dict(back["optimizer"])


def test_file_objects_and_round_trip():
    buf = io.BytesIO()
    x = kiln.arange(10, dtype=kiln.int64)
    kiln.save({"x": x, "even": x[::2]}, buf)
    buf.seek(0)
    t = torch.load(buf, weights_only=True)
    assert t["even"].tolist() == [0, 2, 4, 6, 8]
    buf2 = io.BytesIO()
    torch.save({"y": torch.ones(2, 2, dtype=torch.float64)}, buf2)
    buf2.seek(0)
    assert kiln.load(buf2)["y"].dtype == kiln.float64
    buf.seek(0)
    k = kiln.load(buf)
    k["x"][4] = -4
    assert k["even"].tolist() == [0, 2, -4, 6, 8]


def test_weights_only_refuses_arbitrary_classes(tmp_path):
    path = tmp_path / "cfg.pt"
    kiln.save({"w": kiln.ones(2), "config": Config(4)}, path)
    with pytest.raises(kiln.Error, match="weights_only=True refuses the global test_checkpoint.Config") as e:
        kiln.load(path)
    assert isinstance(e.value, pickle.UnpicklingError)  # the type torch.load raises
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
    assert kiln.load(path, weights_only=False)["config"].n_layer == 4
    torch.save({"config": Config(2)}, tmp_path / "t.pt")
    with pytest.raises(kiln.Error, match="refuses the global"):
        kiln.load(tmp_path / "t.pt", weights_only=True)
    assert kiln.load(tmp_path / "t.pt", weights_only=False)["config"].n_layer == 2


def test_map_location(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"w": torch.ones(3)}, path)
    for loc in (None, "cpu", torch.device("cpu"), kiln.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: s):
        assert kiln.load(path, map_location=loc)["w"].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(kiln.Error, match="map_location='cuda:0' asks for a device kiln does not have"):
        kiln.load(path, map_location="cuda:0")


def _damaged(data):
    n = len(data)
    flipped = bytearray(data)
    storage = data.find(b"archive/data/0")  # flip a byte inside the first storage's bytes
    flipped[storage + 200] ^= 0xFF
    return {"empty": b"", "garbage": b"not a checkpoint at all", "truncated-half": data[: n // 2],
            "truncated-tail": data[: n - 10], "header-only": data[:40], "crc": bytes(flipped)}


@pytest.mark.parametrize("case", ["empty", "garbage", "truncated-half", "truncated-tail", "header-only", "crc"])
def test_damaged_files_give_a_kiln_error(tmp_path, case):
    buf = io.BytesIO()
    kiln.save({"w": kiln.arange(256, dtype=kiln.float32), "n": 3}, buf)
    path = tmp_path / "bad.pt"
    path.write_bytes(_damaged(buf.getvalue())[case])
    with pytest.raises(kiln.Error, match=r"load\(\): .*bad.pt"):
        kiln.load(path)


def test_torch_legacy_format_is_named(tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(kiln.Error, match="legacy format"):
        kiln.load(path)


def test_safetensors_kept_and_detected_by_content(tmp_path):
    sd = {"w": kiln.arange(6, dtype=kiln.float32).reshape(2, 3)}
    kiln.save(sd, tmp_path / "m.safetensors", {"note": "x"})
    from safetensors.torch import load_file
    assert load_file(str(tmp_path / "m.safetensors"))["w"].tolist() == sd["w"].tolist()
    os.rename(tmp_path / "m.safetensors", tmp_path / "m.bin")  # no telling extension: the content decides
    assert kiln.load(tmp_path / "m.bin")["w"].tolist() == sd["w"].tolist()
    tensors, meta = kiln.load(str(tmp_path / "m.bin"), True)  # the old positional with_metadata
    assert meta == {"note": "x"}
    with open(tmp_path / "m.bin", "rb") as fh:
        assert kiln.load(fh)["w"].tolist() == sd["w"].tolist()
    kiln.save(sd, tmp_path / "z.pt")
    with open(tmp_path / "z.pt", "rb") as fh:
        assert fh.read(4) == b"PK\x03\x04"  # a non-safetensors name gets PyTorch's format


def test_tensors_pickle():
    x = kiln.arange(12, dtype=kiln.float32).reshape(3, 4).t()
    for t in (x, x.bfloat16(), x > 4, kiln.tensor(3)):
        y = pickle.loads(pickle.dumps(t))
        assert y.dtype == t.dtype and tuple(y.shape) == tuple(t.shape) and values(y) == values(t)
    p = nn.Parameter(kiln.ones(2))
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, nn.Parameter) and q.requires_grad
    assert pickle.loads(pickle.dumps(kiln.float16)) == kiln.float16
    assert str(pickle.loads(pickle.dumps(kiln.device("cpu")))) == "cpu"
    assert copy.copy(x).tolist() == x.tolist()


def test_empty_tensors_big_storages_and_whole_modules():
    buf = io.BytesIO()
    kiln.save({"e": kiln.zeros(0), "e2": kiln.zeros(3, 0), "z": kiln.tensor(1.5)}, buf)
    buf.seek(0)
    t = torch.load(buf, weights_only=True)
    assert t["e"].shape == (0,) and t["e2"].shape == (3, 0) and t["z"].item() == 1.5
    buf = io.BytesIO()
    big = torch.arange(100.0)
    torch.save({"e": torch.zeros(0), "v": big[10:12]}, buf)  # torch writes all 100 elements for the view
    buf.seek(0)
    k = kiln.load(buf)
    assert k["e"].shape == (0,) and k["v"].tolist() == [10.0, 11.0] and k["v"].storage_offset() == 10
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    buf = io.BytesIO()
    kiln.save(model, buf)  # a whole module: kiln's classes, so weights_only=False to load it
    buf.seek(0)
    with pytest.raises(kiln.Error, match="refuses the global kiln.nn"):
        kiln.load(buf)
    buf.seek(0)
    again = kiln.load(buf, weights_only=False)
    x = kiln.ones(1, 2)
    assert kiln.equal(again(x), model(x)) and isinstance(again[0].weight, nn.Parameter)


def test_python_values_both_ways():
    """bytes, sets, complex numbers, OrderedDicts, big ints, inf: protocol 2 writes some of them
    with Python 2's names (__builtin__.set), which weights_only=True allows on both sides."""
    obj = {"b": b"\x00\xff", "s": {1, 2}, "c": complex(1, 2), "od": collections.OrderedDict(a=1),
           "t": (None, (1.5, float("inf"))), "big": 2 ** 70, "neg": -3, "n": collections.Counter("aab"), "ba": bytearray(b"x")}
    for save, load in ((kiln.save, lambda b: torch.load(b, weights_only=True)),
                       (torch.save, lambda b: kiln.load(b, weights_only=True))):
        buf = io.BytesIO()
        save(obj, buf)
        buf.seek(0)
        assert load(buf) == obj
    for refused in (frozenset({1}), range(3), slice(1, 2)):  # torch's weights_only refuses these too
        buf = io.BytesIO()
        torch.save(refused, buf)
        buf.seek(0)
        with pytest.raises(kiln.Error, match="refuses the global builtins."):
            kiln.load(buf)
