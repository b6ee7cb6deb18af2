// CPU kernel of matmul: OpenBLAS gemm per batch on the operands' own strides (a transposed
// matrix becomes a trans flag, not a copy); 16-bit floats computed in float32; integers by a
// plain loop.
#include <cblas.h>
#include <kiln/ops.h>

#include <climits>
#include <optional>

#include "eager/cpu/loops.h"
#include "eager/matmul_operand.h"
#include "ops/dispatch.h"

namespace kiln::eager::cpu {
namespace {

using Mat = MatmulOperand;

// Element offset of each batch (row-major over the batch shape).
std::vector<int64_t> batch_offsets(const Shape& batch, const std::vector<int64_t>& bst) {
  const int64_t nb = numel_of(batch);
  std::vector<int64_t> off(size_t(nb), 0);
  for (int64_t b = 0; b < nb; ++b) {
    int64_t rem = b, o = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      o += (rem % batch[d]) * bst[d];
      rem /= batch[d];
    }
    off[size_t(b)] = o;
  }
  return off;
}

// If x's batch dims stack onto its rows with one row stride (and y has no batch), the whole
// product is a single gemm with rows = batches * rows; returns that row stride.
std::optional<int64_t> rows_stack(const Mat& x, const Mat& y, const Shape& batch) {
  for (int64_t s : y.batch_strides)
    if (s != 0) return std::nullopt;
  if (x.col_stride != 1 && x.cols != 1) return std::nullopt;
  int64_t stride = x.row_stride, expect = -1;
  if (x.rows == 1) {  // the row stride is the innermost batch stride
    for (size_t d = batch.size(); d-- > 0 && expect < 0;)
      if (batch[d] != 1) expect = stride = x.batch_strides[d];
  } else {
    expect = x.row_stride * x.rows;
  }
  if (stride < std::max<int64_t>(x.cols, 1) || stride > INT_MAX) return std::nullopt;
  for (size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    if (x.batch_strides[d] != expect) return std::nullopt;
    expect *= batch[d];
  }
  return stride;
}

template <class T>
void gemm(const Mat& x, const Mat& y, int64_t m, int64_t n, int64_t k, const T* a, const T* b, T* c) {
  const auto ta = x.col_major ? CblasTrans : CblasNoTrans, tb = y.col_major ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(x.ld), b, int(y.ld), 0.0f, c, int(n));
  else
    cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(x.ld), b, int(y.ld), 0.0, c, int(n));
}

template <class T>
void blas_matmul(Tensor x, Tensor y, const Tensor& out, const Shape& batch) {
  Mat mx = matmul_operand(x, true, batch), my = matmul_operand(y, false, batch);
  if (!read_in_place(mx)) mx = matmul_operand(x = x.contiguous(), true, batch), read_in_place(mx);
  if (!read_in_place(my)) my = matmul_operand(y = y.contiguous(), false, batch), read_in_place(my);
  const int64_t m = mx.rows, k = mx.cols, n = my.cols, nb = numel_of(batch);
  T* o = out.data<T>();
  const T* a = reinterpret_cast<const T*>(mx.base);
  const T* b = reinterpret_cast<const T*>(my.base);
  if (auto stride = nb > 1 ? rows_stack(mx, my, batch) : std::nullopt)
    if (nb * m <= INT_MAX && n <= INT_MAX && k <= INT_MAX) {
      Mat stacked = mx;
      stacked.col_major = false;
      stacked.ld = *stride;
      gemm<T>(stacked, my, nb * m, n, k, a, b, o);
      return;
    }
  KILN_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "matmul: matrix too large for BLAS");
  const std::vector<int64_t> ox = batch_offsets(batch, mx.batch_strides), oy = batch_offsets(batch, my.batch_strides);
  // Batches of small or mid-sized products (attention's per-head products, 256x256x64): one
  // thread per product, each gemm single-threaded (OpenBLAS's threads inside a product this
  // small cost more to start and synchronise than they save). A few large products: one at a
  // time, OpenBLAS threads inside each. (max_threads: one thread on an oversubscribed machine.)
  const double work = double(m) * double(n) * double(k);
  const int threads = max_threads();
  const bool by_batch = nb > 1 && threads > 1 && (work < 262144.0 || (work <= double(1 << 26) && nb >= 2 * threads));
  auto product = [&](int64_t i) { gemm<T>(mx, my, m, n, k, a + ox[size_t(i)], b + oy[size_t(i)], o + i * m * n); };
  if (by_batch) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < nb; ++i) product(i);
    return;
  }
  // Outside any OpenMP region: OpenBLAS's threads inside a product then come from the process's
  // thread pool. (Under an inactive region, `parallel for if (false)`, each gemm's region was a
  // nested team, and libgomp starts fresh threads for nested teams: one pthread_create per call.)
  for (int64_t i = 0; i < nb; ++i) product(i);
}

template <class T>
void loop_matmul(const Tensor& x, const Tensor& y, const Tensor& out, const Shape& batch) {
  const Mat mx = matmul_operand(x, true, batch), my = matmul_operand(y, false, batch);
  const int64_t m = mx.rows, k = mx.cols, n = my.cols, nb = numel_of(batch);
  const std::vector<int64_t> ox = batch_offsets(batch, mx.batch_strides), oy = batch_offsets(batch, my.batch_strides);
  const T* a = reinterpret_cast<const T*>(mx.base);
  const T* b = reinterpret_cast<const T*>(my.base);
  T* o = out.data<T>();
  // Unsigned accumulation: wraps like the dtype's own arithmetic, without signed overflow UB.
#pragma omp parallel for if (nb * m * n * k > 32768) schedule(static)
  for (int64_t bi = 0; bi < nb * m; ++bi) {
    const int64_t bt = bi / m, i = bi % m;
    std::vector<uint64_t> acc(size_t(n), 0);
    const T* arow = a + ox[size_t(bt)] + i * mx.row_stride;
    for (int64_t kk = 0; kk < k; ++kk) {
      const uint64_t av = uint64_t(int64_t(arow[kk * mx.col_stride]));
      const T* brow = b + oy[size_t(bt)] + kk * my.row_stride;
      for (int64_t j = 0; j < n; ++j) acc[size_t(j)] += av * uint64_t(int64_t(brow[j * my.col_stride]));
    }
    T* orow = o + bi * n;
    for (int64_t j = 0; j < n; ++j) orow[j] = T(int64_t(acc[size_t(j)]));
  }
}

KILN_KERNEL(matmul) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  // The output's batch shape: its dims minus the matrix dims that survive.
  const int64_t mat_dims = (x.dim() >= 2) + (y.dim() >= 2);
  const Shape batch(out.sizes().begin(), out.sizes().end() - mat_dims);
  const int64_t k = x.size(-1);
  if (k == 0) return {out.fill_(0)};
  const DType dt = out.dtype();
  if (dt == kFloat32 || dt == kFloat64) {
    if (dt == kFloat32) blas_matmul<float>(x, y, out, batch);
    else blas_matmul<double>(x, y, out, batch);
  } else if (dt == kFloat16 || dt == kBFloat16) {
    TensorSpec fs = specs[0];
    fs.dtype = kFloat32;
    Tensor tmp = make_tensor(fs);
    blas_matmul<float>(x.to(kFloat32), y.to(kFloat32), tmp, batch);
    copy_into(out, tmp);
  } else {
    visit_all(dt, [&]<class T>(type_tag<T>) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) loop_matmul<T>(x, y, out, batch);
      else detail::fail(std::string("matmul: not implemented for ") + name(dt));
    });
  }
  return {out};
}

}  // namespace
}  // namespace kiln::eager::cpu
