// The eager kernels generated through the tile layer (src/eager/tile/), without a GPU: each case
// of tiled_cases.h runs an op's tiled launches on the CPU backend over CPU tensors and compares
// the result with the CPU's reference kernel (ops::call_backend), elementwise, NaN matching NaN. The same programs compile through NVRTC for sm_90a (TiledCuda below), so a
// codegen error in the CUDA of an eager kernel shows in CI; the GPU tests run them on the device
// (tests/unit/eager/cuda_eager_gpu_test.cc).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <map>

#include "eager/tile/tiled.h"
#include "ops/dispatch.h"
#include "runtime/cuda/nvrtc.h"
#include "tests/unit/eager/tiled_cases.h"
#include "tile/cpu/kernel.h"
#include "tile/cuda/emit_cuda.h"
#include "tile/passes/passes.h"

namespace kiln {
namespace {

using eager::tiled::Launch;
using eager::tiled::Runner;
using ops::OpId;

// The launches' programs of every case, by key (built once each).
std::map<std::string, tile::Program> programs_of(const std::vector<test::TiledCase>& cases) {
  std::map<std::string, tile::Program> programs;
  const Runner collect = [&](const Launch& l) {
    if (!programs.count(l.key)) programs.emplace(l.key, l.build());
  };
  for (const test::TiledCase& c : cases) test::run_tiled(test::on(c, kCPU), collect);
  return programs;
}

TEST(Tiled, EveryCaseMatchesTheReferenceKernelOnTheCpuBackend) {
  const std::vector<test::TiledCase> cases = test::tiled_cases();
  std::map<std::string, tile::Program> programs = programs_of(cases);
  // One group compile (names must differ within it: each program is named by its key's index).
  std::vector<std::string> keys;
  std::vector<tile::Program> group;
  for (auto& [key, p] : programs) {
    p.name = "k" + std::to_string(keys.size());
    keys.push_back(key);
    group.push_back(std::move(p));
  }
  const std::vector<tile::cpu::Kernel> compiled = tile::cpu::compile_group(std::move(group));
  std::map<std::string, const tile::cpu::Kernel*> kernels;
  for (size_t i = 0; i < keys.size(); ++i) kernels[keys[i]] = &compiled[i];
  int launches = 0;
  const Runner run = [&](const Launch& l) {
    ++launches;
    std::vector<tile::cpu::Arg> args;
    for (const eager::tiled::KernelArg& a : l.args) {
      if (a.kind == eager::tiled::KernelArg::Kind::Tensor) args.emplace_back(a.tensor);
      else if (a.kind == eager::tiled::KernelArg::Kind::Int) args.emplace_back(a.i);
      else args.emplace_back(a.f);
    }
    kernels.at(l.key)->launch(tile::cpu::Grid(l.grid), args);
  };
  for (const test::TiledCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<Tensor> got = test::run_tiled(test::on(c, kCPU), run);
    const std::vector<Tensor> want = ops::call_backend(test::on(c, kCPU));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) test::expect_same(got[i], want[i], c.tol, c.name);
  }
  EXPECT_GE(launches, int(cases.size()) - 1);  // (sum over an empty dim launches nothing)
}

TEST(Tiled, CollapsingMergesDimsEveryViewStepsOverAsOne) {
  // A contiguous [2, 3, 4] and a [2, 3, 4] view of a [2, 3, 8] buffer: the first two dims merge
  // for both, the last does not.
  const eager::tiled::Collapsed c = eager::tiled::collapse({2, 3, 4}, {{12, 4, 1}, {24, 8, 1}});
  EXPECT_EQ(c.sizes, (Shape{6, 4}));
  EXPECT_EQ(c.strides[0], (Shape{4, 1}));
  EXPECT_EQ(c.strides[1], (Shape{8, 1}));
  // Size-1 dims drop; a broadcast (stride 0) dim merges only with another broadcast one.
  const eager::tiled::Collapsed b = eager::tiled::collapse({1, 5, 1, 3}, {{15, 3, 3, 1}, {0, 1, 0, 0}});
  EXPECT_EQ(b.sizes, (Shape{5, 3}));
  EXPECT_EQ(b.strides[1], (Shape{1, 0}));
  EXPECT_EQ(eager::tiled::collapse({}, {{}}).sizes, (Shape{1}));
}

TEST(Tiled, IntegerDivisionByZeroRaisesAsOnTheCpu) {
  const ops::Args a{OpId::remainder, {tensor<int32_t>({1, 2, 3}), tensor<int32_t>({1, 0, 2})}};
  test::expect_error([&] { test::run_tiled(a, [](const Launch&) {}); }, "integer modulo by zero");
}

TEST(Tiled, AnIndexOutOfRangeRaisesBeforeAnyLaunch) {
  int launches = 0;
  const Runner count = [&](const Launch&) { ++launches; };
  const ops::Args g{OpId::gather, {tensor<float>({1, 2, 3}), int64_t(0), tensor<int64_t>({0, 3})}};
  test::expect_error([&] { test::run_tiled(g, count); }, "gather: index 3 is out of bounds for dimension of size 3");
  const ops::Args p{OpId::index_put, {tensor<float>({1, 2, 3}), std::vector<Tensor>{tensor<int64_t>({-4})}, tensor<float>({0}), true}};
  test::expect_error([&] { test::run_tiled(p, count); }, "index_put: index -4 is out of bounds");
  EXPECT_LE(launches, 1);  // (index_put's copy of self may run; no indexed launch does)
}

TEST(TiledCuda, EveryCaseCompilesWithNvrtcForSm90a) {
  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  std::map<std::string, tile::Program> programs = programs_of(test::tiled_cases());
  std::vector<tile::cuda::EmittedKernel> kernels;
  int i = 0;
  for (auto& [key, p] : programs) {
    p.name = "k" + std::to_string(i++);
    tile::verify(p);
    tile::run_passes(p, tile::default_passes());
    kernels.push_back(tile::cuda::emit_kernel(p, "sm_90a", true, true));
  }
  try {
    const nvrtc::Output out = nvrtc::compile(tile::cuda::translation_unit(kernels), "kiln_eager_tiled.cu", "sm_90a", {"-std=c++17"});
    EXPECT_TRUE(out.is_cubin);
    EXPECT_EQ(out.log.find("warning"), std::string::npos) << out.log;
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

}  // namespace
}  // namespace kiln
