"""Training-step throughput of the workloads.md GPT at the size of the GPT example (2 layers,
d 128, 4 heads, context 128, batch 16, vocab 76): kiln (eager, and with the loss through
kiln.compile) against PyTorch eager, in the same run on the same CPU, with the same step
(forward, cross entropy, backward, clip_grad_norm_, AdamW).

    PYTHONPATH=python python3 bench/gpt_train_cpu.py [--steps 30] [--threads N]

Prints tokens/s per mode (median over the timed steps, after 3 warm-up steps).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
import gpt as kgpt  # noqa: E402
from test_gpt_parity import TorchGPT  # noqa: E402  the same model written in torch

CFG = dict(vocab=76, ctx=128, d=128, heads=4, layers=2)
BATCH = 16


def run(name, model, loss_fn, opt, clip, lib, batches, warmup=3):
    times = []
    for i, (x, y) in enumerate(batches):
        t0 = time.perf_counter()
        loss = loss_fn(x, y)
        opt.zero_grad()
        loss.backward()
        clip(model.parameters(), 1.0)
        opt.step()
        float(loss.detach())  # read the loss, as a training loop does
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    step = statistics.median(times)
    print(f"{name:28s} {BATCH * CFG['ctx'] / step:9.0f} tokens/s   ({step * 1e3:.1f} ms/step)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    data = [rng.integers(0, CFG["vocab"], size=(BATCH, CFG["ctx"] + 1)) for _ in range(args.steps + 3)]

    for compiled in (False, True):
        kiln.manual_seed(0)
        km = kgpt.GPT(**CFG)
        kopt = kiln.optim.AdamW(km.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
        loss = lambda x, y: km(x, y)  # noqa: E731
        fn = kiln.compile(loss) if compiled else loss
        batches = [(kiln.tensor(d[:, :-1]), kiln.tensor(d[:, 1:])) for d in data]
        run("kiln eager" + (" + compile(loss)" if compiled else ""), km, fn, kopt, kiln.nn.utils.clip_grad_norm_,
            kiln, batches)

    torch.manual_seed(0)
    tm = TorchGPT(**CFG)
    topt = torch.optim.AdamW(tm.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    batches = [(torch.from_numpy(np.ascontiguousarray(d[:, :-1])), torch.from_numpy(np.ascontiguousarray(d[:, 1:])))
               for d in data]
    run(f"torch {torch.__version__} eager", tm, tm, topt, torch.nn.utils.clip_grad_norm_, torch, batches)


if __name__ == "__main__":
    main()
