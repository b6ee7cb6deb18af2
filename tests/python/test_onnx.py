"""kiln.onnx.export: models exported to ONNX and run in onnxruntime, against kiln's eager output and
PyTorch's for the same model and weights (docs/onnx.md); dynamic axes; the clear errors."""
import io
import os
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="kiln.onnx needs the onnx package (scripts/deps.sh installs it)")
ort = pytest.importorskip("onnxruntime", reason="running exported models needs onnxruntime (scripts/deps.sh installs it)")
import torch  # noqa: E402

import kiln  # noqa: E402
import kiln.nn as knn  # noqa: E402
import kiln.nn.functional as KF  # noqa: E402
import kiln.onnx  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import gpt as kgpt  # noqa: E402
from test_gpt_parity import TorchGPT  # noqa: E402


def run(proto, **feeds):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: np.asarray(v) for k, v in feeds.items()})


def to_torch(kmodel, tmodel):
    """Loads kiln's weights into the PyTorch twin (same state_dict names)."""
    tmodel.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in kmodel.state_dict().items()})
    return tmodel


# ---- the same models written once, for M = kiln and M = torch

def mlp(M):
    class MLP(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = M.nn.Sequential(M.nn.Linear(8, 32), M.nn.ReLU(), M.nn.Linear(32, 16), M.nn.GELU(),
                                       M.nn.Linear(16, 5))

        def forward(self, x):
            return M.nn.functional.log_softmax(self.net(x), dim=-1)
    return MLP()


def cnn(M, pool=True):
    class CNN(M.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = M.nn.Conv2d(3, 8, 3, padding=1, stride=1 if pool else 2)
            self.bn = M.nn.BatchNorm2d(8)
            self.c2 = M.nn.Conv2d(8, 12, 3, stride=2, bias=False)
            self.fc = M.nn.Linear(12 * 3 * 3, 10)

        def forward(self, x):
            F = M.nn.functional
            x = F.relu(self.bn(self.c1(x)))
            x = F.silu(self.c2(F.max_pool2d(x, 2) if pool else x))
            if pool:
                x = F.avg_pool2d(x, 3, stride=1, padding=1)
            return self.fc(x.flatten(1))
    return CNN()


def make(builder, seed=0):
    kiln.manual_seed(seed)
    km = builder(kiln)
    tm = to_torch(km, builder(torch))
    return km, tm


def test_mlp_matches_kiln_and_torch():
    km, tm = make(mlp)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    proto = kiln.onnx.export(km, (kiln.tensor(x),), None, input_names=["x"], output_names=["y"])
    (y,) = run(proto, x=x)
    np.testing.assert_allclose(y, km(kiln.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y, tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    ops = {n.op_type for n in proto.graph.node}
    assert "Gemm" in ops and "Relu" in ops and "LogSoftmax" in ops
    # Parameters are initializers named after the module's state_dict.
    assert {i.name for i in proto.graph.initializer} >= set(km.state_dict())


def test_export_params_false_makes_parameters_inputs():
    km, _ = make(mlp)
    x = kiln.randn(2, 8)
    proto = kiln.onnx.export(km, (x,), None, export_params=False)
    state = km.state_dict()
    assert [i.name for i in proto.graph.input] == ["x"] + list(state)
    assert not any(i.name in state for i in proto.graph.initializer)
    (y,) = run(proto, x=x.numpy(), **{k: v.detach().numpy() for k, v in state.items()})
    np.testing.assert_allclose(y, km(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_batch_from_dynamic_axes(tmp_path):
    km, tm = make(mlp)
    x = kiln.randn(4, 8)
    path = str(tmp_path / "mlp.onnx")
    kiln.onnx.export(km, (x,), path, input_names=["x"], output_names=["y"],
                     dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load(path)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for b in (3, 7):  # neither is the example's size
        xb = np.random.default_rng(b).standard_normal((b, 8)).astype(np.float32)
        (y,) = run(proto, x=xb)
        assert y.shape == (b, 5)
        np.testing.assert_allclose(y, tm(torch.tensor(xb)).detach().numpy(), rtol=1e-5, atol=1e-5)
    # The caller's example tensor is not marked dynamic by the export.
    assert "s0" not in kiln.explain(lambda t: t * 2, x).graphs[0]


def test_compiled_module_exports_the_module():
    km, _ = make(mlp)
    x = kiln.randn(3, 8)
    cm = kiln.compile(km)
    cm(x)
    proto = kiln.onnx.export(cm, (x,), None)
    names = {i.name for i in proto.graph.initializer}
    assert names >= set(km.state_dict()) and not any("_orig_mod" in n for n in names)
    np.testing.assert_allclose(run(proto, x=x.numpy())[0], km(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_batch_from_mark_dynamic():
    km, _ = make(mlp)
    x = kiln.randn(4, 8)
    kiln.mark_dynamic(x, 0)
    proto = kiln.onnx.export(km, (x,))
    name = proto.graph.input[0].name
    assert name == "x"  # the forward's parameter name
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "s0"
    xb = kiln.randn(9, 8)
    (y,) = run(proto, x=xb.numpy())
    np.testing.assert_allclose(y, km(xb).detach().numpy(), rtol=1e-5, atol=1e-6)


def trained_cnn(pool):
    km, _ = make(lambda M: cnn(M, pool))
    km.train()
    for _ in range(3):  # running statistics that are not the initial ones
        km(kiln.randn(6, 3, 14, 14) * 2 + 0.5)
    return km, to_torch(km, cnn(torch, pool)).eval()


def test_cnn_conv_pool_batch_norm_in_eval():
    km, tm = trained_cnn(pool=True)
    x = kiln.randn(2, 3, 14, 14)
    proto = kiln.onnx.export(km, (x,), io.BytesIO())
    assert km.training  # export switched it to eval and back
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "BatchNormalization", "MaxPool", "AveragePool", "Gemm"} <= ops
    km.eval()
    (y,) = run(proto, x=x.numpy())
    np.testing.assert_allclose(y, km(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y, tm(torch.tensor(x.numpy())).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_cnn_dynamic_batch():
    # (Pooling reads the input's sizes as numbers, which fixes the batch: this CNN strides instead.)
    km, tm = trained_cnn(pool=False)
    km.eval()
    proto = kiln.onnx.export(km, (kiln.randn(2, 3, 14, 14),), None, dynamic_axes={"x": [0]})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    for b in (3, 5):
        xb = np.random.default_rng(b).standard_normal((b, 3, 14, 14)).astype(np.float32)
        (y,) = run(proto, x=xb)
        np.testing.assert_allclose(y, km(kiln.tensor(xb)).detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(y, tm(torch.tensor(xb)).detach().numpy(), rtol=1e-4, atol=1e-5)


GPT_CFG = dict(vocab=29, ctx=16, d=32, heads=4, layers=2)


def test_gpt_example_matches_kiln_and_torch():
    kiln.manual_seed(0)
    km = kgpt.GPT(**GPT_CFG)
    km.init_gpt2_weights()
    km.eval()
    tm = to_torch(km, TorchGPT(**GPT_CFG))
    rng = np.random.default_rng(0)
    idx = rng.integers(0, GPT_CFG["vocab"], (2, 12)).astype(np.int64)
    tgt = rng.integers(0, GPT_CFG["vocab"], (2, 12)).astype(np.int64)
    proto = kiln.onnx.export(km, (kiln.tensor(idx),), None, output_names=["logits"])
    assert "LayerNormalization" in {n.op_type for n in proto.graph.node}
    # The tied head shares the embedding's initializer.
    assert sum(i.name in ("wte.weight", "head.weight") for i in proto.graph.initializer) == 1
    (logits,) = run(proto, idx=idx)
    np.testing.assert_allclose(logits, km(kiln.tensor(idx)).detach().numpy(), rtol=1e-4, atol=1e-5)
    # With targets: the loss (cross_entropy), against PyTorch's GPT of the same weights.
    proto = kiln.onnx.export(km, (kiln.tensor(idx), kiln.tensor(tgt)))
    (loss,) = run(proto, idx=idx, targets=tgt)
    np.testing.assert_allclose(loss, tm(torch.tensor(idx), torch.tensor(tgt)).item(), rtol=1e-5)


def test_dynamic_axis_the_model_fixes_is_an_error():
    # The GPT reads idx.shape[1] (a concrete size): a dynamic sequence length cannot be exported.
    kiln.manual_seed(0)
    km = kgpt.GPT(**GPT_CFG)
    with pytest.raises(kiln.onnx.OnnxExporterError, match=r"dynamic axis 1 \('T'\) of input 'idx'.*fixed"):
        kiln.onnx.export(km, (kiln.randint(0, 29, (2, 8)),), dynamic_axes={"idx": {1: "T"}})


def encoder(M):
    kw = dict(enable_nested_tensor=False) if M is torch else {}
    return M.nn.TransformerEncoder(M.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2, **kw)


def test_transformer_encoder_with_a_mask_matches_kiln_and_torch():
    km, tm = make(encoder)
    km.eval()
    tm.eval()
    x = kiln.randn(2, 5, 16)
    mask = knn.Transformer.generate_square_subsequent_mask(5)
    proto = kiln.onnx.export(km, (x, {"mask": mask}), None)
    assert [i.name for i in proto.graph.input] == ["src", "mask"]
    (y,) = run(proto, src=x.numpy(), mask=mask.numpy())
    np.testing.assert_allclose(y, km(x, mask=mask).detach().numpy(), rtol=1e-5, atol=1e-5)
    want = tm(torch.tensor(x.numpy()), mask=torch.tensor(mask.numpy())).detach().numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def ops_zoo(x, y, i):
    a = kiln.where(x > y, x * 2.5, y - 1) / (y.abs() + 1)
    b = kiln.cat([a, x.flip(0), KF.pad(y, (1, 0))[:, 1:]], dim=1)
    c = b.pow(2).sum(dim=0, keepdim=True) + b.amax(dim=1).unsqueeze(0).mean()
    d = (i // 3 + i % 4) * 2 - i.cumsum(0)
    e = x.topk(2, dim=1).values.sigmoid() + x.argmax(dim=1, keepdim=True).float()
    f = KF.softmax(x @ y.t(), dim=-1).tanh().exp().log1p().rsqrt()
    g = (x.clamp(-0.5, 0.5) + (x != y).float() + (x >= 0).logical_and(y < 0).float()).permute(1, 0).reshape(-1)
    h = (x * 0 + 0.1 == 0.1)  # compared in float32, as kiln does (in float64 it would be False)
    return c, d, e, f, g, h, x.transpose(0, 1)[1:3, ::2].contiguous() + kiln.arange(2)


def test_prims_of_many_ops_match_kiln():
    rng = np.random.default_rng(1)
    x = kiln.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    y = kiln.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    i = kiln.tensor(rng.integers(-20, 20, (7,)).astype(np.int64))
    proto = kiln.onnx.export(ops_zoo, (x, y, i), None)
    got = run(proto, x=x.numpy(), y=y.numpy(), i=i.numpy())
    want = ops_zoo(x, y, i)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def writes(x, i):
    y = x * 2
    y[:, 1] = 0                          # writes through views: functionalized to scatters
    y[0] += 1
    y[i, 2] = kiln.tensor([5.0, 6.0])
    z = kiln.zeros(3, 4).index_put((i, kiln.tensor([0, 3])), kiln.tensor(1.5), accumulate=True)
    return y, z


def test_in_place_writes_match_kiln():
    x, i = kiln.randn(3, 4), kiln.tensor([2, -3])
    proto = kiln.onnx.export(writes, (x, i), None)
    assert "ScatterND" in {n.op_type for n in proto.graph.node}
    for g, w in zip(run(proto, x=x.numpy(), i=i.numpy()), writes(x, i)):
        np.testing.assert_array_equal(g, w.numpy())


def test_nested_and_keyword_arguments_are_named_and_dynamic():
    def f(pair, extra):
        return pair[0] + pair[1] * extra["w"]
    a, b, w = kiln.randn(3, 4), kiln.randn(3, 4), kiln.randn(4)
    proto = kiln.onnx.export(f, ((a, b), {"extra": {"w": w}}), None,
                             dynamic_axes={"pair_0": {0: "n"}, "pair_1": {0: "n"}, "output": {0: "n"}})
    assert [i.name for i in proto.graph.input] == ["pair_0", "pair_1", "extra_w"]
    a5, b5 = kiln.randn(5, 4), kiln.randn(5, 4)
    (y,) = run(proto, pair_0=a5.numpy(), pair_1=b5.numpy(), extra_w=w.numpy())
    np.testing.assert_allclose(y, (a5 + b5 * w).numpy(), rtol=1e-6)
    with pytest.raises(kiln.onnx.OnnxExporterError, match=r"dynamic_axes names \['pair'\]"):
        kiln.onnx.export(f, ((a, b), {"extra": {"w": w}}), dynamic_axes={"pair": [0]})


def test_opset_18_reductions():
    x = kiln.randn(3, 5)
    f = lambda t: (t.amax(dim=1) + t.amin(dim=0).sum() + t.prod(dim=1), KF.layer_norm(t, [5]))  # noqa: E731
    proto = kiln.onnx.export(f, (x,), None, opset_version=18)
    assert proto.opset_import[0].version == 18
    for g, w in zip(run(proto, t=x.numpy()), f(x)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_capture_graph_names_parameters_and_origins():
    km, _ = make(mlp)
    view = kiln.onnx.capture_graph(km, (kiln.randn(2, 8),))
    assert view.num_args == 1
    assert [i["name"] for i in view.inputs[1:]] == list(km.state_dict())
    ops = [n["op"] for n in view.nodes]
    assert ops.count("linear") == 3 and "log_softmax" in ops
    gelu_prims = [n for n in view.nodes if n["origin"] == "gelu"]
    assert gelu_prims and all(n["op"] != "gelu" for n in gelu_prims)  # decomposed: gelu is no ONNX 17 op
    assert view.outputs[0].shape == (2, 5) and str(view.outputs[0].dtype) == "kiln.float32"


# ---- the clear errors

def test_graph_break_names_reason_and_line():
    def f(x):
        if x.sum() > 0:  # a branch on a tensor's value
            return x * 2
        return x
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(kiln.onnx.OnnxExporterError, match=rf"graph break: .*data.*test_onnx.py:{line}"):
        kiln.onnx.export(f, (kiln.randn(3),))


def test_unmapped_prim_names_the_prim_and_line():
    def f(x, y):
        return kiln.atan2(x, y) + 1
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(kiln.onnx.OnnxExporterError, match=rf"no ONNX mapping for the prim 'atan2'.*test_onnx.py:{line}"):
        kiln.onnx.export(f, (kiln.randn(3), kiln.randn(3)))


def test_arguments_kiln_does_not_support():
    f = lambda t: t + 1  # noqa: E731
    with pytest.raises(kiln.onnx.OnnxExporterError, match="opset_version=13"):
        kiln.onnx.export(f, (kiln.randn(2),), opset_version=13)
    with pytest.raises(kiln.onnx.OnnxExporterError, match="custom_opsets"):
        kiln.onnx.export(f, (kiln.randn(2),), custom_opsets={"my": 1})
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such'"):
        kiln.onnx.export(f, (kiln.randn(2),), no_such=1)
    with pytest.raises(kiln.onnx.OnnxExporterError, match="size 1 in the example"):
        kiln.onnx.export(f, (kiln.randn(1),), dynamic_axes={"t": [0]})


def test_missing_onnx_package_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match="pip install onnx"):
        kiln.onnx.export(lambda t: t, (kiln.randn(2),))
