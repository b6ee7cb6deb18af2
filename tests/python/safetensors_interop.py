"""Cross-checks kiln's safetensors files with the reference `safetensors` package.

  safetensors_interop.py write PATH   writes the reference tensors with safetensors.numpy
  safetensors_interop.py check PATH   loads PATH (written by kiln) and checks it holds them
The reference tensors are defined here, independently of kiln: value i of each is (i * 7 % 13) - 6
cast to its dtype, with the shapes below.
"""
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

SHAPES = {"f32": ((2, 3), np.float32), "f64": ((4,), np.float64), "f16": ((3, 2), np.float16),
          "i64": ((5,), np.int64), "i32": ((2, 2), np.int32), "u8": ((3,), np.uint8), "b": ((4,), np.bool_)}


def reference():
    out = {}
    for name, (shape, dt) in SHAPES.items():
        n = int(np.prod(shape))
        v = np.array([(i * 7 % 13) - 6 for i in range(n)], dtype=np.float64)
        if dt == np.uint8:
            v = np.abs(v)
        out[name] = (v != 0 if dt == np.bool_ else v).astype(dt).reshape(shape)
    return out


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "write":
        save_file(reference(), path, metadata={"writer": "safetensors"})
        return 0
    got = load_file(path)
    ref = reference()
    if set(got) != set(ref):
        print(f"names differ: {sorted(got)} vs {sorted(ref)}")
        return 1
    for k, v in ref.items():
        if got[k].dtype != v.dtype or got[k].shape != v.shape or not np.array_equal(got[k], v):
            print(f"{k}: got {got[k].dtype}{got[k].shape} {got[k].ravel().tolist()}, want {v.dtype}{v.shape} {v.ravel().tolist()}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
