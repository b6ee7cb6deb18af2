"""Trains a character-level GPT on a text file with kiln.nn and kiln.optim, saves a checkpoint,
and samples from it: the Python twin of examples/gpt.cpp (same model, same recipe).

    PYTHONPATH=python python3 examples/gpt.py [--text FILE] [--layers 2] [--d 128] [--heads 4]
        [--ctx 128] [--batch 16] [--steps 300] [--lr 1e-3] [--seed 0] [--checkpoint gpt.safetensors]
        [--sample 300] [--temperature 0.8] [--top-k 20]

The model is the GPT of the benchmark workloads (/work/shared/bench/workloads.md): pre-norm blocks
of causal self-attention and a tanh-GELU MLP, learned position embeddings, and an output head tied
to the token embedding. The loss is printed next to the text's unigram entropy (what a model that
ignores context achieves), so learning is visible.
"""
import argparse
import math
import time

import numpy as np

import kiln
import kiln.nn as nn
import kiln.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=50304, ctx=1024, d=768, heads=12, layers=12):
        super().__init__()
        self.ctx, self.layers = ctx, layers
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied: one parameter

    def init_gpt2_weights(self):
        """GPT-2's initialisation: N(0, 0.02) for linear and embedding weights, zero biases, the
        residual projections scaled down by sqrt(2 * layers)."""
        for name, p in self.named_parameters():
            if name.endswith(".bias") and ".ln" not in name and not name.startswith("ln"):
                nn.init.zeros_(p)
            elif name.endswith("weight") and p.dim() == 2:
                residual = name.endswith("proj.weight") or name.endswith("fc2.weight")
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * self.layers) if residual else 0.02)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        if T > self.ctx:
            raise ValueError(f"GPT: a sequence of {T} tokens is longer than the context ({self.ctx})")
        x = self.wte(idx) + self.wpe(kiln.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def batch(ids, B, T, rng):
    """Random windows of the text: inputs [B, T] and the next characters as targets."""
    starts = rng.integers(0, len(ids) - T - 1, size=B)
    x = np.stack([ids[s:s + T] for s in starts])
    y = np.stack([ids[s + 1:s + T + 1] for s in starts])
    return kiln.tensor(x), kiln.tensor(y)


@kiln.no_grad()
def generate(model, chars, prompt, n, temperature, top_k):
    model.eval()
    ids = [chars.index(c) for c in prompt if c in chars] or [0]
    out = ""
    for _ in range(n):
        window = ids[-model.ctx:]
        logits = model(kiln.tensor([window]))[0, -1] / temperature
        if 0 < top_k < logits.shape[-1]:
            kth = logits.topk(top_k).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        nxt = kiln.multinomial(F.softmax(logits, -1), 1).item()
        ids.append(nxt)
        out += chars[nxt]
    model.train()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--checkpoint", default="gpt.safetensors")
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-k", type=int, default=20)
    a = ap.parse_args()

    text = open(a.text, encoding="utf-8", errors="replace").read()
    chars = sorted(set(text))
    lookup = {c: i for i, c in enumerate(chars)}
    ids = np.fromiter((lookup[c] for c in text), dtype=np.int64, count=len(text))
    counts = np.bincount(ids, minlength=len(chars)) / len(ids)
    entropy = -float((counts[counts > 0] * np.log(counts[counts > 0])).sum())
    print(f"text {a.text}: {len(text)} characters, vocab {len(chars)}, unigram entropy {entropy:.3f} nats/char")

    kiln.manual_seed(a.seed)
    model = GPT(vocab=len(chars), ctx=a.ctx, d=a.d, heads=a.heads, layers=a.layers)
    model.init_gpt2_weights()
    print(f"model: {a.layers} layers, d {a.d}, {a.heads} heads, context {a.ctx}: "
          f"{sum(p.numel() for p in model.parameters())} parameters")

    opt = kiln.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.99), weight_decay=0.1)
    warmup = min(50, a.steps // 10 + 1)
    sched = kiln.optim.lr_scheduler.SequentialLR(opt, [
        kiln.optim.lr_scheduler.LinearLR(opt, start_factor=1e-3, total_iters=warmup),
        kiln.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, a.steps - warmup), eta_min=a.lr / 10),
    ], milestones=[warmup])
    rng = np.random.default_rng(a.seed)
    t0 = time.time()
    for step in range(1, a.steps + 1):
        x, y = batch(ids, a.batch, a.ctx, rng)
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step == 1 or step % 25 == 0 or step == a.steps:
            el = time.time() - t0
            print(f"step {step:5d}  loss {loss.item():.4f}  lr {sched.get_last_lr()[0]:.2e}  "
                  f"{step * a.batch * a.ctx / el:.0f} tokens/s  {el:.0f}s", flush=True)

    kiln.save(model.state_dict(), a.checkpoint,
              {"vocab": "".join(chars), "layers": str(a.layers), "d": str(a.d), "heads": str(a.heads),
               "ctx": str(a.ctx)})
    print(f"saved {a.checkpoint}")
    if a.sample > 0:
        print(generate(model, chars, "\n", a.sample, a.temperature, a.top_k))


if __name__ == "__main__":
    main()
