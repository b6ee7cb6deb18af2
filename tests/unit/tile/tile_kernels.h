// Kernels the tile tests share, written with the C++ builder (tile/builder.h): the seed's
// vector_add, a masked row softmax, a tiled matmul with a K loop.
#pragma once
#include "tile/builder.h"

namespace kiln::tile::test {

// out[i] = x[i] + y[i] for i < n; one program per BLOCK elements.
inline Program vector_add(int64_t block = 1024, DType d = kFloat32) {
  Builder b("vector_add");
  auto x = b.arg_ptr("x", d), y = b.arg_ptr("y", d), out = b.arg_ptr("out", d);
  auto n = b.arg_int("n");
  const int64_t BLOCK = b.constexpr_int("BLOCK", block);
  auto pid = b.program_id(0);
  auto offs = pid * BLOCK + b.arange(0, BLOCK);
  auto m = offs < n;
  b.store(out + offs, b.load(x + offs, m) + b.load(y + offs, m), m);
  return b.finish();
}

// One program per row of x[rows, cols] (row stride `stride`): out = softmax(x) along the row,
// BLOCK >= cols (masked).
inline Program softmax(int64_t block = 1024) {
  Builder b("softmax");
  auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kFloat32);
  auto cols = b.arg_int("cols"), stride = b.arg_int("stride");
  const int64_t BLOCK = b.constexpr_int("BLOCK", block);
  auto row = b.program_id(0);
  auto offs = b.arange(0, BLOCK);
  auto m = offs < cols;
  auto v = b.load(x + row * stride + offs, m, -INFINITY);
  auto e = b.exp(v - b.max(v, 0));
  b.store(out + row * stride + offs, e / b.sum(e, 0), m);
  return b.finish();
}

// c[M, N] = a[M, K] @ b[K, N] (row-major, strides given), one program per BM x BN tile of c.
inline Program matmul(int64_t bm = 32, int64_t bn = 32, int64_t bk = 16) {
  Builder b("matmul");
  auto a = b.arg_ptr("a", kFloat32), bp = b.arg_ptr("b", kFloat32), c = b.arg_ptr("c", kFloat32);
  auto M = b.arg_int("M"), N = b.arg_int("N"), K = b.arg_int("K");
  auto sam = b.arg_int("stride_am"), sbk = b.arg_int("stride_bk"), scm = b.arg_int("stride_cm");
  const int64_t BM = b.constexpr_int("BM", bm), BN = b.constexpr_int("BN", bn), BK = b.constexpr_int("BK", bk);
  auto pm = b.program_id(0), pn = b.program_id(1);
  auto rm = pm * BM + b.arange(0, BM);
  auto rn = pn * BN + b.arange(0, BN);
  auto rk = b.arange(0, BK);
  auto acc0 = b.zeros({BM, BN});
  auto acc = b.for_loop(0, K, BK, {acc0}, [&](Val k, const std::vector<Val>& carried) {
    auto ka = k + rk;
    auto am = (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K);
    auto bmask = (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N);
    auto at = b.load(a + rm.expand_dims(1) * sam + ka.expand_dims(0), am, 0.0);
    auto bt = b.load(bp + ka.expand_dims(1) * sbk + rn.expand_dims(0), bmask, 0.0);
    return std::vector<Val>{b.dot(at, bt, carried[0])};
  })[0];
  auto cm = (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N);
  b.store(c + rm.expand_dims(1) * scm + rn.expand_dims(0), acc, cm);
  return b.finish();
}

}  // namespace kiln::tile::test
