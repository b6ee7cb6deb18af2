"""The torch namespaces scripts touch in their first lines (issue 14 item 4): kiln.cuda,
kiln.backends, kiln.accelerator, kiln.amp, kiln.distributed, kiln.nn.parallel. Each probe runs with
M=torch in a subprocess with CUDA hidden (CUDA_VISIBLE_DEVICES="") and with M=kiln, and both must
answer alike: kiln runs on the CPU and answers as PyTorch without a GPU does."""
import json
import os
import subprocess
import sys
import warnings

import pytest

import kiln

HERE = os.path.dirname(__file__)
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")

# name -> expression over M; its value (or the fact that it raised) is compared.
PROBES = {
    "cuda.is_available": "M.cuda.is_available()",
    "cuda.device_count": "M.cuda.device_count()",
    "cuda.is_initialized": "M.cuda.is_initialized()",
    "cuda.manual_seed_all": "M.cuda.manual_seed_all(1337)",
    "cuda.manual_seed": "M.cuda.manual_seed(1337)",
    "cuda.is_bf16_supported": "M.cuda.is_bf16_supported()",
    "cuda.empty_cache": "M.cuda.empty_cache()",
    "cuda.memory_allocated": "M.cuda.memory_allocated()",
    "cuda.max_memory_allocated": "M.cuda.max_memory_allocated()",
    "cuda.synchronize": "M.cuda.synchronize()",
    "cuda.get_device_name": "M.cuda.get_device_name(0)",
    "cuda.current_device": "M.cuda.current_device()",
    "cuda.get_device_properties": "M.cuda.get_device_properties(0)",
    "backends.cuda.matmul.allow_tf32": "M.backends.cuda.matmul.allow_tf32",
    "backends.cuda.matmul.fp16_reduced": "M.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "backends.cudnn.benchmark": "M.backends.cudnn.benchmark",
    "backends.cudnn.deterministic": "M.backends.cudnn.deterministic",
    "backends.cudnn.allow_tf32": "M.backends.cudnn.allow_tf32",
    "backends.cudnn.enabled": "M.backends.cudnn.enabled",
    "backends.mps.is_available": "M.backends.mps.is_available()",
    "backends.flash_sdp": "M.backends.cuda.flash_sdp_enabled()",
    "set_flags": "(setattr(M.backends.cuda.matmul, 'allow_tf32', True), setattr(M.backends.cudnn, 'benchmark', True),"
                 " M.backends.cuda.matmul.allow_tf32, M.backends.cudnn.benchmark)",
    "accelerator.is_available": "M.accelerator.is_available()",
    "accelerator.device_count": "M.accelerator.device_count()",
    "distributed.is_initialized": "M.distributed.is_initialized()",
    "distributed.get_rank": "M.distributed.get_rank()",
    "amp.cuda_scaler": "(lambda s: (s.is_enabled(), s.get_scale(), s.state_dict(), s.scale(7)))"
                       "(M.amp.GradScaler('cuda'))",
    "cuda.amp.scaler": "(lambda s: (s.is_enabled(), s.get_scale(), s.state_dict()))(M.cuda.amp.GradScaler())",
    "amp.cpu_scaler": "(lambda s: (s.is_enabled(), s.get_scale(), s.state_dict()))"
                      "(M.amp.GradScaler('cpu', init_scale=1024.0, growth_interval=3))",
    "amp.autocast_cpu": "_autocast_dtypes(M)",
    "amp.autocast_cuda_disabled": "_autocast_dtypes(M, 'cuda')",
    "nn.parallel.DataParallel": "(lambda m: (list(M.nn.parallel.DataParallel(m).state_dict()),"
                                " M.nn.parallel.DataParallel(m)(M.ones(1, 2)).tolist() == m(M.ones(1, 2)).tolist()))"
                                "(M.nn.Linear(2, 3))",
    "imports": "__import__('importlib').import_module(M.__name__ + '.nn.parallel').DistributedDataParallel.__name__",
}

PRELUDE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import {m} as M
from {m}.distributed import init_process_group, destroy_process_group  # scripts' top lines
from {m}.nn.parallel import DistributedDataParallel as DDP
from {m}.cuda.amp import GradScaler

def _autocast_dtypes(M, device="cpu"):
    x = M.ones(4, 4)
    with M.amp.autocast(device_type=device):
        return [str(r.dtype).split(".")[1] for r in (x @ x, x + x)]

def norm(v):
    if isinstance(v, (list, tuple)):
        return [norm(e) for e in v]
    if isinstance(v, dict):
        return {{k: norm(e) for k, e in v.items()}}
    return v if v is None or isinstance(v, (bool, int, float, str)) else repr(v)

out = {{}}
for name, expr in json.loads(sys.argv[1]).items():
    try:
        out[name] = norm(eval(expr))
    except Exception as e:  # noqa: BLE001
        out[name] = "raises"
print(json.dumps(out))
"""


def probe(module, probes=PROBES):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=PYTHON_DIR)
    res = subprocess.run([sys.executable, "-c", PRELUDE.format(m=module), json.dumps(probes)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def answers():
    return probe("torch"), probe("kiln")


@pytest.mark.parametrize("name", sorted(PROBES))
def test_namespace_answers_as_pytorch_without_cuda(name, answers):
    torch_ans, kiln_ans = answers
    assert kiln_ans[name] == torch_ans[name], (name, torch_ans[name], kiln_ans[name])


def test_float32_matmul_precision_as_pytorch():
    """A fresh process each (torch refuses to mix this API with the allow_tf32 flag set above)."""
    seq = {"seq": "(M.get_float32_matmul_precision(), M.set_float32_matmul_precision('high'),"
                  " M.get_float32_matmul_precision(), M.set_float32_matmul_precision('bogus'),"
                  " M.get_float32_matmul_precision(), M.set_float32_matmul_precision('medium'),"
                  " M.get_float32_matmul_precision())"}
    assert probe("kiln", seq) == probe("torch", seq) == {"seq": ["highest", None, "high", None, "high", None, "medium"]}


def test_unavailable_features_name_themselves():
    for call, what in [(lambda: kiln.cuda.get_device_name(0), "kiln.cuda.get_device_name()"),
                       (lambda: kiln.cuda.synchronize(), "kiln.cuda.synchronize()"),
                       (lambda: kiln.accelerator.synchronize(), "kiln.accelerator.synchronize()"),
                       (lambda: kiln.distributed.init_process_group("nccl"), "no distributed backend"),
                       (lambda: kiln.nn.parallel.DistributedDataParallel(kiln.nn.Linear(2, 2)), "DistributedDataParallel")]:
        with pytest.raises(kiln.Error, match=what.replace("(", r"\(").replace(")", r"\)")) as e:
            call()
        assert "hint:" in str(e.value)
    # PyTorch's CPU build raises AssertionError ("Torch not compiled with CUDA enabled") for these.
    with pytest.raises(AssertionError):
        kiln.cuda.current_device()
    assert kiln.distributed.is_available() is False and kiln.accelerator.current_accelerator() is None
    assert kiln.backends.cudnn.is_available() is False and kiln.backends.cuda.is_built() is False


def test_autocast_decorator_and_cuda_warning():
    with pytest.warns(UserWarning, match="Disabling"):
        ctx = kiln.amp.autocast(device_type="cuda")
    with ctx:
        assert (kiln.ones(2, 2) @ kiln.ones(2, 2)).dtype == kiln.float32

    @kiln.amp.autocast(device_type="cpu", dtype=kiln.bfloat16)
    def mm(a):
        return a @ a
    assert mm(kiln.ones(2, 2)).dtype == kiln.bfloat16
    with pytest.warns(UserWarning):
        assert kiln.cuda.amp.GradScaler().is_enabled() is False


def _scaler_run(M, init_scale):
    """A small float32 regression trained with GradScaler('cpu'): the losses, the scales and the
    skipped steps (init_scale=1e38 overflows the scaled loss to inf, so steps are skipped and the
    scale backs off)."""
    M.manual_seed(0)
    w0 = [[0.5, -0.25, 0.125], [0.75, 0.1, -0.3]]
    x = M.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [2.0, 0.0, -1.0], [1.0, 1.0, 1.0]])
    y = M.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])
    lin = M.nn.Linear(3, 2)
    with M.no_grad():
        lin.weight.copy_(M.tensor(w0))
        lin.bias.copy_(M.tensor([0.1, -0.1]))
    opt = M.optim.SGD(lin.parameters(), lr=0.1)
    scaler = M.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=2)
    trace = []
    for _ in range(6):
        opt.zero_grad()
        loss = ((lin(x) - y) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        grad_norm = float((lin.weight.grad ** 2).sum().item())
        scaler.step(opt)
        scaler.update()
        trace.append((float(loss.item()), scaler.get_scale(), grad_norm))
    return trace, lin.weight.tolist(), scaler.state_dict()


@pytest.mark.parametrize("init_scale", [1024.0, 1e38])
def test_grad_scaler_follows_pytorch(init_scale):
    import torch
    k_trace, k_w, k_state = _scaler_run(kiln, init_scale)
    t_trace, t_w, t_state = _scaler_run(torch, init_scale)
    assert [s for _, s, _ in k_trace] == [s for _, s, _ in t_trace]
    assert k_state == t_state
    for (kl, _, kg), (tl, _, tg) in zip(k_trace, t_trace):
        assert kl == pytest.approx(tl, rel=1e-5)
        assert kg == pytest.approx(tg, rel=1e-4) or (kg != kg and tg != tg) or kg == tg
    assert sum(k_w, []) == pytest.approx(sum(t_w, []), rel=1e-5)


def test_grad_scaler_misuse_errors_match_pytorch():
    import torch
    for M in (kiln, torch):
        p = M.nn.Parameter(M.ones(2))
        opt = M.optim.SGD([p], lr=0.1)
        s = M.amp.GradScaler("cpu")
        (s.scale((p * 2).sum())).backward()
        s.unscale_(opt)
        with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
            s.unscale_(opt)
        s.step(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            s.step(opt)
        s.update()
        fresh = M.amp.GradScaler("cpu")
        fresh.load_state_dict(s.state_dict())
        assert fresh.state_dict() == s.state_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="state dict is empty"):
            kiln.amp.GradScaler("cpu").load_state_dict(kiln.amp.GradScaler("cuda").state_dict())


SCRIPT = '''
import os, sys, json, warnings
from contextlib import nullcontext
import numpy as np
warnings.simplefilter("ignore")
import {m} as torch
from {m}.nn.parallel import DistributedDataParallel as DDP
from {m}.distributed import init_process_group, destroy_process_group
from {m}.utils.data import DataLoader, TensorDataset

ddp = int(os.environ.get("RANK", -1)) != -1
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(1337)
torch.cuda.manual_seed_all(1337) if torch.cuda.is_available() else None
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float32"
ptdtype = {{"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))

rng = np.random.default_rng(0)
w1, w2 = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((1, 8)).astype(np.float32)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
with torch.no_grad():
    model[0].weight.copy_(torch.from_numpy(w1)); model[0].bias.zero_()
    model[2].weight.copy_(torch.from_numpy(w2)); model[2].bias.zero_()
x = torch.from_numpy(rng.standard_normal((12, 4)).astype(np.float32))
y = torch.from_numpy(rng.standard_normal((12, 1)).astype(np.float32))
loader = DataLoader(TensorDataset(x, y), batch_size=4, num_workers=1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
losses = []
for xb, yb in loader:
    with ctx:
        loss = ((model(xb) - yb) ** 2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
out = sys.argv[1]
torch.save({{"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": 3,
            "model_args": {{"n": 8}}, "config": {{"dtype": dtype, "device": device}}}}, out)
ckpt = torch.load(out, map_location=device)
model.load_state_dict(ckpt["model"])
optimizer.load_state_dict(ckpt["optimizer"])
print(json.dumps({{"losses": losses, "iter": ckpt["iter_num"], "config": ckpt["config"], "ddp": ddp}}))
'''


def test_a_script_preamble_runs_unchanged(tmp_path):
    """The first lines of a typical training script (nanoGPT-style), a DataLoader with a worker,
    a GradScaler, a checkpoint saved and resumed: the same program with M=torch and M=kiln."""
    results = {}
    for m in ("torch", "kiln"):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=PYTHON_DIR)
        env.pop("RANK", None)
        res = subprocess.run([sys.executable, "-c", SCRIPT.format(m=m), str(tmp_path / f"{m}.pt")],
                             capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        results[m] = json.loads(res.stdout.strip().splitlines()[-1])
    k, t = results["kiln"], results["torch"]
    assert k["losses"] == pytest.approx(t["losses"], rel=1e-5)
    assert k["iter"] == t["iter"] == 3 and k["config"] == t["config"] and k["ddp"] is t["ddp"] is False
    assert torch_loads(tmp_path / "kiln.pt")["iter_num"] == 3


def torch_loads(path):
    import torch
    return torch.load(path, weights_only=True)
