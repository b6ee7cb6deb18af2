"""kiln.nn's further layers and nn.functional against PyTorch: each module gets the torch
module's weights through load_state_dict (so names and shapes must be torch's), then outputs and
the gradients of inputs and parameters must match torch's within float32 tolerance."""
import math

import numpy as np
import pytest
import torch

import kiln
import kiln.nn as knn
import kiln.nn.functional as KF
from test_nn import close, copy_weights


@pytest.fixture(scope="module", autouse=True)
def _torch_one_thread():
    """torch's CPU recurrent kernels crawl when their threads compete on a loaded machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class Const:
    """An input that gets no gradient (targets, masks, indices)."""

    def __init__(self, array):
        self.array = array


def _pair(a):
    """The same input for torch and kiln; float arrays require grad."""
    if isinstance(a, Const):
        return torch.tensor(a.array), kiln.tensor(a.array)
    return torch.tensor(a, requires_grad=True), kiln.tensor(a, requires_grad=True)


def run_both(tfn, kfn, inputs, rtol=1e-4, atol=1e-5, tmod=None, kmod=None):
    """Calls tfn/kfn on the same inputs, compares outputs, then gradients of inputs and parameters."""
    pairs = [_pair(a) for a in inputs]
    tout, kout = tfn(*[t for t, _ in pairs]), kfn(*[k for _, k in pairs])
    close(kout, tout, rtol, atol)
    if not tout.requires_grad:
        return
    w = randn(*tout.shape, seed=99)
    (tout * torch.tensor(w)).sum().backward()
    (kout * kiln.tensor(w)).sum().backward()
    for t, k in pairs:
        if t.requires_grad:
            close(k.grad, t.grad, rtol, atol)
    if tmod is not None:
        tparams, kparams = dict(tmod.named_parameters()), dict(kmod.named_parameters())
        assert list(kparams) == list(tparams)
        for n in tparams:
            close(kparams[n].grad, tparams[n].grad, rtol, atol)


def check_module(make, inputs, **tol):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    copy_weights(tm, km)
    run_both(tm, km, inputs, tmod=tm, kmod=km, **tol)
    return tm, km


def signs(*shape, seed=0):
    return Const(np.where(randn(*shape, seed=seed) > 0, 1.0, -1.0).astype(np.float32))


def classes(n, c, seed=0):
    return Const(np.random.default_rng(seed).integers(0, c, n).astype(np.int64))


def probs(*shape, seed=0):
    return Const((1 / (1 + np.exp(-randn(*shape, seed=seed)))).astype(np.float32))


X = randn(3, 4, 5)
X4 = randn(2, 3, 6, 6, seed=1)
X5 = randn(2, 2, 5, 6, 6, seed=2)

def _trained_instance_norm(nn):
    """An InstanceNorm2d with running statistics from two training batches."""
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3)
    M = torch if nn is torch.nn else kiln
    for seed in (5, 6):
        m(M.tensor(randn(4, 3, 5, 5, seed=seed) * 2 + 1))
    return m


MODULES = [
    ("ELU", lambda nn: nn.ELU(0.7), [X]),
    ("CELU", lambda nn: nn.CELU(0.5), [X]),
    ("SELU", lambda nn: nn.SELU(), [X]),
    ("GLU", lambda nn: nn.GLU(1), [randn(3, 6, 2)]),
    ("Hardshrink", lambda nn: nn.Hardshrink(0.6), [X]),
    ("Hardsigmoid", lambda nn: nn.Hardsigmoid(), [X * 4]),
    ("Hardswish", lambda nn: nn.Hardswish(), [X * 4]),
    ("LogSigmoid", lambda nn: nn.LogSigmoid(), [X * 5]),
    ("Mish", lambda nn: nn.Mish(), [X]),
    ("PReLU", lambda nn: nn.PReLU(), [X]),
    ("PReLU-channels", lambda nn: nn.PReLU(4, init=0.1), [X]),
    ("RReLU-eval", lambda nn: nn.RReLU(0.1, 0.3).eval(), [X]),
    ("Softplus", lambda nn: nn.Softplus(beta=2, threshold=3), [X * 3]),
    ("Softshrink", lambda nn: nn.Softshrink(0.4), [X]),
    ("Softsign", lambda nn: nn.Softsign(), [X]),
    ("Tanhshrink", lambda nn: nn.Tanhshrink(), [X]),
    ("Threshold", lambda nn: nn.Threshold(0.1, -2.0), [X]),
    ("Softmin", lambda nn: nn.Softmin(dim=1), [X]),
    ("Softmax2d", lambda nn: nn.Softmax2d(), [X4]),
    ("ConstantPad1d", lambda nn: nn.ConstantPad1d((1, 2), 0.5), [X]),
    ("ConstantPad2d", lambda nn: nn.ConstantPad2d(1, -1.0), [X4]),
    ("ConstantPad3d", lambda nn: nn.ConstantPad3d((1, 0, 2, 1, 0, 1), 3.0), [X5]),
    ("ZeroPad1d", lambda nn: nn.ZeroPad1d(2), [X]),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), [X4]),
    ("ZeroPad3d", lambda nn: nn.ZeroPad3d(1), [X5]),
    ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((2, 1)), [X]),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(2), [X4]),
    ("ReflectionPad3d", lambda nn: nn.ReflectionPad3d(1), [X5]),
    ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d(3), [X]),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((1, 0, 2, 3)), [X4]),
    ("ReplicationPad3d", lambda nn: nn.ReplicationPad3d(2), [X5]),
    ("CircularPad1d", lambda nn: nn.CircularPad1d(2), [X]),
    ("CircularPad2d", lambda nn: nn.CircularPad2d((1, 2, 2, 1)), [X4]),
    ("CircularPad3d", lambda nn: nn.CircularPad3d(1), [X5]),
    ("Dropout1d-eval", lambda nn: nn.Dropout1d(0.3).eval(), [X]),
    ("Dropout2d-eval", lambda nn: nn.Dropout2d(0.3).eval(), [X4]),
    ("Dropout3d-eval", lambda nn: nn.Dropout3d(0.3).eval(), [X5]),
    ("AlphaDropout-eval", lambda nn: nn.AlphaDropout(0.3).eval(), [X]),
    ("PairwiseDistance", lambda nn: nn.PairwiseDistance(p=1.5, keepdim=True), [randn(4, 6), randn(4, 6, seed=3)]),
    ("CosineSimilarity", lambda nn: nn.CosineSimilarity(dim=-1), [randn(4, 6), randn(4, 6, seed=3)]),
    ("PixelShuffle", lambda nn: nn.PixelShuffle(2), [randn(2, 8, 3, 3)]),
    ("PixelUnshuffle", lambda nn: nn.PixelUnshuffle(2), [randn(2, 3, 4, 6)]),
    ("ChannelShuffle", lambda nn: nn.ChannelShuffle(3), [randn(2, 6, 2, 2)]),
    ("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(4), [X]),
    ("InstanceNorm2d-affine", lambda nn: nn.InstanceNorm2d(3, affine=True), [X4]),
    ("InstanceNorm3d", lambda nn: nn.InstanceNorm3d(2, eps=1e-3), [X5]),
    ("InstanceNorm2d-nobias", lambda nn: nn.InstanceNorm2d(3, affine=True, bias=False), [X4]),
    ("InstanceNorm2d-running-eval", lambda nn: _trained_instance_norm(nn).eval(), [X4]),
    ("InstanceNorm1d-unbatched", lambda nn: nn.InstanceNorm1d(4, affine=True), [randn(4, 7)]),
    ("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=2.0), [X4]),
    ("LocalResponseNorm-3d", lambda nn: nn.LocalResponseNorm(2), [X]),
    ("BatchNorm3d", lambda nn: nn.BatchNorm3d(2), [X5]),
    ("Upsample-nearest", lambda nn: nn.Upsample(scale_factor=2), [X4]),
    ("Upsample-bilinear", lambda nn: nn.Upsample(size=(9, 7), mode="bilinear"), [X4]),
    ("Upsample-bilinear-ac", lambda nn: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True), [X4]),
    ("Upsample-linear", lambda nn: nn.Upsample(scale_factor=3, mode="linear"), [X]),
    ("UpsamplingNearest2d", lambda nn: nn.UpsamplingNearest2d(size=(8, 9)), [X4]),
    ("UpsamplingBilinear2d", lambda nn: nn.UpsamplingBilinear2d(scale_factor=2), [X4]),
    ("Unfold", lambda nn: nn.Unfold(3, padding=1, stride=2), [X4]),
    ("Fold", lambda nn: nn.Fold((4, 5), 2), [randn(2, 12, 12)]),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(3), [randn(2, 3, 7)]),
    ("AdaptiveAvgPool3d", lambda nn: nn.AdaptiveAvgPool3d((2, 4, 3)), [X5]),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(4), [randn(2, 3, 9)]),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((4, None)), [X4]),
    ("AdaptiveMaxPool3d", lambda nn: nn.AdaptiveMaxPool3d(2), [X5]),
    ("AvgPool3d", lambda nn: nn.AvgPool3d(2), [X5]),
    ("AvgPool3d-pad-ceil", lambda nn: nn.AvgPool3d((3, 2, 3), stride=2, padding=1, ceil_mode=True,
                                                   count_include_pad=False), [X5]),
    ("MaxPool3d", lambda nn: nn.MaxPool3d(2), [X5]),
    ("MaxPool3d-stride-pad", lambda nn: nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True), [X5]),
    ("LPPool1d", lambda nn: nn.LPPool1d(2, 3, stride=2), [np.abs(X) + 0.1]),
    ("LPPool2d", lambda nn: nn.LPPool2d(3, 2), [np.abs(X4) + 0.1]),
    ("LPPool3d", lambda nn: nn.LPPool3d(2, 2), [np.abs(X5) + 0.1]),
    ("Bilinear", lambda nn: nn.Bilinear(4, 5, 3), [randn(6, 4), randn(6, 5, seed=4)]),
    ("Bilinear-3d-nobias", lambda nn: nn.Bilinear(4, 5, 3, bias=False), [randn(2, 6, 4), randn(2, 6, 5, seed=4)]),
    ("Conv3d", lambda nn: nn.Conv3d(2, 3, (2, 3, 3), stride=(1, 2, 1), padding=1), [X5]),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(4, 3, 3, stride=2, padding=1, output_padding=1), [X]),
    ("ConvTranspose1d-groups", lambda nn: nn.ConvTranspose1d(4, 6, 2, groups=2, dilation=2), [X]),
    # losses
    ("MarginRankingLoss", lambda nn: nn.MarginRankingLoss(0.3), [randn(8), randn(8, seed=2), signs(8)]),
    ("HingeEmbeddingLoss", lambda nn: nn.HingeEmbeddingLoss(0.8, reduction="sum"), [randn(4, 5), signs(4, 5)]),
    ("SoftMarginLoss", lambda nn: nn.SoftMarginLoss(), [randn(4, 5), signs(4, 5)]),
    ("MultiLabelSoftMarginLoss", lambda nn: nn.MultiLabelSoftMarginLoss(), [randn(4, 5), probs(4, 5)]),
    ("MultiLabelSoftMarginLoss-w", lambda nn: nn.MultiLabelSoftMarginLoss(weight=torch.arange(5.0) if nn is torch.nn
                                                                          else kiln.arange(5.0), reduction="none"),
     [randn(4, 5), probs(4, 5)]),
    ("CosineEmbeddingLoss", lambda nn: nn.CosineEmbeddingLoss(0.2), [randn(6, 4), randn(6, 4, seed=5), signs(6)]),
    ("TripletMarginLoss", lambda nn: nn.TripletMarginLoss(0.5), [randn(5, 4), randn(5, 4, seed=6), randn(5, 4, seed=7)]),
    ("TripletMarginLoss-swap-p1", lambda nn: nn.TripletMarginLoss(2.0, p=1, swap=True, reduction="none"),
     [randn(5, 4), randn(5, 4, seed=6), randn(5, 4, seed=7)]),
    ("TripletMarginWithDistanceLoss", lambda nn: nn.TripletMarginWithDistanceLoss(margin=0.7),
     [randn(5, 4), randn(5, 4, seed=6), randn(5, 4, seed=7)]),
    ("PoissonNLLLoss", lambda nn: nn.PoissonNLLLoss(), [randn(4, 5), Const(np.abs(randn(4, 5, seed=3)) * 3)]),
    ("PoissonNLLLoss-full-nolog", lambda nn: nn.PoissonNLLLoss(log_input=False, full=True),
     [np.abs(randn(4, 5)) + 0.2, Const(np.round(np.abs(randn(4, 5, seed=3)) * 3))]),
    ("GaussianNLLLoss", lambda nn: nn.GaussianNLLLoss(), [randn(4, 3), Const(randn(4, 3, seed=2)),
                                                          np.abs(randn(4, 3, seed=3)) + 0.1]),
    ("GaussianNLLLoss-full-var1", lambda nn: nn.GaussianNLLLoss(full=True, reduction="sum"),
     [randn(4, 3), Const(randn(4, 3, seed=2)), np.abs(randn(4, seed=3)) + 0.1]),
    ("MultiMarginLoss", lambda nn: nn.MultiMarginLoss(), [randn(6, 5), classes(6, 5)]),
    ("MultiMarginLoss-p2-w", lambda nn: nn.MultiMarginLoss(p=2, margin=0.5, weight=(torch if nn is torch.nn else kiln)
                                                           .tensor([1.0, 2.0, 0.5, 1.5, 1.0])),
     [randn(6, 5), classes(6, 5)]),
    ("MultiLabelMarginLoss", lambda nn: nn.MultiLabelMarginLoss(),
     [randn(3, 4), Const(np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 2, 2]], dtype=np.int64))]),
    ("NLLLoss2d", lambda nn: nn.NLLLoss(), [randn(2, 3, 4, 4), Const(np.random.default_rng(0).integers(0, 3, (2, 4, 4)))]),
]


@pytest.mark.parametrize("name,make,inputs", MODULES, ids=[c[0] for c in MODULES])
def test_module_matches_torch(name, make, inputs):
    check_module(make, inputs)


FUNCTIONS = [
    ("threshold", lambda F: lambda x: F.threshold(x, 0.2, 5.0), [X]),
    ("celu", lambda F: lambda x: F.celu(x, 2.0), [X]),
    ("pdist", lambda F: lambda x: F.pdist(x, 1.5), [randn(5, 3)]),
    ("bilinear", lambda F: F.bilinear, [randn(3, 4), randn(3, 2), randn(5, 4, 2), randn(5)]),
    ("conv_tbc", lambda F: lambda x, w, b: F.conv_tbc(x, w, b, 1), [randn(7, 2, 3), randn(3, 3, 4), randn(4)]),
    ("conv_transpose1d", lambda F: lambda x, w: F.conv_transpose1d(x, w, stride=3), [randn(2, 3, 5), randn(3, 2, 4)]),
    ("affine_grid-2d", lambda F: lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=False), [randn(2, 2, 3)]),
    ("affine_grid-3d-ac", lambda F: lambda t: F.affine_grid(t, [2, 1, 3, 4, 2], align_corners=True), [randn(2, 3, 4)]),
    ("interpolate-trilinear", lambda F: lambda x: F.interpolate(x, scale_factor=(1.5, 2, 1), mode="trilinear"), [X5]),
    ("interpolate-recompute", lambda F: lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear",
                                                                recompute_scale_factor=True), [X4]),
    ("upsample_bilinear", lambda F: lambda x: F.upsample_bilinear(x, scale_factor=2), [X4]),
    ("upsample_nearest", lambda F: lambda x: F.upsample_nearest(x, size=(3, 8)), [X4]),
    ("embedding_bag-offsets-sum", lambda F: lambda w: F.embedding_bag(
        (torch if F is torch.nn.functional else kiln).tensor([1, 2, 4, 5, 4, 3, 2, 9]), w,
        (torch if F is torch.nn.functional else kiln).tensor([0, 4]), mode="sum"), [randn(10, 3)]),
    ("embedding_bag-2d-max", lambda F: lambda w: F.embedding_bag(
        (torch if F is torch.nn.functional else kiln).tensor([[1, 2, 4], [5, 4, 3]]), w, mode="max"), [randn(10, 3)]),
    ("lp_pool2d-p1", lambda F: lambda x: F.lp_pool2d(x, 1.0, 2), [np.abs(X4)]),
    ("softmin-dtype", lambda F: lambda x: F.softmin(x, 0), [X]),
    ("relu_", lambda F: lambda x: F.relu_(x * 1.0), [X]),
    ("native_channel_shuffle", lambda F: lambda x: F.native_channel_shuffle(x, 2), [Const(randn(2, 4, 3))]),
    ("multi_margin_loss-1d", lambda F: lambda x: F.multi_margin_loss(x, (torch if F is torch.nn.functional else kiln)
                                                                     .tensor(2)), [randn(5)]),
    ("dropout2d-p0", lambda F: lambda x: F.dropout2d(x, 0.0), [X4]),
    ("grid_sample-bilinear-zeros", lambda F: lambda x, g: F.grid_sample(x, g, align_corners=False),
     [X4, randn(2, 4, 5, 2, seed=3) * 0.8]),
    ("grid_sample-bilinear-border-ac", lambda F: lambda x, g: F.grid_sample(x, g, padding_mode="border",
                                                                             align_corners=True),
     [X4, randn(2, 3, 4, 2, seed=4) * 1.2]),
    ("grid_sample-nearest", lambda F: lambda x, g: F.grid_sample(x, g, mode="nearest", align_corners=False),
     [X4, Const(randn(2, 3, 4, 2, seed=5) * 0.9)]),
    ("grid_sample-affine", lambda F: lambda x, t: F.grid_sample(x, F.affine_grid(t, [2, 3, 5, 4], align_corners=False),
                                                                align_corners=False),
     [X4, randn(2, 2, 3, seed=6) * 0.5]),
]


@pytest.mark.parametrize("name,make,inputs", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_function_matches_torch(name, make, inputs):
    run_both(make(torch.nn.functional), make(KF), inputs)


INPLACE = [
    ("elu_", lambda F, x: F.elu_(x, 0.3)),
    ("celu_", lambda F, x: F.celu_(x, 1.5)),
    ("selu_", lambda F, x: F.selu_(x)),
    ("leaky_relu_", lambda F, x: F.leaky_relu_(x, 0.3)),
    ("threshold_", lambda F, x: F.threshold_(x, 0.0, 1.0)),
    ("rrelu_", lambda F, x: F.rrelu_(x)),
    ("hardtanh_", lambda F, x: F.hardtanh_(x, -0.5, 0.5)),
    ("relu_", lambda F, x: F.relu_(x)),
    ("hardswish-inplace", lambda F, x: F.hardswish(x, inplace=True)),
    ("mish-inplace", lambda F, x: F.mish(x, inplace=True)),
    ("ELU-inplace", lambda F, x: (torch.nn if F is torch.nn.functional else knn).ELU(inplace=True)(x)),
]


@pytest.mark.parametrize("name,call", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_forms_write_their_input(name, call):
    t, k = torch.tensor(X), kiln.tensor(X)
    tout, kout = call(torch.nn.functional, t), call(KF, k)
    assert kout is k
    close(k, t)
    close(kout, tout)


@pytest.mark.parametrize("name,spatial", [("Dropout1d", 1), ("Dropout2d", 2), ("Dropout3d", 3)])
def test_channel_dropout_zeroes_whole_channels(name, spatial):
    d = getattr(knn, name)(0.5)
    x = kiln.ones(*([8, 50] + [3] * spatial))
    y = d(x).numpy().reshape(8, 50, -1)
    per_channel = y.max(-1)
    assert np.all(y.min(-1) == per_channel)  # each channel all kept or all dropped
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert 0.35 < (per_channel != 0).mean() < 0.65
    unbatched = d(kiln.ones(*([50] + [3] * spatial))).numpy().reshape(50, -1)
    assert np.all(unbatched.min(-1) == unbatched.max(-1))


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_keeps_zero_mean_unit_variance(name):
    kiln.manual_seed(0)
    x = kiln.randn(400, 64, 2, 2)
    y = getattr(knn, name)(0.3)(x).numpy()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05
    # dropped units all take one value: alpha' = -selu's scale * alpha, shifted and scaled as torch
    a = 1 / math.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7)
    dropped = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.3
    frac = np.isclose(y, dropped, atol=1e-6).mean()
    assert 0.25 < frac < 0.35


def test_rrelu_training_slopes_within_bounds():
    x = -kiln.ones(5000)
    y = -KF.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert y.min() >= 0.1 and y.max() <= 0.3 and y.std() > 0.03
    np.testing.assert_allclose(KF.rrelu(x, 0.1, 0.3).numpy(), -0.2, rtol=1e-6)


def test_gumbel_softmax_soft_and_hard():
    kiln.manual_seed(0)
    logits = kiln.tensor(randn(6, 5), requires_grad=True)
    soft = KF.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().sum(-1).numpy(), 1.0, rtol=1e-5)
    hard = KF.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert np.all(h.sum(-1) == 1) and set(np.unique(h)) == {0.0, 1.0}
    (hard * kiln.tensor(randn(6, 5, seed=1))).sum().backward()
    assert np.abs(logits.grad.numpy()).sum() > 0  # straight-through: the soft sample's gradient


def test_embedding_bag_module_matches_torch():
    torch.manual_seed(0)
    tm, km = torch.nn.EmbeddingBag(10, 3, mode="sum"), knn.EmbeddingBag(10, 3, mode="sum")
    copy_weights(tm, km)
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 5])
    close(km(kiln.tensor(idx), kiln.tensor(off)), tm(torch.tensor(idx), torch.tensor(off)))


def test_parameter_dict_and_container():
    pd = knn.ParameterDict({"a": kiln.ones(2), "b": knn.Parameter(kiln.zeros(3))})
    pd["c"] = kiln.ones(1)
    assert list(pd) == ["a", "b", "c"] and len(pd) == 3 and "b" in pd
    assert isinstance(pd["a"], knn.Parameter) and pd["a"].requires_grad
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    tpd = torch.nn.ParameterDict({"a": torch.ones(2), "b": torch.zeros(3), "c": torch.ones(1)})
    assert list(pd.state_dict()) == list(tpd.state_dict())
    assert pd.pop("a").shape == (2,) and list(pd.keys()) == ["b", "c"]
    c = knn.Container(lin=knn.Linear(2, 3))
    assert [n for n, _ in c.named_parameters()] == ["lin.weight", "lin.bias"]


def test_factory_kwargs_and_has_torch_function():
    for kw in ({}, {"dtype": "x"}, {"device": "cpu", "factory_kwargs": {"dtype": 1}}):
        assert knn.factory_kwargs(kw) == torch.nn.factory_kwargs(kw)
    with pytest.raises(TypeError, match="unexpected kwargs"):
        knn.factory_kwargs({"bogus": 1})
    with pytest.raises(TypeError, match="specified twice"):
        knn.factory_kwargs({"dtype": 1, "factory_kwargs": {"dtype": 2}})
    assert KF.has_torch_function((kiln.ones(1),)) is False
    assert KF.GRID_SAMPLE_INTERPOLATION_MODES == torch.nn.functional.GRID_SAMPLE_INTERPOLATION_MODES
    assert KF.GRID_SAMPLE_PADDING_MODES == torch.nn.functional.GRID_SAMPLE_PADDING_MODES


def test_reprs_read_as_torch():
    for make in (lambda nn: nn.ELU(0.5), lambda nn: nn.Softplus(2, 10), lambda nn: nn.ReflectionPad2d(1),
                 lambda nn: nn.ConstantPad1d(2, 1.5), lambda nn: nn.ZeroPad2d(1), lambda nn: nn.PixelShuffle(2),
                 lambda nn: nn.Upsample(scale_factor=2), lambda nn: nn.InstanceNorm2d(3),
                 lambda nn: nn.Bilinear(2, 3, 4), lambda nn: nn.AdaptiveMaxPool2d(3), lambda nn: nn.GLU(),
                 lambda nn: nn.Hardshrink(), lambda nn: nn.LocalResponseNorm(2), lambda nn: nn.Threshold(0.1, 2.0),
                 lambda nn: nn.PReLU(), lambda nn: nn.MaxPool3d(2), lambda nn: nn.LPPool2d(2, 3)):
        assert repr(make(knn)) == repr(make(torch.nn))


# --- recurrent layers ----------------------------------------------------------------------------
def _flat(out):
    """(output, h_n) or (output, (h_n, c_n)) as a flat list."""
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


RNNS = [
    ("RNN", lambda nn: nn.RNN(4, 5), (6, 3, 4), None),
    ("RNN-relu-2layer-bi", lambda nn: nn.RNN(4, 5, 2, nonlinearity="relu", bidirectional=True), (6, 3, 4), "h"),
    ("RNN-nobias-batchfirst", lambda nn: nn.RNN(4, 5, bias=False, batch_first=True), (3, 6, 4), "h"),
    ("LSTM", lambda nn: nn.LSTM(4, 5), (6, 3, 4), None),
    ("LSTM-2layer-bi-batchfirst", lambda nn: nn.LSTM(4, 5, 2, batch_first=True, bidirectional=True), (3, 6, 4), "hc"),
    ("LSTM-proj", lambda nn: nn.LSTM(4, 6, 2, proj_size=3), (5, 2, 4), "hc"),
    ("LSTM-proj-bi-nobias", lambda nn: nn.LSTM(4, 6, proj_size=2, bias=False, bidirectional=True), (5, 2, 4), None),
    ("LSTM-dropout-eval", lambda nn: nn.LSTM(4, 5, 3, dropout=0.5).eval(), (5, 2, 4), None),
    ("LSTM-unbatched", lambda nn: nn.LSTM(4, 5, 2), (6, 4), "hc"),
    ("GRU", lambda nn: nn.GRU(4, 5), (6, 3, 4), None),
    ("GRU-3layer-bi-h0", lambda nn: nn.GRU(4, 5, 3, bidirectional=True), (4, 2, 4), "h"),
    ("GRU-batchfirst-nobias", lambda nn: nn.GRU(4, 5, 2, bias=False, batch_first=True), (2, 4, 4), None),
    ("GRU-unbatched", lambda nn: nn.GRU(4, 5), (6, 4), "h"),
]


def _initial_states(m, shape, which):
    batched = len(shape) == 3
    n = shape[0 if m.batch_first else 1] if batched else None
    layers = m.num_layers * (2 if m.bidirectional else 1)
    hs = m.proj_size or m.hidden_size
    lead = [layers] + ([n] if batched else [])
    out = [randn(*lead, hs, seed=11)]
    if which == "hc":
        out.append(randn(*lead, m.hidden_size, seed=12))
    return out


@pytest.mark.parametrize("name,make,shape,states", RNNS, ids=[c[0] for c in RNNS])
def test_recurrent_layer_matches_torch(name, make, shape, states):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    assert [(k, tuple(v.shape)) for k, v in km.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    copy_weights(tm, km)
    arrays = [randn(*shape)] + (_initial_states(tm, shape, states) if states else [])
    pairs = [_pair(a) for a in arrays]
    call = lambda m, xs: m(xs[0]) if len(xs) == 1 else m(xs[0], xs[1] if len(xs) == 2 else tuple(xs[1:]))  # noqa
    touts = _flat(call(tm, [t for t, _ in pairs]))
    kouts = _flat(call(km, [k for _, k in pairs]))
    assert len(kouts) == len(touts)
    tloss, kloss = 0, 0
    for i, (k, t) in enumerate(zip(kouts, touts)):
        close(k, t)
        w = randn(*t.shape, seed=20 + i)
        tloss = tloss + (t * torch.tensor(w)).sum()
        kloss = kloss + (k * kiln.tensor(w)).sum()
    tloss.backward()
    kloss.backward()
    for t, k in pairs:
        close(k.grad, t.grad)
    for (n, kp), (_, tp) in zip(km.named_parameters(), tm.named_parameters()):
        close(kp.grad, tp.grad)


def test_recurrent_init_and_state_dict_into_torch():
    km = knn.LSTM(3, 4, 2, bidirectional=True)
    bound = 1 / math.sqrt(4)
    for p in km.parameters():
        v = p.detach().numpy()
        assert v.min() >= -bound and v.max() <= bound and v.std() > bound / 4
    tm = torch.nn.LSTM(3, 4, 2, bidirectional=True)
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in km.state_dict().items()})
    x = randn(5, 2, 3)
    close(km(kiln.tensor(x))[0], tm(torch.tensor(x))[0])
    assert repr(km) == repr(tm)
    km.flatten_parameters()
    assert len(km.all_weights) == 4 and len(km.all_weights[0]) == 4


def test_recurrent_dropout_between_layers_only_in_training():
    kiln.manual_seed(0)
    m = knn.GRU(4, 8, 2, dropout=0.5)
    x = kiln.tensor(randn(5, 3, 4))
    a, b = m(x)[0], m(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # masks differ between calls
    m.eval()
    np.testing.assert_array_equal(m(x)[0].detach().numpy(), m(x)[0].detach().numpy())
    one = knn.GRU(4, 8, 1, dropout=0.5)  # one layer: no dropout at all (torch warns)
    np.testing.assert_array_equal(one(x)[0].detach().numpy(), one(x)[0].detach().numpy())


CELLS = [
    ("RNNCell", lambda nn: nn.RNNCell(4, 5), False),
    ("RNNCell-relu-nobias", lambda nn: nn.RNNCell(4, 5, bias=False, nonlinearity="relu"), True),
    ("LSTMCell", lambda nn: nn.LSTMCell(4, 5), True),
    ("LSTMCell-nostate", lambda nn: nn.LSTMCell(4, 5), False),
    ("GRUCell", lambda nn: nn.GRUCell(4, 5), True),
    ("GRUCell-nobias", lambda nn: nn.GRUCell(4, 5, bias=False), False),
]


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("name,make,with_state", CELLS, ids=[c[0] for c in CELLS])
def test_cell_matches_torch(name, make, with_state, batched):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    copy_weights(tm, km)
    lead = (3,) if batched else ()
    arrays = [randn(*lead, 4)]
    if with_state:
        arrays += [randn(*lead, 5, seed=1)] + ([randn(*lead, 5, seed=2)] if "LSTM" in name else [])
    pairs = [_pair(a) for a in arrays]

    def call(m, xs):
        if len(xs) == 1:
            return m(xs[0])
        return m(xs[0], tuple(xs[1:]) if len(xs) == 3 else xs[1])
    touts, kouts = _flat(call(tm, [t for t, _ in pairs])), _flat(call(km, [k for _, k in pairs]))
    tl = sum((t * torch.tensor(randn(*t.shape, seed=5 + i))).sum() for i, t in enumerate(touts))
    kl = sum((k * kiln.tensor(randn(*k.shape, seed=5 + i))).sum() for i, k in enumerate(kouts))
    for k, t in zip(kouts, touts):
        close(k, t)
    tl.backward()
    kl.backward()
    for t, k in pairs:
        close(k.grad, t.grad)
    for (_, kp), (_, tp) in zip(km.named_parameters(), tm.named_parameters()):
        close(kp.grad, tp.grad)
    assert repr(km) == repr(tm)


# --- attention and Transformer layers ------------------------------------------------------------
def _lib(nn):
    return torch if nn is torch.nn else kiln


MHA = [
    ("kdim-vdim", lambda nn: nn.MultiheadAttention(8, 2, kdim=5, vdim=3), [(4, 2, 8), (6, 2, 5), (6, 2, 3)], {}),
    ("bias-kv-zero-attn", lambda nn: nn.MultiheadAttention(8, 4, add_bias_kv=True, add_zero_attn=True,
                                                           batch_first=True), [(2, 4, 8), (2, 5, 8), (2, 5, 8)],
     {"key_padding_mask": Const(np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], dtype=bool)),
      "attn_mask": Const(np.triu(np.ones((4, 5), dtype=bool), 2))}),
    ("float-mask-per-head", lambda nn: nn.MultiheadAttention(6, 3), [(4, 2, 6), (5, 2, 6), (5, 2, 6)],
     {"attn_mask": Const(randn(6, 4, 5, seed=8)), "average_attn_weights": False}),
    ("unbatched", lambda nn: nn.MultiheadAttention(6, 2, kdim=4, vdim=4), [(4, 6), (5, 4), (5, 4)],
     {"key_padding_mask": Const(np.array([0, 1, 0, 0, 1], dtype=bool))}),
]


@pytest.mark.parametrize("name,make,shapes,kwargs", MHA, ids=[c[0] for c in MHA])
def test_multihead_attention_options_match_torch(name, make, shapes, kwargs):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    copy_weights(tm, km)
    pairs = [_pair(randn(*s, seed=i)) for i, s in enumerate(shapes)]
    kw = {k: (_pair(v)[0], _pair(v)[1]) if isinstance(v, Const) else (v, v) for k, v in kwargs.items()}
    tout, tw = tm(*[t for t, _ in pairs], **{k: v[0] for k, v in kw.items()})
    kout, kw_ = km(*[k for _, k in pairs], **{k: v[1] for k, v in kw.items()})
    close(kout, tout)
    close(kw_, tw)
    (tout * torch.tensor(randn(*tout.shape, seed=9))).sum().backward()
    (kout * kiln.tensor(randn(*tout.shape, seed=9))).sum().backward()
    for t, k in pairs:
        close(k.grad, t.grad)
    for (n, kp), (tn, tp) in zip(km.named_parameters(), tm.named_parameters()):
        assert n == tn
        close(kp.grad, tp.grad)


def _masks(nn, L, S, N):
    M = _lib(nn)
    causal = nn.Transformer.generate_square_subsequent_mask(L)
    pad = M.tensor(np.array([[False] * (S - 2) + [True] * 2] + [[False] * S] * (N - 1)))
    return causal, pad


TRANSFORMERS = [
    ("EncoderLayer", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), "enc", False),
    ("EncoderLayer-normfirst-gelu-bf", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu",
                                                                             norm_first=True, batch_first=True),
     "enc", True),
    ("Encoder-2-norm", lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 4, 12, dropout=0.0), 2,
                                                        norm=nn.LayerNorm(8)), "encoder", False),
    ("DecoderLayer", lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), "dec", False),
    ("DecoderLayer-normfirst-bf-nobias", lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True,
                                                                               batch_first=True, bias=False),
     "dec", True),
    ("Decoder-2", lambda nn: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2), "decoder",
     False),
    ("Transformer", lambda nn: nn.Transformer(8, 2, 2, 2, 16, dropout=0.0), "full", False),
    ("Transformer-bf-normfirst-callable", lambda nn: nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, batch_first=True,
                                                                    norm_first=True,
                                                                    activation=(torch.nn if nn is torch.nn else knn)
                                                                    .functional.silu), "full", True),
]


@pytest.mark.parametrize("name,make,kind,batch_first", TRANSFORMERS, ids=[c[0] for c in TRANSFORMERS])
def test_transformer_layers_match_torch(name, make, kind, batch_first):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    assert list(km.state_dict()) == list(tm.state_dict())
    copy_weights(tm, km)
    L, S, N = 5, 6, 2
    shape = lambda n: (N, n, 8) if batch_first else (n, N, 8)  # noqa: E731
    pairs = [_pair(randn(*shape(L), seed=1)), _pair(randn(*shape(S), seed=2))]

    def call(nn, m, tgt, src):
        causal, pad = _masks(nn, L, S, N)
        if kind in ("enc", "encoder"):
            key = "src_mask" if kind == "enc" else "mask"
            return m(src, **{key: nn.Transformer.generate_square_subsequent_mask(S)}, src_key_padding_mask=pad)
        if kind in ("dec", "decoder"):
            return m(tgt, src, tgt_mask=causal, memory_key_padding_mask=pad)
        return m(src, tgt, tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad)

    tout = call(torch.nn, tm, *[t for t, _ in pairs])
    kout = call(knn, km, *[k for _, k in pairs])
    close(kout, tout)
    w = randn(*tout.shape, seed=3)
    (tout * torch.tensor(w)).sum().backward()
    (kout * kiln.tensor(w)).sum().backward()
    for t, k in pairs:
        if t.grad is not None:
            close(k.grad, t.grad)
    for (n, kp), (_, tp) in zip(km.named_parameters(), tm.named_parameters()):
        if tp.grad is not None:
            close(kp.grad, tp.grad)


def test_square_subsequent_mask_and_transformer_init():
    np.testing.assert_array_equal(knn.Transformer.generate_square_subsequent_mask(4).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    m = knn.Transformer(16, 4, 1, 1, 32)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = math.sqrt(6 / (16 + 32))  # xavier_uniform_ over every matrix, as torch
    assert np.abs(w).max() <= bound and np.abs(w).max() > bound * 0.8
    a, b = m.encoder.layers[0], m.decoder.layers[0]
    assert a.linear1.weight is not m.encoder.layers[0].linear2.weight and a is not b


# --- acceptance: language models train as in PyTorch ---------------------------------------------
VOCAB, SEQ, BATCH = 23, 12, 4


def _lstm_lm(nn):
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 16)
            self.rnn = nn.LSTM(16, 24, num_layers=2, batch_first=True)
            self.head = nn.Linear(24, VOCAB)

        def forward(self, idx):
            out, _ = self.rnn(self.emb(idx))
            return self.head(out)
    return LM()


def _transformer_lm(nn):
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 16)
            self.pos = nn.Embedding(SEQ, 16)
            layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True,
                                               activation="gelu")
            self.blocks = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
            self.head = nn.Linear(16, VOCAB)

        def forward(self, idx):
            M = _lib(nn)
            x = self.emb(idx) + self.pos(M.arange(idx.shape[1]))
            mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
            return self.head(self.blocks(x, mask=mask, is_causal=True))
    return LM()


@pytest.mark.parametrize("make,opt", [(_lstm_lm, "SGD"), (_transformer_lm, "AdamW")], ids=["lstm", "transformer"])
def test_language_model_trains_like_torch(make, opt):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    copy_weights(tm, km)
    kwargs = dict(lr=0.5) if opt == "SGD" else dict(lr=3e-3, weight_decay=0.1)
    topt, kopt = getattr(torch.optim, opt)(tm.parameters(), **kwargs), getattr(kiln.optim, opt)(km.parameters(),
                                                                                                **kwargs)
    batches = np.random.default_rng(0).integers(0, VOCAB, (2, BATCH, SEQ + 1))  # two batches, seen in turn
    tl, kl = [], []
    for step in range(20):
        data = batches[step % 2]
        for M, m, o, losses in ((torch, tm, topt, tl), (kiln, km, kopt, kl)):
            x, y = M.tensor(data[:, :-1]), M.tensor(data[:, 1:])
            loss = (torch.nn if M is torch else knn).functional.cross_entropy(m(x).reshape(-1, VOCAB), y.reshape(-1))
            o.zero_grad()
            loss.backward()
            o.step()
            losses.append(loss.item())
    np.testing.assert_allclose(kl, tl, rtol=2e-5, atol=2e-5)
    assert tl[-1] < tl[0]


@pytest.mark.parametrize("channels,size", [(1, 3), (3, 2), (6, 5), (9, 4), (9, 7)])
def test_cross_map_lrn2d_matches_torch_forward_and_finite_differences(channels, size):
    x = randn(2, channels, 3, 3)
    t = torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.0)(torch.tensor(x))
    k = knn.CrossMapLRN2d(size, 0.5, 0.75, 1.0)
    close(k(kiln.tensor(x)), t)
    # torch's hand-written backward is not the derivative of its forward; kiln's is (checked
    # against central differences in float64).
    x64 = x.astype(np.float64)
    kx = kiln.tensor(x64, requires_grad=True)
    w = randn(*x.shape, seed=1).astype(np.float64)
    (k(kx) * kiln.tensor(w)).sum().backward()
    f = lambda a: float((k(kiln.tensor(a)) * kiln.tensor(w)).sum().item())  # noqa: E731
    for idx in [(0, 0, 0, 0), (1, channels - 1, 2, 1), (0, channels // 2, 1, 2)]:
        e = np.zeros_like(x64)
        e[idx] = 1e-6
        np.testing.assert_allclose(kx.grad.numpy()[idx], (f(x64 + e) - f(x64 - e)) / 2e-6, rtol=1e-5, atol=1e-7)
    assert repr(k) == repr(torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.0))


LAZY = [
    ("LazyLinear", lambda nn: nn.LazyLinear(3), (2, 5)),
    ("LazyLinear-nobias", lambda nn: nn.LazyLinear(4, bias=False), (2, 3, 6)),
    ("LazyConv1d", lambda nn: nn.LazyConv1d(4, 3, stride=2), (2, 3, 9)),
    ("LazyConv2d-groups", lambda nn: nn.LazyConv2d(4, 3, 1, 1, 1, 2), (2, 4, 5, 5)),
    ("LazyConv3d", lambda nn: nn.LazyConv3d(2, 2), (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", lambda nn: nn.LazyConvTranspose1d(3, 3, stride=2, output_padding=1), (2, 4, 5)),
    ("LazyConvTranspose2d", lambda nn: nn.LazyConvTranspose2d(3, 2, bias=False), (2, 4, 3, 3)),
    ("LazyBatchNorm1d", lambda nn: nn.LazyBatchNorm1d(), (6, 3)),
    ("LazyBatchNorm2d", lambda nn: nn.LazyBatchNorm2d(momentum=0.3), (4, 3, 2, 2)),
    ("LazyBatchNorm3d-noaffine", lambda nn: nn.LazyBatchNorm3d(affine=False), (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", lambda nn: nn.LazyInstanceNorm1d(), (2, 3, 7)),
    ("LazyInstanceNorm2d-noaffine", lambda nn: nn.LazyInstanceNorm2d(affine=False), (2, 3, 4, 4)),
    ("LazyInstanceNorm3d-nostats", lambda nn: nn.LazyInstanceNorm3d(track_running_stats=False), (2, 3, 2, 3, 2)),
]


@pytest.mark.parametrize("name,make,shape", LAZY, ids=[c[0] for c in LAZY])
def test_lazy_module_materializes_as_torch(name, make, shape):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    assert km.has_uninitialized_params()
    params_before = list(km.parameters())
    x = randn(*shape)
    tm(torch.tensor(x))
    km(kiln.tensor(x))
    assert type(km).__name__ == type(tm).__name__ and not name.startswith(type(km).__name__ + "Lazy")
    assert repr(km) == repr(tm)
    assert all(a is b for a, b in zip(params_before, km.parameters()))  # an optimizer built before still holds them
    assert [(k, tuple(v.shape)) for k, v in km.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    tm.eval()
    km.eval()
    copy_weights(tm, km)
    run_both(tm, km, [x], tmod=tm, kmod=km)


# --- variable-length sequences (nn.utils.rnn) ----------------------------------------------------
def _rnn_utils(nn):
    return nn.utils.rnn


def test_pad_pack_unpack_match_torch():
    seqs = [randn(n, 3, seed=n) for n in (2, 5, 3, 3)]
    for batch_first in (False, True):
        t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first=batch_first,
                                            padding_value=-1.0)
        k = knn.utils.rnn.pad_sequence([kiln.tensor(s) for s in seqs], batch_first=batch_first, padding_value=-1.0)
        close(k, t)
    tl = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], padding_side="left")
    close(knn.utils.rnn.pad_sequence([kiln.tensor(s) for s in seqs], padding_side="left"), tl)
    lengths = [2, 5, 3, 3]
    padded = randn(5, 4, 3)
    for M, nn in ((torch, torch.nn), (kiln, knn)):
        p = nn.utils.rnn.pack_padded_sequence(M.tensor(padded), M.tensor(lengths), enforce_sorted=False)
        back, lens = nn.utils.rnn.pad_packed_sequence(p, batch_first=True, padding_value=9.0, total_length=6)
        if M is torch:
            tp, tback, tlens = p, back, lens
        else:
            kp, kback, klens = p, back, lens
    close(kp.data, tp.data)
    for a, b in zip(kp[1:], tp[1:]):
        assert a.tolist() == b.tolist()
    close(kback, tback)
    assert klens.tolist() == tlens.tolist()
    kseqs = knn.utils.rnn.unpack_sequence(knn.utils.rnn.pack_sequence([kiln.tensor(s) for s in seqs],
                                                                         enforce_sorted=False))
    for k, s in zip(kseqs, seqs):
        np.testing.assert_array_equal(k.numpy(), s)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        knn.utils.rnn.pack_padded_sequence(kiln.tensor(padded), [2, 5, 3, 3])


@pytest.mark.parametrize("make,with_h", [
    (lambda nn: nn.LSTM(3, 4, 2, bidirectional=True), True),
    (lambda nn: nn.GRU(3, 4, batch_first=True), False),
    (lambda nn: nn.RNN(3, 4, 2, bidirectional=True, nonlinearity="relu"), True),
    (lambda nn: nn.LSTM(3, 5, proj_size=2, bidirectional=True), False),
], ids=["lstm-bi-2", "gru-batchfirst", "rnn-bi-relu-h0", "lstm-proj-bi"])
def test_recurrent_layer_on_packed_sequence_matches_torch(make, with_h):
    torch.manual_seed(0)
    tm, km = make(torch.nn), make(knn)
    copy_weights(tm, km)
    lengths = [2, 5, 3, 1]
    shape = (4, 5, 3) if tm.batch_first else (5, 4, 3)
    x = randn(*shape)
    layers = tm.num_layers * (2 if tm.bidirectional else 1)
    states = [randn(layers, 4, tm.proj_size or tm.hidden_size, seed=3)]
    if isinstance(tm, torch.nn.LSTM):
        states.append(randn(layers, 4, tm.hidden_size, seed=4))
    outs = {}
    for M, nn, m in ((torch, torch.nn, tm), (kiln, knn, km)):
        xi = M.tensor(x, requires_grad=True)
        p = nn.utils.rnn.pack_padded_sequence(xi, M.tensor(lengths), batch_first=tm.batch_first, enforce_sorted=False)
        hs = [M.tensor(h) for h in states]
        hx = None if not with_h else (tuple(hs) if len(hs) == 2 else hs[0])
        out, h = m(p, hx)
        padded, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=tm.batch_first)
        flat = [padded] + (list(h) if isinstance(h, tuple) else [h])
        loss = sum((f * M.tensor(randn(*f.shape, seed=10 + i))).sum() for i, f in enumerate(flat))
        loss.backward()
        outs[M] = (flat, xi.grad, [p.grad for p in m.parameters()])
    for k, t in zip(outs[kiln][0], outs[torch][0]):
        close(k, t)
    close(outs[kiln][1], outs[torch][1])
    for k, t in zip(outs[kiln][2], outs[torch][2]):
        close(k, t)


@pytest.mark.parametrize("momentum", [0.3, None])
def test_instance_norm_running_stats_update_as_torch(momentum):
    ms = {}
    for M, nn in ((torch, torch.nn), (kiln, knn)):
        m = nn.InstanceNorm1d(4, track_running_stats=True, momentum=momentum)
        for seed in (1, 2, 3):
            m(M.tensor(randn(3, 4, 6, seed=seed) * 3 - 1))
        ms[M] = m
    for (kn, kb), (tn, tb) in zip(ms[kiln].named_buffers(), ms[torch].named_buffers()):
        assert kn == tn
        close(kb, tb)
    x = randn(2, 4, 6, seed=9)
    ms[kiln].eval()
    ms[torch].eval()
    close(ms[kiln](kiln.tensor(x)), ms[torch](torch.tensor(x)))
