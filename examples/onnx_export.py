"""Exports the GPT of examples/gpt.py to ONNX with kiln.onnx.export and samples from it in ONNX
Runtime, checking the exported model's logits against kiln's (docs/onnx.md).

    PYTHONPATH=python python3 examples/onnx_export.py [--checkpoint gpt.safetensors] [--out gpt.onnx]
        [--sample 200] [--seed 0]

With the checkpoint examples/gpt.py writes, the trained model is exported and its vocabulary
decodes the sample; without one, a small untrained GPT is. Needs `pip install onnx onnxruntime`.

The GPT reads its input's sizes as numbers (idx.shape[1], x.shape), so its graph holds for one
input shape: the model is exported for a full context window. Attention is causal, so the
logits at position t depend only on tokens 0..t: a shorter prompt is padded at the end and the
logits are read at its last real position.
"""
import argparse
import os
import time

import numpy as np

import kiln
from gpt import GPT


def load_model(path):
    if path and os.path.exists(path):
        state, meta = kiln.load(path, with_metadata=True)
        cfg = {k: int(meta[k]) for k in ("layers", "d", "heads", "ctx")}
        chars = meta["vocab"]
        model = GPT(vocab=len(chars), **cfg)
        model.load_state_dict(state)
        return model, chars
    chars = "".join(chr(c) for c in range(32, 127)) + "\n"
    kiln.manual_seed(0)
    model = GPT(vocab=len(chars), ctx=64, d=64, heads=4, layers=2)
    model.init_gpt2_weights()
    return model, chars


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="gpt.safetensors")
    ap.add_argument("--out", default="gpt.onnx")
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    import onnxruntime as ort

    model, chars = load_model(a.checkpoint)
    model.eval()
    T = model.ctx
    window = kiln.tensor(np.random.default_rng(a.seed).integers(0, len(chars), (1, T)))
    t0 = time.time()
    kiln.onnx.export(model, (window,), a.out, input_names=["idx"], output_names=["logits"])
    print(f"exported {a.out} ({os.path.getsize(a.out) / 1e6:.1f} MB) in {time.time() - t0:.1f}s")

    sess = ort.InferenceSession(a.out, providers=["CPUExecutionProvider"])
    (logits,) = sess.run(None, {"idx": window.numpy()})
    with kiln.no_grad():
        want = model(window).numpy()
    print(f"onnxruntime vs kiln: max |logits difference| {np.abs(logits - want).max():.2e}")

    rng = np.random.default_rng(a.seed)
    ids = [chars.index("\n")] if "\n" in chars else [0]
    out = ""
    for _ in range(a.sample):
        ctx = ids[-T:]
        x = np.zeros((1, T), dtype=np.int64)
        x[0, :len(ctx)] = ctx
        (logits,) = sess.run(None, {"idx": x})
        z = logits[0, len(ctx) - 1] / 0.8
        p = np.exp(z - z.max())
        nxt = int(rng.choice(len(p), p=p / p.sum()))
        ids.append(nxt)
        out += chars[nxt]
    print(out)


if __name__ == "__main__":
    main()
