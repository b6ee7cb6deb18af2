"""The GPT of examples/gpt.py (kiln.nn) against the same model written in torch here: initial
weights made by kiln, saved with kiln.save (safetensors) and loaded into torch with
safetensors.torch.load_file; 20 AdamW steps (with gradient clipping and a warmup+cosine schedule)
on the same batches; the losses must match at every step."""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from safetensors.torch import load_file

import kiln
import kiln.nn as knn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import gpt as kgpt  # noqa: E402

CFG = dict(vocab=61, ctx=16, d=32, heads=4, layers=2)
STEPS, BATCH = 20, 4
RTOL = 1e-3  # float32, 20 steps of AdamW: differences compound but stay far below this


class TorchBlock(tnn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
        self.qkv, self.proj = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
        self.fc, self.fc2 = tnn.Linear(d, 4 * d), tnn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(TF.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TorchGPT(tnn.Module):
    def __init__(self, vocab, ctx, d, heads, layers):
        super().__init__()
        self.wte, self.wpe = tnn.Embedding(vocab, d), tnn.Embedding(ctx, d)
        self.blocks = tnn.ModuleList(TorchBlock(d, heads) for _ in range(layers))
        self.lnf = tnn.LayerNorm(d)
        self.head = tnn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        return TF.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def _schedule(lib, opt):
    s = lib.optim.lr_scheduler
    return s.SequentialLR(opt, [s.LinearLR(opt, start_factor=0.1, total_iters=5),
                                s.CosineAnnealingLR(opt, T_max=STEPS - 5, eta_min=1e-4)], milestones=[5])


def test_gpt_training_matches_torch(tmp_path):
    kiln.manual_seed(0)
    km = kgpt.GPT(**CFG)
    km.init_gpt2_weights()
    path = os.path.join(tmp_path, "init.safetensors")
    kiln.save(km.state_dict(), path)
    tm = TorchGPT(**CFG)
    tm.load_state_dict(load_file(path))
    assert tm.head.weight is tm.wte.weight  # still tied after loading
    assert [n for n, _ in km.named_parameters()] == [n for n, _ in tm.named_parameters()]

    kopt = kiln.optim.AdamW(km.parameters(), lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
    topt = torch.optim.AdamW(tm.parameters(), lr=3e-3, betas=(0.9, 0.99), weight_decay=0.1)
    ksched, tsched = _schedule(kiln, kopt), _schedule(torch, topt)
    rng = np.random.default_rng(0)
    # A learnable stream (a noisy repeating pattern), so the loss falls over the 20 steps.
    stream = (np.arange(4000) * 7 % CFG["vocab"] + (rng.random(4000) < 0.1) * rng.integers(0, 5, 4000)) % CFG["vocab"]
    klosses, tlosses = [], []
    for step in range(STEPS):
        starts = rng.integers(0, len(stream) - CFG["ctx"] - 1, size=BATCH)
        x = np.stack([stream[s:s + CFG["ctx"]] for s in starts]).astype(np.int64)
        y = np.stack([stream[s + 1:s + CFG["ctx"] + 1] for s in starts]).astype(np.int64)
        kl = km(kiln.tensor(x), kiln.tensor(y))
        tl = tm(torch.tensor(x), torch.tensor(y))
        kopt.zero_grad()
        topt.zero_grad()
        kl.backward()
        tl.backward()
        kn = knn.utils.clip_grad_norm_(km.parameters(), 1.0)
        tn = tnn.utils.clip_grad_norm_(tm.parameters(), 1.0)
        kopt.step()
        topt.step()
        ksched.step()
        tsched.step()
        klosses.append(kl.item())
        tlosses.append(tl.item())
        np.testing.assert_allclose(kn.item(), tn.item(), rtol=RTOL)
    klosses, tlosses = np.array(klosses), np.array(tlosses)
    rel = np.abs(klosses - tlosses) / np.abs(tlosses)
    print(f"\nGPT parity over {STEPS} AdamW steps: max |loss diff| {np.abs(klosses - tlosses).max():.3e}, "
          f"max rel {rel.max():.3e}; loss {tlosses[0]:.4f} -> {tlosses[-1]:.4f}")
    np.testing.assert_allclose(klosses, tlosses, rtol=RTOL)
    assert tlosses[-1] < tlosses[0] - 0.3  # it trained, so the comparison covers real updates
    assert abs(tlosses[0] - math.log(CFG["vocab"])) < 0.5  # GPT-2 init: near-uniform predictions
    # And the final weights agree.
    tsd = tm.state_dict()
    for name, p in km.state_dict().items():
        np.testing.assert_allclose(p.numpy(), tsd[name].numpy(), rtol=1e-2, atol=1e-4, err_msg=name)
