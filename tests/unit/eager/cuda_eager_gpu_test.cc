// Eager CUDA tensors on a GPU: each case of tiled_cases.h run by the dispatcher on CUDA tensors
// (the CUDA kernels of src/eager/cuda/) and compared with the CPU's reference kernel; then
// composites, autograd and the errors of mixed devices through the public API. Every test skips
// with "no CUDA GPU: <reason>" where there is none.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <chrono>

#include "runtime/cuda/driver.h"
#include "tests/unit/eager/tiled_cases.h"

namespace kiln {
namespace {

namespace rc = runtime::cuda;
const Device kGpu{DeviceType::CUDA, 0};

#define SKIP_WITHOUT_GPU() \
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason()

// The GPU's transcendental functions are kiln's own (the scalar header) but NVRTC contracts
// a * b + c into one FMA: an ulp or so apart from the CPU.
double gpu_tol(const test::TiledCase& c) { return std::max(c.tol, 1e-5); }

TEST(CudaGpuEager, EveryTiledCaseMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const auto t0 = std::chrono::steady_clock::now();
  int cases = 0;
  for (const test::TiledCase& c : test::tiled_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> got = ops::call_backend(test::on(c, kGpu));
    const std::vector<Tensor> want = ops::call_backend(test::on(c, kCPU));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].device(), kGpu);
      test::expect_same(got[i], want[i], gpu_tol(c), c.name);
    }
    ++cases;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ eager cuda ] %d cases in %.2f s (NVRTC on a cold disk cache, the cache's files on a warm one)\n", cases, s);
}

TEST(CudaGpuEager, CompositesRunTheirDecompositionOnTheGpu) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::rand_t({64, 300}, kFloat32);
  Tensor g = x.to(kGpu);
  test::expect_same(softmax(g, -1), softmax(x, -1), 1e-5, "softmax");
  test::expect_same(log_softmax(g, 1), log_softmax(x, 1), 1e-5, "log_softmax");
  test::expect_same(softmax(g, 0), softmax(x, 0), 1e-5, "softmax over dim 0 (the decomposition)");
  test::expect_same(softmax(test::rand_t({3, 20000}, kFloat32).to(kGpu), -1).cpu().sum(std::vector<int64_t>{1}),
                    ones({3}, kFloat32), 1e-5, "softmax of long rows (the decomposition)");
  // layer_norm's one-kernel form, and its gradient (the derivative formula's ops) on the GPU.
  const Tensor w = test::rand_t({300}, kFloat32), bias = test::rand_t({300}, kFloat32);
  Tensor xg = g.detach().requires_grad_(true), xc = x.detach().requires_grad_(true);
  Tensor yg = layer_norm(xg, {300}, w.to(kGpu), bias.to(kGpu)), yc = layer_norm(xc, {300}, w, bias);
  test::expect_same(yg, yc, 1e-5, "layer_norm");
  (yg * yg).sum().backward();
  (yc * yc).sum().backward();
  test::expect_same(xg.grad(), xc.grad(), 1e-4, "d layer_norm");
  test::expect_same(gelu(g), gelu(x), 1e-5, "gelu");
  test::expect_same(mean(g, std::vector<int64_t>{0}), mean(x, std::vector<int64_t>{0}), 1e-5, "mean");
  test::expect_same(relu(g) * 2 + 1, relu(x) * 2 + 1, 1e-6, "relu * 2 + 1");
  Tensor z = zeros({3, 4}, kFloat32, kGpu);
  EXPECT_EQ(z.device(), kGpu);
  EXPECT_EQ(z.cpu().to_vector<float>(), std::vector<float>(12, 0.f));
  EXPECT_EQ(ones({5}, kInt64, kGpu).sum().item<int64_t>(), 5);
}

TEST(CudaGpuEager, GradientsFlowOnTheGpu) {
  SKIP_WITHOUT_GPU();
  Tensor x = test::rand_t({8, 16}, kFloat32);
  Tensor w = x.to(kGpu).requires_grad_(true);
  Tensor loss = (w * w).sum() + tanh(w).sum();
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().device(), kGpu);
  Tensor want = x * 2 + (1 - tanh(x) * tanh(x));
  test::expect_same(w.grad(), want, 1e-5, "d/dw (w^2 + tanh w)");
  // Back across to(): the gradient of a CPU leaf moved to the GPU comes back to the CPU.
  Tensor leaf = x.clone().requires_grad_(true);
  (leaf.to(kGpu) * 3).sum().backward();
  EXPECT_TRUE(leaf.grad().device().is_cpu());
  test::expect_same(leaf.grad(), full({8, 16}, 3.0, kFloat32), 0, "grad across to()");
}

// What a language model's step needs besides matmul: embedding (index_select forward, index_put
// accumulate backward), cross_entropy (gather), cat / pad / flip, each with its gradient.
TEST(CudaGpuEager, EmbeddingCrossEntropyAndLayoutOpsWithGradients) {
  SKIP_WITHOUT_GPU();
  const Tensor w = test::rand_t({50, 16}, kFloat32), ids = test::rand_t({4, 9}, kInt64, 0, 49.49);
  const Tensor target = test::rand_t({36}, kInt64, 0, 15.49);
  auto step = [&](Device d) {
    Tensor wd = w.to(d).detach().requires_grad_(true);
    Tensor h = embedding(ids.to(d), wd).reshape({36, 16});
    h = cat({flip(h, std::vector<int64_t>{1}), pad(h, {0, 2}, "constant", 0.5)}, 1).slice(1, 0, 16) * 1.5;
    Tensor loss = cross_entropy(h, target.to(d));
    loss.backward();
    return std::pair{loss, wd.grad()};
  };
  auto [gl, gg] = step(kGpu);
  auto [cl, cg] = step(kCPU);
  EXPECT_EQ(gl.device(), kGpu);
  test::expect_same(gl, cl, 1e-5, "loss");
  test::expect_same(gg, cg, 1e-5, "d loss / d embedding weight");
}

TEST(CudaGpuEager, MixedDevicesAreAClearError) {
  SKIP_WITHOUT_GPU();
  Tensor g = ones({4}, kFloat32, kGpu), c = ones({4}, kFloat32);
  test::expect_error([&] { (void)(g + c); }, "expected all tensors on one device");
  // A 0-d CPU tensor joins, as in PyTorch.
  EXPECT_EQ((g * tensor<float>({2.f}).reshape({})).cpu().to_vector<float>(), std::vector<float>(4, 2.f));
  // An index out of range is checked before the launch (no device-side fault).
  test::expect_error([&] { (void)gather(g, 0, tensor<int64_t>({7}).to(kGpu)); }, "index 7 is out of bounds for dimension of size 4");
  // and the process goes on: the GPU still computes.
  EXPECT_EQ((g + g).cpu().to_vector<float>(), std::vector<float>(4, 2.f));
}

}  // namespace
}  // namespace kiln
