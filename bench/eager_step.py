"""Eager training-step time at one thread, kiln against PyTorch (issue 14's acceptance line): the
GPT of examples/gpt.py at 4 layers, d 128, 4 heads, context 64, batch 8 (vocab 76), one step =
forward + cross entropy, zero_grad, backward, AdamW step, reading the loss. Both start from the
same weights (made by kiln, saved as safetensors, loaded into tests/python's TorchGPT) and see
the same batches.

    PYTHONPATH=python python3 bench/eager_step.py [--rounds 4] [--steps 20] [--kiln DIR ...]

Each measurement is its own process at one thread (OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1,
which set both kiln's OpenMP loops and its OpenBLAS; torch.set_num_threads(1) as well); the
modes run interleaved, round after round (kiln torch kiln torch ...), each reporting the median
ms of --steps steps after 3 warm-up steps (wall clock, and the process's CPU time, which a loaded
machine inflates less). Prints every round, then the medians over rounds and the ratios to torch. --kiln DIR (repeatable) adds a kiln mode whose package is imported from DIR
(another build's python/ folder; a copy made elsewhere carries that build's libkiln.so in its
kiln/), for before/after comparisons in one run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CFG = dict(vocab=76, ctx=64, d=128, heads=4, layers=4)
BATCH, WARMUP = 8, 3


def batches(n):
    import numpy as np
    rng = np.random.default_rng(0)
    return [rng.integers(0, CFG["vocab"], size=(BATCH, CFG["ctx"] + 1)).astype(np.int64) for _ in range(n)]


def time_steps(model, opt, data, to_tensor):
    times, cpu = [], []
    for i, d in enumerate(data):
        x, y = to_tensor(d[:, :-1]), to_tensor(d[:, 1:])
        t0, c0 = time.perf_counter(), time.process_time()
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()  # read the loss, as a training loop does
        if i >= WARMUP:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return {"ms": statistics.median(times) * 1e3, "cpu_ms": statistics.median(cpu) * 1e3}


def worker(lib, weights, steps):
    import numpy as np
    data = batches(steps + WARMUP)
    if lib == "torch":
        import torch
        torch.set_num_threads(1)
        sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
        from safetensors.torch import load_file
        from test_gpt_parity import TorchGPT
        model = TorchGPT(**CFG)
        model.load_state_dict(load_file(weights))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
        to_tensor = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    else:
        import kiln
        sys.path.insert(0, os.path.join(HERE, "..", "examples"))
        import gpt as kgpt
        model = kgpt.GPT(**CFG)
        model.load_state_dict(kiln.load(weights))
        opt = kiln.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
        to_tensor = lambda a: kiln.tensor(np.ascontiguousarray(a))  # noqa: E731
    print(json.dumps(time_steps(model, opt, data, to_tensor)))


def spawn(lib, pythonpath, weights, steps):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join([pythonpath] + [p for p in [env.get("PYTHONPATH")] if p])
        if os.path.exists(os.path.join(pythonpath, "kiln", "libkiln.so")):  # a copied build: its libkiln beside _C
            env["LD_LIBRARY_PATH"] = os.path.join(pythonpath, "kiln")
    out = subprocess.run([sys.executable, __file__, "--worker", lib, "--weights", weights, "--steps", str(steps)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--kiln", action="append", default=[], help="another kiln build's python/ folder")
    ap.add_argument("--worker", choices=["kiln", "torch"])
    ap.add_argument("--weights")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.weights, args.steps)

    import kiln
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import gpt as kgpt
    kiln.manual_seed(0)
    km = kgpt.GPT(**CFG)
    km.init_gpt2_weights()
    modes = [("kiln", "kiln", None)] + [(f"kiln@{d}", "kiln", os.path.abspath(d)) for d in args.kiln]
    modes.append(("torch", "torch", None))
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "init.safetensors")
        kiln.save(km.state_dict(), weights)
        ms = {name: [] for name, _, _ in modes}
        cpu = {name: [] for name, _, _ in modes}
        for r in range(args.rounds):
            for name, lib, path in modes:
                res = spawn(lib, path, weights, args.steps)
                ms[name].append(res["ms"])
                cpu[name].append(res["cpu_ms"])
            print(f"round {r}: " + "  ".join(f"{n} {v[-1]:.2f}" for n, v in ms.items()), flush=True)
    t, tc = statistics.median(ms["torch"]), statistics.median(cpu["torch"])
    print(f"load (uptime): {os.getloadavg()[0]:.2f}")
    for name, _, _ in modes:
        m, c = statistics.median(ms[name]), statistics.median(cpu[name])
        print(f"{name:40s} {m:8.2f} ms/step {m / t:5.2f}x torch   CPU {c:8.2f} ms/step {c / tc:5.2f}x torch")


if __name__ == "__main__":
    main()
