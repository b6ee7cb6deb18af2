"""The seed's vector_add written with kiln.tile (docs/tile.md), checked against eager kiln, then
registered as the custom op mylib::vector_add and called inside a compiled function (one graph,
no break, equal to eager; with backend "inductor" fused with the ops around it into one kernel); with --bench, vector_add and a masked row softmax on a 2048 x 4096 float32 tensor timed against
memory bandwidth (a copy of the same bytes) and against kiln eager.

    PYTHONPATH=python python3 examples/tile_vector_add.py [--bench]
"""
import argparse
import time

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


# The kernel as an op (the seed's triton_op): a function that launches it, and its meta.
@kiln.tile.op("mylib::vector_add")
def vector_add_op(x, y):
    out = kiln.empty_like(x)
    n = out.numel()
    vector_add[(kiln.tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out


@vector_add_op.register_fake
def _(x, y):
    if x.dtype != y.dtype or list(x.shape) != list(y.shape):
        raise ValueError(f"x and y must have one dtype and shape, got {x.dtype}{list(x.shape)} and {y.dtype}{list(y.shape)}")
    return kiln.empty_like(x)


@vector_add_op.register_autograd
def _(ctx, grad):
    return grad, grad


def best_ms(fn, reps=20):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--n", type=int, default=1_000_003)
    args = ap.parse_args()

    n = args.n
    x, y, out = kiln.randn(n), kiln.randn(n), kiln.empty(n)
    t0 = time.perf_counter()
    vector_add[(kiln.tile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    print(f"vector_add on {n} elements: first call (trace + cold compile) {time.perf_counter() - t0:.3f} s, "
          f"{'equal to' if kiln.equal(out, x + y) else 'DIFFERENT from'} x + y")
    k = vector_add.compile(x, y, out, n, BLOCK=1024)
    print(f"compile alone {k.compile_seconds:.3f} s ({'from the disk cache' if k.from_cache else 'compiled'}); "
          f"generated C++ in {k.source_path}")

    f = kiln.compile(lambda a, b: vector_add_op(a, b).relu() * 2, fullgraph=True)
    same = kiln.equal(f(x, y), (x + y).relu() * 2)
    e = f.explain()
    print(f"mylib::vector_add inside kiln.compile: {e.graph_count} graph, {len(e.breaks)} breaks, "
          f"{'equal to' if same else 'DIFFERENT from'} eager; the graph:\n{e.graphs[0]}")
    # With the code generator, the op's kernel is read as a function of the index: the mul before
    # it and the relu and add after it fuse with it into one kernel (the fusion log lists it).
    g = kiln.compile(lambda a, b: vector_add_op(a * 2, b).relu() + 1, backend="inductor", fullgraph=True)
    kiln.set_logs("fusion")
    got = g(x, y)
    kiln.set_logs("")
    print(f"the same inside kiln.compile(backend='inductor'), with neighbours: "
          f"{'equal to' if kiln.equal(got, (x * 2 + y).relu() + 1) else 'DIFFERENT from'} eager")
    if not args.bench:
        return

    rows, cols = 2048, 4096
    a, b, c = kiln.randn(rows, cols), kiln.randn(rows, cols), kiln.empty(rows, cols)
    numel, mb = rows * cols, rows * cols * 4 / 1e6
    grid = (kiln.tile.cdiv(numel, 1024),)
    copy_ms = best_ms(lambda: c.copy_(a))  # reads and writes the bytes of one tensor
    va_ms = best_ms(lambda: vector_add[grid](a, b, c, numel, BLOCK=1024))
    eager_add_ms = best_ms(lambda: kiln.add(a, b))
    softmax[(rows,)](a, c, cols, cols, BLOCK=cols)
    sm_ms = best_ms(lambda: softmax[(rows,)](a, c, cols, cols, BLOCK=cols))
    eager_sm_ms = best_ms(lambda: kiln.softmax(a, 1))
    print(f"{rows} x {cols} float32 ({mb:.0f} MB a tensor), median ms:")
    print(f"  copy (memory bandwidth)  {copy_ms:8.2f}  = {2 * mb / copy_ms:.1f} GB/s")
    print(f"  vector_add  tile {va_ms:8.2f}  = {3 * mb / va_ms:.1f} GB/s   eager add {eager_add_ms:8.2f}")
    print(f"  softmax     tile {sm_ms:8.2f}  = {2 * mb / sm_ms:.1f} GB/s   eager softmax {eager_sm_ms:8.2f}")


if __name__ == "__main__":
    main()
