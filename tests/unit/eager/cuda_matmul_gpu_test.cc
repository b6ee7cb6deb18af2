// matmul on CUDA tensors (src/eager/cuda/matmul.cc, on cuBLASLt loaded at run time) against the
// CPU's matmul of the same values: shapes, operand layouts (transposed in place, strided and
// copied), 1-d operands, batches and their broadcasting, empty sizes, dtypes, autograd, a second
// stream, and the integer error. CudaGpuMatmul.* need a GPU and skip, saying why, without one
// (ctest label gpu). CudaBlasLt.* need only libcublasLt and run wherever it loads (CI too).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda/cublas_lt.h"
#include "runtime/cuda/driver.h"
#include "support/test_util.h"

namespace kiln {
namespace {

namespace rc = runtime::cuda;
namespace lt = runtime::cuda::blaslt;
const Device kGpu{DeviceType::CUDA, 0};

#define SKIP_WITHOUT_GPU()                                                                                 \
  if (!runtime::cuda::available()) GTEST_SKIP() << "no CUDA GPU: " << runtime::cuda::unavailable_reason(); \
  if (!lt::available()) GTEST_SKIP() << "no cuBLASLt: " << lt::unavailable_reason()

// Tolerances against the CPU (relative to 1 + |reference|): float32 stays full float32 on the GPU
// (TF32 would miss 1e-4 at these sizes), 16-bit results may round one ulp apart.
double tol(DType d) {
  switch (d) {
    case kFloat16:
    case kBFloat16: return 2e-2;
    case kFloat64: return 1e-10;
    default: return 1e-4;
  }
}

void expect_close_to(const Tensor& got, const Tensor& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = got.cpu().to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> w = want.cpu().to(kFloat64).contiguous().to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::abs(g[i] - w[i]) <= tolerance * (1 + std::abs(w[i]))))
      ++bad, ADD_FAILURE() << what << " [" << i << "]: got " << g[i] << ", the CPU " << w[i];
}

// matmul of two GPU tensors (any layout) against the CPU's matmul of their values.
void expect_matmul_matches_cpu(const Tensor& x, const Tensor& y, const std::string& what) {
  ASSERT_EQ(x.device(), kGpu) << what;
  const Tensor got = matmul(x, y);
  EXPECT_EQ(got.device(), kGpu) << what;
  expect_close_to(got, matmul(x.cpu(), y.cpu()), tol(x.dtype()), what);
}

Tensor gpu_rand(const Shape& shape, DType dtype = kFloat32) { return test::random_tensor(shape, dtype).to(kGpu); }

TEST(CudaGpuMatmul, SquareAndOddShapes) {
  SKIP_WITHOUT_GPU();
  expect_matmul_matches_cpu(gpu_rand({64, 64}), gpu_rand({64, 64}), "64x64 @ 64x64");
  expect_matmul_matches_cpu(gpu_rand({37, 45}), gpu_rand({45, 29}), "37x45 @ 45x29");
  expect_matmul_matches_cpu(gpu_rand({1, 1}), gpu_rand({1, 1}), "1x1 @ 1x1");
  expect_matmul_matches_cpu(gpu_rand({1, 300}), gpu_rand({300, 1}), "1x300 @ 300x1");
  expect_matmul_matches_cpu(gpu_rand({8, 4096}), gpu_rand({4096, 8}), "8x4096 @ 4096x8 (long k)");
  expect_matmul_matches_cpu(gpu_rand({300, 257}), gpu_rand({257, 513}), "300x257 @ 257x513");
}

TEST(CudaGpuMatmul, TransposedOperandsAreReadInPlace) {
  SKIP_WITHOUT_GPU();
  const Tensor xt = gpu_rand({45, 37}).t(), yt = gpu_rand({29, 45}).t();  // 37x45 and 45x29, column-major
  ASSERT_FALSE(xt.is_contiguous());
  const Tensor x = gpu_rand({37, 45}), y = gpu_rand({45, 29});
  expect_matmul_matches_cpu(xt, y, "x.t() @ y");
  expect_matmul_matches_cpu(x, yt, "x @ y.t()");
  expect_matmul_matches_cpu(xt, yt, "x.t() @ y.t()");
  expect_matmul_matches_cpu(x, x.t(), "x @ x.t() (one storage)");
  // A row of a wider matrix: row-major with a leading dimension past its columns.
  const Tensor wide = gpu_rand({37, 64});
  expect_matmul_matches_cpu(wide.slice(1, 0, 45), y, "x[:, :45] @ y");
  expect_matmul_matches_cpu(gpu_rand({64, 37}).slice(0, 3, 48).t(), y, "x[3:48].t() @ y");
}

TEST(CudaGpuMatmul, VectorOperands) {
  SKIP_WITHOUT_GPU();
  const Tensor v = gpu_rand({45}), w = gpu_rand({45});
  expect_matmul_matches_cpu(v, gpu_rand({45, 29}), "1-d @ 2-d");
  expect_matmul_matches_cpu(gpu_rand({37, 45}), v, "2-d @ 1-d");
  const Tensor dot = matmul(v, w);
  EXPECT_EQ(dot.dim(), 0);
  expect_matmul_matches_cpu(v, w, "1-d @ 1-d");
  expect_matmul_matches_cpu(v, gpu_rand({3, 45, 29}), "1-d @ 3-d");
  expect_matmul_matches_cpu(gpu_rand({3, 37, 45}), v, "3-d @ 1-d");
  const Tensor strided = gpu_rand({90}).slice(0, 0, std::nullopt, 2);  // stride 2
  expect_matmul_matches_cpu(strided, gpu_rand({45, 29}), "strided 1-d @ 2-d");
  expect_matmul_matches_cpu(gpu_rand({37, 45}), strided, "2-d @ strided 1-d");
  expect_matmul_matches_cpu(strided, strided, "strided 1-d @ itself");
}

TEST(CudaGpuMatmul, BatchedProducts) {
  SKIP_WITHOUT_GPU();
  expect_matmul_matches_cpu(gpu_rand({5, 37, 45}), gpu_rand({5, 45, 29}), "3-d @ 3-d");
  expect_matmul_matches_cpu(gpu_rand({2, 3, 37, 45}), gpu_rand({2, 3, 45, 29}), "4-d @ 4-d");
  expect_matmul_matches_cpu(gpu_rand({4, 37, 45}), gpu_rand({45, 29}), "3-d @ 2-d (rows stacked)");
  expect_matmul_matches_cpu(gpu_rand({37, 45}), gpu_rand({4, 45, 29}), "2-d @ 3-d");
  expect_matmul_matches_cpu(gpu_rand({5, 45, 37}).transpose(1, 2), gpu_rand({5, 29, 45}).transpose(1, 2),
                            "transposed batches");
  expect_matmul_matches_cpu(gpu_rand({4, 45, 37}).transpose(1, 2), gpu_rand({45, 29}), "transposed batch @ 2-d");
  // Attention's heads: [batch, tokens, heads, dim] viewed as [batch, heads, tokens, dim]: the
  // heads' matrices interleave (a batch stride below a matrix's extent).
  const Tensor q = gpu_rand({2, 33, 4, 16}).transpose(1, 2), k = gpu_rand({2, 33, 4, 16}).transpose(1, 2);
  expect_matmul_matches_cpu(q, k.transpose(2, 3), "q @ k^T over heads");
}

TEST(CudaGpuMatmul, BroadcastBatches) {
  SKIP_WITHOUT_GPU();
  expect_matmul_matches_cpu(gpu_rand({4, 1, 5, 6}), gpu_rand({3, 6, 7}), "4x1x5x6 @ 3x6x7");
  expect_matmul_matches_cpu(gpu_rand({1, 5, 6}), gpu_rand({3, 6, 7}), "1x5x6 @ 3x6x7");
  expect_matmul_matches_cpu(gpu_rand({2, 3, 5, 6}), gpu_rand({6, 7}), "2x3x5x6 @ 6x7");
  expect_matmul_matches_cpu(gpu_rand({3, 1, 5, 6}), gpu_rand({1, 4, 6, 7}), "3x1x5x6 @ 1x4x6x7");
  const Tensor y = gpu_rand({6, 7}).expand({3, 6, 7});  // batch stride 0, no copy
  expect_matmul_matches_cpu(gpu_rand({3, 5, 6}), y, "3x5x6 @ expanded 6x7");
}

TEST(CudaGpuMatmul, NonContiguousOperandsAreCopied) {
  SKIP_WITHOUT_GPU();
  // Every other column: neither stride is 1, so cuBLAS cannot read it in place.
  const Tensor x = gpu_rand({37, 90}).slice(1, 0, std::nullopt, 2);
  ASSERT_EQ(x.stride(1), 2);
  expect_matmul_matches_cpu(x, gpu_rand({45, 29}), "x[:, ::2] @ y");
  expect_matmul_matches_cpu(gpu_rand({29, 37}), x, "y @ x[:, ::2]");
  const Tensor y3 = gpu_rand({5, 45, 58}).slice(2, 0, std::nullopt, 2);
  expect_matmul_matches_cpu(gpu_rand({5, 37, 45}), y3, "3-d @ y[..., ::2]");
  // A row broadcast down the matrix (row stride 0).
  expect_matmul_matches_cpu(gpu_rand({1, 45}).expand({37, 45}), gpu_rand({45, 29}), "expanded rows @ y");
}

TEST(CudaGpuMatmul, EmptySizes) {
  SKIP_WITHOUT_GPU();
  for (DType d : {kFloat32, kBFloat16}) {
    const Tensor z = matmul(gpu_rand({3, 0}, d), gpu_rand({0, 4}, d));  // k == 0: a sum of nothing
    EXPECT_EQ(z.device(), kGpu);
    EXPECT_EQ(z.sizes(), (Shape{3, 4}));
    EXPECT_EQ(z.cpu().to(kFloat64).to_vector<double>(), std::vector<double>(12, 0.0)) << name(d);
  }
  EXPECT_EQ(matmul(gpu_rand({5, 0}), gpu_rand({0})).cpu().to_vector<float>(), std::vector<float>(5, 0.f));
  EXPECT_EQ(matmul(gpu_rand({0}), gpu_rand({0})).cpu().item<float>(), 0.f);
  EXPECT_EQ(matmul(gpu_rand({0, 5}), gpu_rand({5, 4})).sizes(), (Shape{0, 4}));
  EXPECT_EQ(matmul(gpu_rand({3, 5}), gpu_rand({5, 0})).sizes(), (Shape{3, 0}));
  EXPECT_EQ(matmul(gpu_rand({0, 3, 5}), gpu_rand({5, 4})).sizes(), (Shape{0, 3, 4}));
}

TEST(CudaGpuMatmul, HalfBfloatAndDouble) {
  SKIP_WITHOUT_GPU();
  for (DType d : {kFloat16, kBFloat16, kFloat64}) {
    SCOPED_TRACE(name(d));
    const Tensor x = gpu_rand({37, 45}, d), y = gpu_rand({45, 29}, d);
    EXPECT_EQ(matmul(x, y).dtype(), d);
    expect_matmul_matches_cpu(x, y, "37x45 @ 45x29");
    expect_matmul_matches_cpu(gpu_rand({45, 37}, d).t(), y, "x.t() @ y");
    expect_matmul_matches_cpu(gpu_rand({64, 128}, d), gpu_rand({128, 64}, d), "64x128 @ 128x64");
    expect_matmul_matches_cpu(gpu_rand({4, 1, 5, 6}, d), gpu_rand({3, 6, 7}, d), "broadcast batch");
    expect_matmul_matches_cpu(gpu_rand({45}, d), y, "1-d @ 2-d");
  }
}

TEST(CudaGpuMatmul, GradientsOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const Tensor xc = test::random_tensor({4, 37, 45}, kFloat32), wc = test::random_tensor({45, 29}, kFloat32);
  const Tensor c = test::random_tensor({4, 37, 29}, kFloat32);
  // On the GPU: the derivative multiplies again (by transposed views) and sums the batch out.
  Tensor x = xc.to(kGpu).requires_grad_(true), w = wc.to(kGpu).requires_grad_(true);
  (matmul(x, w) * c.to(kGpu)).sum().backward();
  // The same on the CPU.
  Tensor xr = xc.clone().requires_grad_(true), wr = wc.clone().requires_grad_(true);
  (matmul(xr, wr) * c).sum().backward();
  ASSERT_TRUE(x.grad().defined() && w.grad().defined());
  EXPECT_EQ(x.grad().device(), kGpu);
  EXPECT_EQ(w.grad().device(), kGpu);
  expect_close_to(x.grad(), xr.grad(), 1e-4, "d/dx");
  expect_close_to(w.grad(), wr.grad(), 1e-4, "d/dw");

  // A batch that broadcasts, a vector, and the sum's gradient (an expanded tensor: copied).
  const Tensor ac = test::random_tensor({3, 1, 5, 6}, kFloat32), vc = test::random_tensor({6}, kFloat32);
  Tensor ag = ac.to(kGpu).requires_grad_(true), vg = vc.to(kGpu).requires_grad_(true);
  matmul(ag, vg).sum().backward();
  Tensor ar = ac.clone().requires_grad_(true), vr = vc.clone().requires_grad_(true);
  matmul(ar, vr).sum().backward();
  expect_close_to(ag.grad(), ar.grad(), 1e-4, "d/da of a @ v");
  expect_close_to(vg.grad(), vr.grad(), 1e-4, "d/dv of a @ v");
}

TEST(CudaGpuMatmul, RunsOnTheCurrentStream) {
  SKIP_WITHOUT_GPU();
  const Tensor x = gpu_rand({128, 96}), y = gpu_rand({96, 64});
  const Tensor want = matmul(x.cpu(), y.cpu());
  // Kept for the process: the caching allocator's blocks freed on it still name it.
  static const rc::Stream side = rc::stream_create(0);
  const rc::Stream before = rc::current_stream(0);
  rc::set_current_stream(0, side);
  const Tensor got = matmul(x, y);  // (its own cuBLASLt workspace: products on two streams may overlap)
  rc::stream_synchronize(side);
  rc::set_current_stream(0, before);
  expect_close_to(got, want, 1e-4, "a product queued on a second stream");
}

TEST(CudaGpuMatmul, IntegerMatmulIsAClearError) {
  SKIP_WITHOUT_GPU();
  for (DType d : {kInt64, kInt32}) {
    const Tensor x = test::random_tensor({3, 4}, d).to(kGpu), y = test::random_tensor({4, 5}, d).to(kGpu);
    test::expect_error([&] { (void)matmul(x, y); }, "integer matmul has no CUDA kernel");
  }
  // and the GPU goes on multiplying floats.
  expect_matmul_matches_cpu(gpu_rand({3, 4}), gpu_rand({4, 5}), "after the error");
}

// --- the library alone: loads without a GPU (CI has libcublasLt).

TEST(CudaBlasLt, LoadsAndReportsItsVersion) {
  if (!lt::available()) GTEST_SKIP() << "no cuBLASLt: " << lt::unavailable_reason();
  EXPECT_GE(lt::version(), size_t(120000)) << "cuBLASLt " << lt::version() << " from " << lt::library_path();
  EXPECT_FALSE(lt::library_path().empty());
  EXPECT_TRUE(lt::unavailable_reason().empty());
}

TEST(CudaBlasLt, RejectsWhatItCannotMultiply) {
  if (!lt::available()) GTEST_SKIP() << "no cuBLASLt: " << lt::unavailable_reason();
  lt::Gemm g;
  g.m = g.n = g.k = 4;
  g.a.ld = g.b.ld = g.d.ld = 4;
  g.dtype = kInt32;
  test::expect_error([&] { lt::matmul(g); }, "cuBLASLt matmul: int32 is not supported");
  g.dtype = kFloat32;
  g.a.ld = 3;
  test::expect_error([&] { lt::matmul(g); }, "leading dimensions 3, 4, 4 are below the stored rows 4, 4, 4");
  g.a.ld = 4;
  g.k = 0;
  test::expect_error([&] { lt::matmul(g); }, "m, n and k must be in [1, 2^31)");
}

TEST(CudaBlasLt, NoGpuIsAClearErrorAtFirstProduct) {
  if (!lt::available()) GTEST_SKIP() << "no cuBLASLt: " << lt::unavailable_reason();
  if (rc::available()) GTEST_SKIP() << "a CUDA GPU is present: CudaGpuMatmul runs on it";
  lt::Gemm g;
  g.m = g.n = g.k = 4;
  g.a.ld = g.b.ld = g.d.ld = 4;
  test::expect_error([&] { lt::matmul(g); }, "no CUDA GPU");
}

}  // namespace
}  // namespace kiln
