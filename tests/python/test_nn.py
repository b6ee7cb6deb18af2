"""kiln.nn against torch.nn: each layer gets the torch layer's weights (through load_state_dict,
so the state_dict keys must be torch's), then forward outputs and parameter/input gradients must
match. Module mechanics (registration, state_dict, modes, conversion, repr) are checked against
torch's behaviour too."""
import math
import os
from collections import OrderedDict

import numpy as np
import pytest
import torch

import kiln
import kiln.nn as knn
import kiln.nn.functional as KF


def to_kiln(t):
    return kiln.tensor(t.detach().numpy())


def copy_weights(tm, km):
    km.load_state_dict({k: to_kiln(v) for k, v in tm.state_dict().items()})


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(k, t, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(k.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


# (name, constructor given the library, input maker given numpy rng -> list of arrays/ints)
LAYERS = [
    ("Linear", lambda nn: nn.Linear(6, 4), [(3, 6)]),
    ("Linear-nobias-3d", lambda nn: nn.Linear(6, 5, bias=False), [(2, 3, 6)]),
    ("LayerNorm", lambda nn: nn.LayerNorm(8), [(3, 8)]),
    ("LayerNorm-2d-nobias", lambda nn: nn.LayerNorm((4, 5), eps=1e-3, bias=False), [(2, 4, 5)]),
    ("RMSNorm", lambda nn: nn.RMSNorm(8, eps=1e-6), [(3, 8)]),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 6), [(2, 6, 5)]),
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(5), [(8, 5)]),
    ("BatchNorm1d-3d", lambda nn: nn.BatchNorm1d(5, momentum=None), [(4, 5, 3)]),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), [(4, 3, 5, 5)]),
    ("ReLU", lambda nn: nn.ReLU(), [(4, 7)]),
    ("GELU", lambda nn: nn.GELU(), [(4, 7)]),
    ("GELU-tanh", lambda nn: nn.GELU(approximate="tanh"), [(4, 7)]),
    ("SiLU", lambda nn: nn.SiLU(), [(4, 7)]),
    ("Tanh", lambda nn: nn.Tanh(), [(4, 7)]),
    ("Sigmoid", lambda nn: nn.Sigmoid(), [(4, 7)]),
    ("Softmax", lambda nn: nn.Softmax(dim=-1), [(4, 7)]),
    ("LogSoftmax", lambda nn: nn.LogSoftmax(dim=1), [(4, 7)]),
    ("LeakyReLU", lambda nn: nn.LeakyReLU(0.2), [(4, 7)]),
    ("Identity", lambda nn: nn.Identity(), [(4, 7)]),
    ("Flatten", lambda nn: nn.Flatten(), [(2, 3, 4)]),
    ("Unflatten", lambda nn: nn.Unflatten(1, (3, 4)), [(2, 12)]),
    ("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), [(2, 3, 9)]),
    ("Conv2d", lambda nn: nn.Conv2d(3, 4, 3, padding=1), [(2, 3, 6, 6)]),
    ("Conv2d-groups-dil", lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(1, 2), groups=2),
     [(2, 4, 7, 7)]),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
     [(2, 3, 4, 4)]),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), [(2, 3, 6, 6)]),
    ("MaxPool2d-stride-pad", lambda nn: nn.MaxPool2d(3, stride=2, padding=1), [(2, 3, 7, 7)]),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(2, stride=1), [(2, 3, 5, 5)]),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((2, 3)), [(2, 3, 7, 8)]),
    ("AdaptiveAvgPool2d-1", lambda nn: nn.AdaptiveAvgPool2d(1), [(2, 3, 5, 5)]),
    ("Sequential", lambda nn: nn.Sequential(nn.Linear(5, 8), nn.GELU(), nn.Linear(8, 3)), [(4, 5)]),
    ("MHA-batch-first", lambda nn: nn.MultiheadAttention(8, 2, batch_first=True), [(2, 5, 8), (2, 4, 8), (2, 4, 8)]),
    ("MHA-seq-first", lambda nn: nn.MultiheadAttention(8, 4), [(5, 2, 8), (5, 2, 8), (5, 2, 8)]),
    ("MHA-nobias", lambda nn: nn.MultiheadAttention(6, 3, bias=False, batch_first=True),
     [(2, 3, 6), (2, 3, 6), (2, 3, 6)]),
]


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name,make,shapes", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch(name, make, shapes):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    copy_weights(tm, km)
    arrays = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    kx = [kiln.tensor(a, requires_grad=True) for a in arrays]
    tout, kout = tm(*tx), km(*kx)
    if isinstance(tout, tuple):  # MultiheadAttention: output and averaged weights
        close(kout[1], tout[1])
    tout, kout = _first(tout), _first(kout)
    close(kout, tout)
    # A non-uniform upstream gradient, so sums of outputs cannot hide errors.
    w = randn(*tout.shape, seed=99)
    (tout * torch.tensor(w)).sum().backward()
    (kout * kiln.tensor(w)).sum().backward()
    for kx_, tx_ in zip(kx, tx):
        close(kx_.grad, tx_.grad)
    tparams = dict(tm.named_parameters())
    kparams = dict(km.named_parameters())
    assert list(kparams) == list(tparams)
    for n in tparams:
        close(kparams[n].grad, tparams[n].grad)
    # Buffers (BatchNorm's running statistics) updated the same way.
    for (kn, kb), (tn, tb) in zip(km.named_buffers(), tm.named_buffers()):
        assert kn == tn
        close(kb, tb)


def test_embedding_matches_torch():
    torch.manual_seed(0)
    tm, km = torch.nn.Embedding(10, 4, padding_idx=1), knn.Embedding(10, 4, padding_idx=1)
    # kiln's own initialisation keeps the padding row at zero.
    assert np.all(km.weight.detach().numpy()[1] == 0)
    copy_weights(tm, km)
    idx = np.array([[1, 3, 3], [9, 0, 1]], dtype=np.int64)
    tout, kout = tm(torch.tensor(idx)), km(kiln.tensor(idx))
    close(kout, tout)
    w = randn(*tout.shape, seed=5)
    (tout * torch.tensor(w)).sum().backward()
    (kout * kiln.tensor(w)).sum().backward()
    close(km.weight.grad, tm.weight.grad)


def test_batchnorm_eval_uses_running_stats():
    tm, km = torch.nn.BatchNorm2d(3), knn.BatchNorm2d(3)
    for step in range(3):
        x = randn(4, 3, 2, 2, seed=step) * (step + 1) + step
        tm(torch.tensor(x))
        km(kiln.tensor(x))
    assert int(km.num_batches_tracked.item()) == 3
    close(km.running_mean, tm.running_mean)
    close(km.running_var, tm.running_var)
    tm.eval()
    km.eval()
    x = randn(2, 3, 2, 2, seed=7)
    close(km(kiln.tensor(x)), tm(torch.tensor(x)))
    close(km.running_mean, tm.running_mean)  # eval does not update


def test_batchnorm_rejects_wrong_rank():
    with pytest.raises(ValueError, match="expected 4D input"):
        knn.BatchNorm2d(3)(kiln.randn(3, 3))


def test_dropout_train_and_eval():
    d = knn.Dropout(0.5)
    x = kiln.ones(2000)
    y = d(x).numpy()
    kept = y != 0
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_allclose(y[kept], 2.0)  # survivors scaled by 1/(1-p)
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())
    assert "p=0.5" in repr(d)


def test_mha_masks_match_torch():
    torch.manual_seed(1)
    tm, km = torch.nn.MultiheadAttention(8, 2, batch_first=True), knn.MultiheadAttention(8, 2, batch_first=True)
    copy_weights(tm, km)
    q = randn(2, 4, 8, seed=1)
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    pad = np.array([[False, False, False, True], [False, False, False, False]])
    tout, tw = tm(torch.tensor(q), torch.tensor(q), torch.tensor(q), attn_mask=torch.tensor(causal),
                  key_padding_mask=torch.tensor(pad), average_attn_weights=False)
    kout, kw = km(kiln.tensor(q), kiln.tensor(q), kiln.tensor(q), attn_mask=kiln.tensor(causal),
                  key_padding_mask=kiln.tensor(pad), average_attn_weights=False)
    close(kout, tout)
    close(kw, tw)
    tout, _ = tm(torch.tensor(q), torch.tensor(q), torch.tensor(q), need_weights=False, is_causal=True,
                 attn_mask=torch.tensor(causal))
    kout, kw = km(kiln.tensor(q), kiln.tensor(q), kiln.tensor(q), need_weights=False, is_causal=True)
    assert kw is None
    close(kout, tout)


LOSSES = [
    ("CrossEntropyLoss", lambda nn: nn.CrossEntropyLoss(), "logits", "class"),
    ("CrossEntropyLoss-smooth-ignore", lambda nn: nn.CrossEntropyLoss(ignore_index=2, label_smoothing=0.1),
     "logits", "class"),
    ("CrossEntropyLoss-sum", lambda nn: nn.CrossEntropyLoss(reduction="sum"), "logits", "class"),
    ("NLLLoss", lambda nn: nn.NLLLoss(), "logprobs", "class"),
    ("MSELoss", lambda nn: nn.MSELoss(), "real", "real"),
    ("L1Loss-none", lambda nn: nn.L1Loss(reduction="none"), "real", "real"),
    ("SmoothL1Loss", lambda nn: nn.SmoothL1Loss(beta=0.5), "real", "real"),
    ("HuberLoss", lambda nn: nn.HuberLoss(delta=0.7), "real", "real"),
    ("BCELoss", lambda nn: nn.BCELoss(), "prob", "prob"),
    ("BCEWithLogitsLoss", lambda nn: nn.BCEWithLogitsLoss(), "real", "prob"),
    ("KLDivLoss", lambda nn: nn.KLDivLoss(reduction="sum"), "logprobs", "prob"),
    ("KLDivLoss-logtarget", lambda nn: nn.KLDivLoss(reduction="mean", log_target=True), "logprobs", "logprobs"),
]


def _loss_input(kind, seed):
    x = randn(6, 5, seed=seed)
    if kind == "logits" or kind == "real":
        return x
    if kind == "prob":
        return 1 / (1 + np.exp(-x))
    if kind == "logprobs":
        return x - np.log(np.exp(x).sum(1, keepdims=True))
    if kind == "class":
        return np.random.default_rng(seed).integers(0, 5, size=6).astype(np.int64)


@pytest.mark.parametrize("name,make,inp,tgt", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(name, make, inp, tgt):
    x, y = _loss_input(inp, 1), _loss_input(tgt, 2)
    tx, kx = torch.tensor(x, requires_grad=True), kiln.tensor(x, requires_grad=True)
    tout, kout = make(torch.nn)(tx, torch.tensor(y)), make(knn)(kx, kiln.tensor(y))
    close(kout, tout)
    tout.sum().backward()
    kout.sum().backward()
    close(kx.grad, tx.grad)


def test_functional_signatures_match_torch():
    x = randn(2, 3, 8, 8)
    tx, kx = torch.tensor(x), kiln.tensor(x)
    close(KF.softmax(kx, -1, dtype=kiln.float64), torch.nn.functional.softmax(tx, -1, dtype=torch.float64))
    close(KF.log_softmax(kx, dim=1), torch.nn.functional.log_softmax(tx, dim=1))
    close(KF.gelu(kx, approximate="tanh"), torch.nn.functional.gelu(tx, approximate="tanh"))
    close(KF.dropout(kx, 0.3, training=False), torch.nn.functional.dropout(tx, 0.3, training=False))
    close(KF.max_pool2d(kx, 2, 2), torch.nn.functional.max_pool2d(tx, 2, 2))
    close(KF.avg_pool2d(kx, 3, stride=2, padding=1), torch.nn.functional.avg_pool2d(tx, 3, stride=2, padding=1))
    close(KF.pad(kx, (1, 2)), torch.nn.functional.pad(tx, (1, 2)))
    close(KF.normalize(kx, dim=1), torch.nn.functional.normalize(tx, dim=1))
    w = randn(4, 3, 3, 3, seed=3)
    close(KF.conv2d(kx, kiln.tensor(w), None, 1, 1), torch.nn.functional.conv2d(tx, torch.tensor(w), None, 1, 1))
    q, k, v = (randn(2, 2, 5, 4, seed=s) for s in (4, 5, 6))
    close(KF.scaled_dot_product_attention(kiln.tensor(q), kiln.tensor(k), kiln.tensor(v), is_causal=True),
          torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                                           is_causal=True))
    logits, target = randn(4, 5), np.array([0, 4, 2, 1])
    # ignore_index positionally after the deprecated size_average, as torch.
    close(KF.cross_entropy(kiln.tensor(logits), kiln.tensor(target), None, None, 4),
          torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(target), None, None, 4))
    with pytest.raises(TypeError, match="deprecated"):
        KF.mse_loss(kx, kx, True)


# --- nn.init and default initialisation ------------------------------------------------------
def _uniform_bound_check(t, bound):
    a = t.detach().numpy()
    assert np.abs(a).max() <= bound + 1e-7
    assert np.abs(a).max() > 0.8 * bound  # spread over the range, not a constant
    assert abs(a.std() - bound / math.sqrt(3)) < 0.15 * bound


def test_default_init_distributions_follow_torch_formulas():
    lin = knn.Linear(200, 300)
    _uniform_bound_check(lin.weight, 1 / math.sqrt(200))  # kaiming_uniform(a=sqrt(5)) bound = 1/sqrt(fan_in)
    _uniform_bound_check(lin.bias, 1 / math.sqrt(200))
    conv = knn.Conv2d(16, 32, 3)
    _uniform_bound_check(conv.weight, 1 / math.sqrt(16 * 9))
    convt = knn.ConvTranspose2d(16, 32, 3)  # fan_in from weight dim 1 (out_channels), as torch
    _uniform_bound_check(convt.weight, 1 / math.sqrt(32 * 9))
    emb = knn.Embedding(500, 64)
    assert abs(emb.weight.detach().numpy().std() - 1.0) < 0.05
    mha = knn.MultiheadAttention(64, 4)
    _uniform_bound_check(mha.in_proj_weight, math.sqrt(6 / (64 + 3 * 64)))
    assert np.all(mha.in_proj_bias.detach().numpy() == 0) and np.all(mha.out_proj.bias.detach().numpy() == 0)
    ln = knn.LayerNorm(7)
    assert np.all(ln.weight.detach().numpy() == 1) and np.all(ln.bias.detach().numpy() == 0)


def test_init_functions():
    t = kiln.empty(400, 300)
    knn.init.xavier_normal_(t, gain=2.0)
    assert abs(t.numpy().std() - 2.0 * math.sqrt(2 / 700)) < 0.01
    knn.init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(t.numpy().std() - math.sqrt(2 / 400)) < 0.005
    knn.init.trunc_normal_(t, mean=1.0, std=2.0, a=-1.0, b=2.0)
    a = t.numpy()
    assert a.min() >= -1.0 and a.max() <= 2.0 and a.min() < -0.95 and a.max() > 1.95
    knn.init.constant_(t, 0.25)
    assert np.all(t.numpy() == 0.25)
    for nl in ["linear", "relu", "tanh", "leaky_relu", "selu"]:
        assert knn.init.calculate_gain(nl) == pytest.approx(torch.nn.init.calculate_gain(nl))
    p = knn.Parameter(kiln.zeros(3, 3))
    knn.init.uniform_(p, -1, 1)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


def test_clip_grad_matches_torch():
    kp, tp = [], []
    for i, s in enumerate([(3, 4), (5,)]):
        a = randn(*s, seed=i)
        g = randn(*s, seed=10 + i) * 3
        k, t = knn.Parameter(kiln.tensor(a)), torch.nn.Parameter(torch.tensor(a))
        k.grad, t.grad = kiln.tensor(g), torch.tensor(g)
        kp.append(k)
        tp.append(t)
    kn = knn.utils.clip_grad_norm_(kp, 1.5)
    tn = torch.nn.utils.clip_grad_norm_(tp, 1.5)
    close(kn, tn)
    for k, t in zip(kp, tp):
        close(k.grad, t.grad)
    kn = knn.utils.clip_grad_norm_(kp, 0.5, norm_type=math.inf)
    tn = torch.nn.utils.clip_grad_norm_(tp, 0.5, norm_type=math.inf)
    close(kn, tn)
    knn.utils.clip_grad_value_(kp, 0.05)
    torch.nn.utils.clip_grad_value_(tp, 0.05)
    for k, t in zip(kp, tp):
        close(k.grad, t.grad)


# --- Module mechanics --------------------------------------------------------------------------
def _net(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.scale = nn.Parameter(kiln.ones(4) if nn is knn else torch.ones(4))
            self.register_buffer("steps", kiln.zeros(1) if nn is knn else torch.zeros(1))
            self.register_buffer("cache", kiln.zeros(2) if nn is knn else torch.zeros(2), persistent=False)
            self.plain = 3  # not registered

        def forward(self, x):
            return self.fc(x) * self.scale

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])
            self.head = nn.Sequential(OrderedDict(norm=nn.LayerNorm(4), out=nn.Linear(4, 2)))
            self.drop = nn.Dropout(0.1)
            self.tied = self.blocks[0].fc  # shared module: counted once

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return self.head(self.drop(x))

    return Net()


def test_registration_and_traversal_match_torch():
    torch.manual_seed(0)
    tn, kn = _net(torch.nn), _net(knn)
    assert [n for n, _ in kn.named_parameters()] == [n for n, _ in tn.named_parameters()]
    assert [n for n, _ in kn.named_buffers()] == [n for n, _ in tn.named_buffers()]
    assert [n for n, _ in kn.named_modules()] == [n for n, _ in tn.named_modules()]
    assert [n for n, _ in kn.named_children()] == [n for n, _ in tn.named_children()]
    assert list(kn.state_dict()) == list(tn.state_dict())
    assert [n for n, _ in kn.blocks[0].named_parameters(prefix="b", recurse=False)] == \
        [n for n, _ in tn.blocks[0].named_parameters(prefix="b", recurse=False)]
    assert len(list(kn.parameters())) == len(list(tn.parameters()))
    assert isinstance(kn.blocks[0].scale, knn.Parameter) and isinstance(kn.blocks[0].scale, kiln.Tensor)
    assert kn.get_submodule("head.out") is kn.head.out
    # Reassigning a parameter to a plain tensor is refused; to None clears it (as torch).
    with pytest.raises(TypeError):
        kn.head.out.bias = kiln.zeros(2)
    kn.head.out.bias = None
    assert "head.out.bias" not in kn.state_dict()
    del kn.blocks[1].scale
    assert "blocks.1.scale" not in kn.state_dict()


def test_module_before_init_and_missing_forward():
    class Bad(knn.Module):
        def __init__(self):
            self.w = knn.Parameter(kiln.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()
    with pytest.raises(NotImplementedError, match="forward"):
        knn.Module()(kiln.zeros(1))


def test_state_dict_round_trip_through_kiln_save_and_into_torch(tmp_path):
    torch.manual_seed(0)
    km = _net(knn)
    for b in km.blocks:
        b.steps.fill_(5.0)
    path = os.path.join(tmp_path, "net.safetensors")
    kiln.save(km.state_dict(), path)
    fresh = _net(knn)
    fresh.load_state_dict(kiln.load(path))
    for (n, a), (_, b) in zip(km.state_dict().items(), fresh.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)
    # torch reads the same file with the same keys and computes the same function.
    from safetensors.torch import load_file
    tm = _net(torch.nn)
    tm.load_state_dict(load_file(path))
    km.eval()
    tm.eval()
    x = randn(3, 4)
    close(km(kiln.tensor(x)), tm(torch.tensor(x)))


def test_load_state_dict_errors_and_non_strict():
    km = _net(knn)
    sd = km.state_dict()
    del sd["head.out.weight"]
    sd["extra.weight"] = kiln.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "head.out.weight"') as e:
        km.load_state_dict(sd)
    assert '"extra.weight"' in str(e.value)
    res = km.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["head.out.weight"] and res.unexpected_keys == ["extra.weight"]
    bad = km.state_dict()
    bad["head.out.bias"] = kiln.zeros(3)
    with pytest.raises(RuntimeError, match=r"size mismatch for head.out.bias.*\(3,\).*\(2,\)"):
        km.load_state_dict(bad, strict=False)


def test_train_eval_zero_grad_requires_grad_apply():
    km = _net(knn)
    assert km.training and km.head.norm.training
    km.eval()
    assert not any(m.training for m in km.modules())
    km.train()
    assert all(m.training for m in km.modules())
    km(kiln.randn(2, 4)).sum().backward()
    assert all(p.grad is not None for p in km.parameters())
    km.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in km.parameters())
    km.zero_grad()
    assert all(p.grad is None for p in km.parameters())
    km.requires_grad_(False)
    assert not any(p.requires_grad for p in km.parameters())
    seen, tseen = [], []
    km.apply(lambda m: seen.append(type(m).__name__))
    _net(torch.nn).apply(lambda m: tseen.append(type(m).__name__))
    assert seen == tseen


def test_to_dtype_keeps_parameter_identity():
    km = knn.Sequential(knn.Linear(3, 2), knn.BatchNorm1d(2))
    w = km[0].weight
    km.double()
    assert km[0].weight is w and w.dtype == kiln.float64
    assert km[1].running_mean.dtype == kiln.float64
    assert km[1].num_batches_tracked.dtype == kiln.int64  # integer buffers stay
    out = km(kiln.randn(4, 3, dtype=kiln.float64))
    assert out.dtype == kiln.float64
    km.bfloat16()
    assert w.dtype == kiln.bfloat16
    with pytest.raises(TypeError, match="floating point"):
        km.to(kiln.int32)
    km.to("cpu", dtype=kiln.float32)
    assert w.dtype == kiln.float32
    with pytest.raises(kiln.Error, match="cuda"):
        km.to("cuda")
    assert w.dtype == kiln.float32  # a failed move changes nothing


def test_sequential_and_containers_behave_like_torch():
    seq = knn.Sequential(knn.Linear(2, 3), knn.ReLU(), knn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], knn.Linear)
    sub = seq[1:]
    assert isinstance(sub, knn.Sequential) and len(sub) == 2 and sub[0] is seq[1]
    seq.append(knn.Sigmoid())
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    with pytest.raises(IndexError):
        seq[7]
    ml = knn.ModuleList([knn.ReLU()])
    ml.append(knn.Tanh()).extend([knn.GELU()])
    assert len(ml) == 3 and isinstance(ml[-1], knn.GELU)
    md = knn.ModuleDict({"a": knn.ReLU()})
    md["b"] = knn.Linear(1, 1)
    assert list(md.keys()) == ["a", "b"] and "b" in md
    assert [n for n, _ in md.named_parameters()] == ["b.weight", "b.bias"]
    pl = knn.ParameterList([kiln.zeros(2), knn.Parameter(kiln.ones(3))])
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"] and isinstance(pl[0], knn.Parameter)


def test_repr_matches_torch():
    torch.manual_seed(0)
    for make in [lambda nn: nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Dropout(0.2), nn.LayerNorm(3)),
                 lambda nn: nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
                 lambda nn: nn.ModuleList([nn.GELU(approximate="tanh"), nn.Embedding(5, 2, padding_idx=0)]),
                 lambda nn: nn.BatchNorm2d(4),
                 lambda nn: nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(3, 1), nn.AdaptiveAvgPool2d(1),
                                          nn.GroupNorm(2, 4), nn.RMSNorm(3), nn.LayerNorm(2, bias=False)),
                 lambda nn: nn.MultiheadAttention(4, 2),
                 lambda nn: nn.Sequential(nn.Softmax(1), nn.LeakyReLU(), nn.SiLU(), nn.Unflatten(1, (2, 3)),
                                          nn.ConvTranspose2d(2, 3, 3, output_padding=1, stride=2), nn.Hardtanh(),
                                          nn.Identity(), nn.CrossEntropyLoss(), nn.Conv1d(2, 2, 1)),
                 lambda nn: nn.Flatten()]:
        assert repr(make(knn)) == repr(make(torch.nn))
    assert repr(knn.Parameter(kiln.zeros(2))).startswith("Parameter containing:\ntensor(")
    assert knn.Linear.__module__ == "kiln.nn" and repr(type(knn.Linear(1, 1))) == "<class 'kiln.nn.Linear'>"
    assert repr(type(kiln.zeros(1))) == "<class 'kiln.Tensor'>" and repr(type(kiln.float32)) == "<class 'kiln.dtype'>"
    assert repr(knn.Parameter) == "<class 'kiln.nn.Parameter'>" and kiln.optim.AdamW.__module__ == "kiln.optim"


def test_deepcopy_like_torch():
    import copy
    for nn, lib in ((knn, kiln), (torch.nn, torch)):
        m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
        m[1].weight = m[0].weight
        m2 = copy.deepcopy(m)
        assert m2[0].weight is not m[0].weight and isinstance(m2[0].weight, nn.Parameter)
        assert m2[1].weight is m2[0].weight  # ties survive
        assert m2[0].weight.data_ptr() != m[0].weight.data_ptr() and m2[0].weight.requires_grad
        assert [n for n, _ in m2.named_parameters()] == [n for n, _ in m.named_parameters()]
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(kiln.ones(2, requires_grad=True) * 2)


# Functional wrappers not reached through a layer above: the same call (torch's argument
# positions and keywords) on both libraries, forward and input gradients.
FUNCTIONAL = [
    ("relu6", lambda F, x: F.relu6(x * 4)),
    ("hardtanh", lambda F, x: F.hardtanh(x, -0.5, 0.7)),
    ("hardsigmoid", lambda F, x: F.hardsigmoid(x * 3)),
    ("leaky_relu", lambda F, x: F.leaky_relu(x, 0.3)),
    ("silu", lambda F, x: F.silu(x)),
    ("sigmoid-tanh", lambda F, x: F.sigmoid(x) + F.tanh(x)),
    ("rms_norm-noweight", lambda F, x: F.rms_norm(x, (5,))),
    ("layer_norm", lambda F, x: F.layer_norm(x, [4, 5], eps=1e-3)),
    ("group_norm", lambda F, x: F.group_norm(x, 2)),
    ("instance_norm", lambda F, x: F.instance_norm(x)),
    ("avg_pool1d", lambda F, x: F.avg_pool1d(x, 2, 1, 1, count_include_pad=False)),
    ("max_pool1d", lambda F, x: F.max_pool1d(x, 3, stride=1, padding=1)),
    ("cosine_similarity", lambda F, x: F.cosine_similarity(x, x.flip(0), dim=1)),
    ("normalize", lambda F, x: F.normalize(x, p=1.0, dim=-1)),
    ("pad-2d", lambda F, x: F.pad(x, (1, 0, 2, 1), value=0.5)),
    ("dropout-eval", lambda F, x: F.dropout(x, 0.9, False)),
    ("softmax-dtype", lambda F, x: F.softmax(x, 1, dtype=x.dtype)),
]


@pytest.mark.parametrize("name,call", FUNCTIONAL, ids=[c[0] for c in FUNCTIONAL])
def test_functional_matches_torch(name, call):
    a = randn(2, 4, 5, seed=3)
    tx, kx = torch.tensor(a, requires_grad=True), kiln.tensor(a, requires_grad=True)
    tout, kout = call(torch.nn.functional, tx), call(KF, kx)
    close(kout, tout)
    w = randn(*tout.shape, seed=4)
    (tout * torch.tensor(w)).sum().backward()
    (kout * kiln.tensor(w)).sum().backward()
    close(kx.grad, tx.grad)


def test_functional_unfold_fold_one_hot_conv3d():
    x = randn(1, 2, 5, 6)
    tx, kx = torch.tensor(x), kiln.tensor(x)
    close(KF.unfold(kx, (2, 3), padding=1, stride=2), torch.nn.functional.unfold(tx, (2, 3), padding=1, stride=2))
    cols = torch.nn.functional.unfold(tx, 2)
    close(KF.fold(to_kiln(cols), (5, 6), 2), torch.nn.functional.fold(cols, (5, 6), 2))
    idx = np.array([0, 3, 1])
    assert KF.one_hot(kiln.tensor(idx), 5).tolist() == torch.nn.functional.one_hot(torch.tensor(idx), 5).tolist()
    v, w = randn(1, 2, 4, 4, 4), randn(3, 2, 2, 2, 2, seed=1)
    close(KF.conv3d(kiln.tensor(v), kiln.tensor(w), stride=2),
          torch.nn.functional.conv3d(torch.tensor(v), torch.tensor(w), stride=2))
    with pytest.raises(TypeError, match="dim must be given"):
        KF.softmax(kx)
    with pytest.raises(ValueError, match="between 0 and 1"):
        KF.dropout(kx, 1.5)


def test_forward_hooks_like_torch():
    for nn, lib in ((knn, kiln), (torch.nn, torch)):
        m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
        seen = []
        h1 = m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
        h2 = m[0].register_forward_hook(lambda mod, args, out: seen.append(tuple(out.shape)) or out + 1)
        out = m(lib.ones(4, 3))
        assert seen == [(4, 2)]
        # input zeroed by the pre-hook, then +1 on the linear output: relu(bias + 1)
        np.testing.assert_allclose(out.detach().numpy(), np.maximum(m[0].bias.detach().numpy() + 1, 0)[None].repeat(4, 0),
                                   rtol=1e-6)
        h1.remove()
        h2.remove()
        m(lib.ones(1, 3))
        assert seen == [(4, 2)]
