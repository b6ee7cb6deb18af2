"""kiln.tile from Python: the seed's vector_add written as in the issue, a masked row softmax, a
tiled matmul with a kernel-side K loop, against PyTorch; tracing, caching and errors."""
import inspect
import os
import re

import numpy as np
import pytest
import torch

import kiln


@kiln.tile.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: kiln.tile.constexpr):
    pid = kiln.tile.program_id(0)
    offs = pid * BLOCK + kiln.tile.arange(0, BLOCK)
    mask = offs < n
    kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs, mask=mask) + kiln.tile.load(y_ptr + offs, mask=mask), mask=mask)


@kiln.tile.jit
def softmax(x_ptr, out_ptr, cols, stride, BLOCK: kiln.tile.constexpr):
    row = kiln.tile.program_id(0)
    offs = kiln.tile.arange(0, BLOCK)
    mask = offs < cols
    x = kiln.tile.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    e = kiln.tile.exp(x - kiln.tile.max(x, axis=0))
    kiln.tile.store(out_ptr + row * stride + offs, e / kiln.tile.sum(e, axis=0), mask=mask)


@kiln.tile.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: kiln.tile.constexpr, BN: kiln.tile.constexpr, BK: kiln.tile.constexpr):
    rm = kiln.tile.program_id(0) * BM + kiln.tile.arange(0, BM)
    rn = kiln.tile.program_id(1) * BN + kiln.tile.arange(0, BN)
    rk = kiln.tile.arange(0, BK)

    def step(k, acc):
        ka = k + rk
        a = kiln.tile.load(a_ptr + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = kiln.tile.load(b_ptr + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        return kiln.tile.dot(a, b, acc)

    acc = kiln.tile.fori_loop(0, K, BK, step, kiln.tile.zeros((BM, BN)))
    kiln.tile.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def as_torch(t):
    return torch.from_dlpack(t)


def test_seed_vector_add_matches_torch():
    n = 3000  # not a multiple of BLOCK: the last program is masked
    x, y = kiln.randn(n), kiln.randn(n)
    out = kiln.zeros(n)
    vector_add[(kiln.tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    assert torch.equal(as_torch(out), as_torch(x) + as_torch(y))
    # The grid as a function of the meta-parameters, as Triton's.
    out2 = kiln.zeros(n)
    vector_add[lambda meta: (kiln.tile.cdiv(n, meta["BLOCK"]),)](x, y, out2, n, BLOCK=256)
    assert torch.equal(as_torch(out2), as_torch(x) + as_torch(y))


def test_softmax_matches_torch():
    rows, cols = 33, 700
    x = kiln.randn(rows, cols) * 4
    out = kiln.zeros(rows, cols)
    softmax[(rows,)](x, out, cols, cols, BLOCK=1024)
    np.testing.assert_allclose(out.numpy(), torch.softmax(as_torch(x), dim=1).numpy(), rtol=1e-6, atol=1e-7)


def test_tiled_matmul_matches_torch():
    M, N, K = 50, 70, 90
    a, b = kiln.randn(M, K), kiln.randn(K, N)
    c = kiln.zeros(M, N)
    matmul[(kiln.tile.cdiv(M, 32), kiln.tile.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16)
    np.testing.assert_allclose(c.numpy(), (as_torch(a) @ as_torch(b)).numpy(), rtol=1e-4, atol=1e-4)


def test_bfloat16_and_float16_through_a_kernel():
    @kiln.tile.jit
    def scale(x_ptr, out_ptr, BLOCK: kiln.tile.constexpr):
        offs = kiln.tile.arange(0, BLOCK)
        kiln.tile.store(out_ptr + offs, kiln.tile.load(x_ptr + offs) * 3 + 0.5)

    for dt, tdt in ((kiln.bfloat16, torch.bfloat16), (kiln.float16, torch.float16)):
        x = kiln.randn(64).to(dt)
        out = kiln.zeros(64, dtype=dt)
        scale[(1,)](x, out, BLOCK=64)
        # Each op rounds to the 16-bit format, as torch's eager ops do.
        assert torch.equal(as_torch(out), as_torch(x) * 3 + 0.5)


def test_traced_once_per_specialization():
    x, y = kiln.randn(100), kiln.randn(100)
    vector_add.cache.clear()
    for _ in range(3):
        vector_add[(1,)](x, y, kiln.zeros(100), 100, BLOCK=128)
    assert len(vector_add.cache) == 1
    vector_add[(1,)](x, y, kiln.zeros(100), 100, BLOCK=256)           # a new constexpr value
    vector_add[(1,)](x.double(), y.double(), kiln.zeros(100, dtype=kiln.float64), 100, BLOCK=128)  # new dtypes
    assert len(vector_add.cache) == 3
    # An int too wide for i32 specializes the parameter to i64.
    assert "%n: i64" in vector_add.ir(x, y, kiln.zeros(100), 1 << 40, BLOCK=128)
    assert "%n: i32" in vector_add.ir(x, y, kiln.zeros(100), 100, BLOCK=128)


def test_branches_and_reductions_in_a_kernel():
    @kiln.tile.jit
    def stats(x_ptr, out_ptr, idx_ptr, BLOCK: kiln.tile.constexpr):
        pid = kiln.tile.program_id(0)
        x = kiln.tile.load(x_ptr + pid * BLOCK + kiln.tile.arange(0, BLOCK))
        v = kiln.tile.cond(pid == 0, lambda: kiln.tile.sum(x), lambda: kiln.tile.max(x))
        kiln.tile.store(out_ptr + pid, v)
        kiln.tile.store(idx_ptr + pid, kiln.tile.argmax(x, 0))

    x = kiln.randn(4, 32)
    out, idx = kiln.zeros(4), kiln.zeros(4, dtype=kiln.int32)
    stats[(4,)](x, out, idx, BLOCK=32)
    t = as_torch(x)
    want = torch.cat([t[0].sum().reshape(1), t[1:].amax(1)])
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)  # a float sum near 0: rounding is absolute
    assert torch.equal(as_torch(idx).long(), t.argmax(1))


def test_a_shape_error_names_the_kernels_line():
    @kiln.tile.jit
    def bad(x_ptr, BLOCK: kiln.tile.constexpr):
        offs = kiln.tile.arange(0, BLOCK)
        kiln.tile.store(x_ptr + offs, kiln.tile.arange(0, 2 * BLOCK))

    line = inspect.getsourcelines(bad.fn)[1] + 3  # the store's line
    with pytest.raises(kiln.Error) as e:
        bad[(1,)](kiln.zeros(8), BLOCK=8)
    assert "cannot broadcast the shapes [8] and [16]" in str(e.value)
    assert e.value.op == "tile.store"
    assert e.value.file == __file__ and e.value.line == line


def test_launch_errors_are_clear():
    x = kiln.randn(10)
    with pytest.raises(kiln.Error, match="argument 1 .y_ptr. is a float64 tensor, the kernel takes ptr<f32>"):
        vector_add.compile(x, x, x, 10, BLOCK=16).launch((1,), [x, x.double(), x, 10])
    with pytest.raises(TypeError, match="missing argument n"):
        vector_add[(1,)](x, x, x, BLOCK=16)
    with pytest.raises(TypeError, match="launch vector_add on a grid"):
        vector_add(x, x, x, 10, BLOCK=16)
    with pytest.raises(TypeError, match="no Python truth value"):
        @kiln.tile.jit
        def branchy(x_ptr, n):
            if kiln.tile.program_id(0) < n:
                pass
        branchy[(1,)](x, 3)
    with pytest.raises(kiln.Error, match="inside a @kiln.tile.jit kernel"):
        kiln.tile.program_id(0)


def test_text_form_and_passes_from_python():
    text = vector_add.ir(kiln.zeros(4), kiln.zeros(4), kiln.zeros(4), 4, BLOCK=16)
    assert str(kiln.tile.parse(text)) == text
    c = kiln.tile.run_pipeline("default | c", text)
    assert "extern \"C\" void kiln_tile_vector_add" in c


def test_the_docs_examples_run():
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "tile.md")
    blocks = re.findall(r"```python\n(.*?)```", open(doc, encoding="utf-8").read(), flags=re.S)
    assert len(blocks) >= 2
    env = {"__name__": "docs_example"}
    for i, code in enumerate(blocks):
        exec(compile(code, f"{doc}:block{i}", "exec"), env)
