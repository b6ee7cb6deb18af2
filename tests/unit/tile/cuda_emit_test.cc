// The CUDA backend's emitter without a GPU: the CUDA of each kernel of cuda_kernels.h compiles
// through NVRTC for sm_90a (so a codegen error shows in CI), with no stack frame (blocks live in
// shared memory, never in local memory), and its structure: one thread block per program,
// the blocked layout's loop, warp-shuffle reductions, atomics once per program for a scalar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include "graph/pass_manager.h"
#include "inductor/emit_tile.h"
#include "inductor/inductor.h"
#include "runtime/cache.h"
#include "runtime/cuda/nvrtc.h"
#include "tile/cuda/emit_cuda.h"
#include "tile/cuda/kernel.h"
#include "tile/passes/passes.h"
#include "support/golden.h"
#include "support/test_util.h"
#include "tests/unit/tile/cuda_cases.h"
#include "tests/unit/tile/cuda_kernels.h"

namespace kiln::tile {
namespace {

Program prepared(const test::NamedKernel& k) {
  Program p = k.make();
  verify(p);
  run_passes(p, default_passes());
  return p;
}

TEST(TileCudaEmit, EntryPointAndLayout) {
  Program p = prepared({"vector_add", [] { return test::vector_add(1024); }});
  const cuda::EmittedKernel k = cuda::emit_kernel(p);
  EXPECT_EQ(k.entry, "kiln_tile_vector_add");
  EXPECT_EQ(k.threads, 128);  // num_warps=4
  EXPECT_EQ(k.shared_bytes, 0) << k.source;  // one fused loop: every value in registers
  EXPECT_NE(k.source.find("extern \"C\" __global__ void __launch_bounds__(128) kiln_tile_vector_add("), std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("blockIdx.x"), std::string::npos) << k.source;
  // 1024 elements over 128 threads: 2 runs of 4 consecutive elements, 512 apart.
  EXPECT_NE(k.source.find("for (int _r = 0; _r < 2; ++_r)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("const int _e = (int(threadIdx.x) + _r * 128) * 4;"), std::string::npos) << k.source;

  p.meta.num_warps = 8;
  EXPECT_EQ(cuda::emit_kernel(p).threads, 256);
  p.meta.num_warps = 0;
  EXPECT_THROW(cuda::emit_kernel(p), Error);
}

TEST(TileCudaEmit, ReductionsAndAtomics) {
  const cuda::EmittedKernel s = cuda::emit_kernel(prepared({"softmax", [] { return test::softmax(1024); }}));
  EXPECT_NE(s.source.find("kiln_tile_block_reduce<128>(_acc, kiln_tile_max{})"), std::string::npos) << s.source;
  EXPECT_NE(s.source.find("kiln_tile_block_reduce<128>(_acc, kiln_tile_sum{})"), std::string::npos) << s.source;
  // The loaded row and its exp are read only at each thread's own elements: in registers.
  EXPECT_EQ(s.shared_bytes, 0) << s.source;
  EXPECT_NE(s.source.find("kiln_tile_regs<float, 8, 4, 512> "), std::string::npos) << s.source;
  // A block read at other threads' elements (a dot's operands) is in shared memory.
  const cuda::EmittedKernel mm = cuda::emit_kernel(prepared({"matmul", [] { return test::matmul(32, 32, 16); }}));
  EXPECT_GE(mm.shared_bytes, (32 * 16 + 16 * 32) * 4) << mm.source;
  // A loop of registers only needs no barrier after it (the reductions have their own); one
  // that writes shared memory does.
  EXPECT_EQ(s.source.find("__syncthreads"), std::string::npos) << s.source;
  EXPECT_NE(mm.source.find("__syncthreads"), std::string::npos) << mm.source;
  const cuda::EmittedKernel h = cuda::emit_kernel(prepared({"histogram", [] { return test::histogram(kFloat32); }}));
  // The block's atomics per element; the scalar one by one thread for the whole program.
  EXPECT_NE(h.source.find("kiln_tile_atomic_add<float>("), std::string::npos) << h.source;
  EXPECT_NE(h.source.find("kiln_tile_by_one_thread([&] { return kiln_tile_atomic_add<int32_t>("), std::string::npos)
      << h.source;
}

TEST(TileCudaEmit, TooMuchSharedMemoryIsAClearError) {
  // A 128 x 256 f32 accumulator and its operands: far past 227 KB.
  Program p = prepared({"matmul", [] { return test::matmul(256, 256, 64); }});
  try {
    cuda::emit_kernel(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KB of shared memory per thread block"), std::string::npos) << e.what();
  }
}

// The variant for 16-byte aligned pointer arguments (what a launch with such pointers runs):
// NVRTC proves the row kernels' 16-byte accesses aligned and drops their element-wise paths,
// which the variant for any alignment keeps (the bf16 rmsnorm's loads and stores, in PTX).
TEST(TileCudaEmit, TheAlignedVariantDropsTheElementWisePaths) {
  namespace nvrtc = runtime::cuda::nvrtc;
  const Program p = prepared({"rmsnorm", [] { return gpu_bench::rmsnorm(8192); }});
  const cuda::EmittedKernel aligned = cuda::emit_kernel(p, "", true, true), any = cuda::emit_kernel(p);
  EXPECT_NE(aligned.source.find("x = static_cast<uint16_t*>(__builtin_assume_aligned(x, 16));"), std::string::npos) << aligned.source;
  EXPECT_EQ(any.source.find("__builtin_assume_aligned"), std::string::npos);
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  auto count = [](const std::string& ptx, const std::string& what) {
    size_t n = 0;
    for (size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1)) ++n;
    return n;
  };
  const std::string a = nvrtc::compile(cuda::translation_unit({aligned}), "aligned.cu", "compute_90a", {"-std=c++17"}).binary;
  const std::string b = nvrtc::compile(cuda::translation_unit({any}), "any.cu", "compute_90a", {"-std=c++17"}).binary;
  EXPECT_GT(count(b, "ld.global.u16"), 0u);  // the element-wise fallback, beside the 16-byte loads
  EXPECT_EQ(count(a, "ld.global.u16"), 0u);
  EXPECT_EQ(count(a, "st.global.u16"), 0u);
  EXPECT_GT(count(a, "ld.global.v4.u32"), 0u);
}

TEST(TileCudaEmit, EveryKernelCompilesWithNvrtcForSm90a) {
  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  std::vector<cuda::EmittedKernel> kernels;
  for (const test::NamedKernel& k : test::cuda_kernels()) kernels.push_back(cuda::emit_kernel(prepared(k), test::host_test_arch(k.name)));
  const std::string src = cuda::translation_unit(kernels);
  nvrtc::Output out;
  try {
    out = nvrtc::compile(src, "kiln_tile_cuda_test.cu", "sm_90a", {"-std=c++17", "--ptxas-options=-v"});
  } catch (const Error& e) {
    FAIL() << e.what();
  }
  EXPECT_TRUE(out.is_cubin);
  EXPECT_GT(out.binary.size(), 1000u);
  EXPECT_EQ(out.log.find("warning"), std::string::npos) << out.log;
  // ptxas's report per kernel: no stack frame, no spills.
  for (const cuda::EmittedKernel& k : kernels) {
    const std::string& entry = k.entry;
    const size_t at = out.log.find("Function properties for " + entry + "\n");
    ASSERT_NE(at, std::string::npos) << entry << "\n" << out.log;
    const size_t from = out.log.find('\n', at) + 1;
    const std::string line = out.log.substr(from, out.log.find('\n', from) - from);
    EXPECT_NE(line.find(" 0 bytes stack frame, 0 bytes spill stores"), std::string::npos) << entry << ": " << line;
  }
}

// A block's loads and stores move 16 bytes at a time: each thread's runs of 8 bf16 (4 f32) are
// read with ld.global.v4 and written with st.global.v4, a masked tail or a misaligned run
// element by element (the emulation runs both paths; here the PTX shows the wide ones).
TEST(TileCudaEmit, LoadsAndStoresAre16BytesWide) {
  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  const std::vector<test::NamedKernel> ks = {
      {"bench_vector_add", [] { return test::renamed(gpu_bench::vector_add(1024), "bench_vector_add"); }},
      {"bench_softmax", [] { return test::renamed(gpu_bench::softmax(1024), "bench_softmax"); }},
      {"layer_norm", [] { return test::layer_norm(1024); }}};
  for (const test::NamedKernel& nk : ks) {
    const cuda::EmittedKernel k = cuda::emit_kernel(prepared(nk));
    EXPECT_NE(k.source.find("kiln_tile_vload"), std::string::npos) << k.source;
    const std::string ptx = nvrtc::compile(cuda::translation_unit({k}), nk.name + ".cu", "compute_90a", {"-std=c++17"}).binary;
    const size_t entry = ptx.find(".entry " + k.entry);
    ASSERT_NE(entry, std::string::npos) << ptx;
    const std::string body = ptx.substr(entry);
    EXPECT_NE(body.find("ld.global.v4.u32"), std::string::npos) << nk.name << "\n" << body;
    EXPECT_NE(body.find("st.global.wb.v4.u32"), std::string::npos) << nk.name << "\n" << body;
  }
  // bf16 kernels take runs of 8 elements (16 bytes), f32 ones runs of 4.
  EXPECT_NE(cuda::emit_kernel(prepared(ks[0])).source.find("* 8;"), std::string::npos);
  EXPECT_NE(cuda::emit_kernel(prepared(ks[2])).source.find("_r * 128) * 4;"), std::string::npos);
}

// A bf16 dot whose tiles m16n8k16 divides runs on tensor cores: the warps split the 128 x 128
// tile 2 x 4, the accumulators stay in registers (only the operands, 2 x 8 KB of bf16 per
// stage, are in shared memory), the operands are copied with cp.async, pipelined over
// num_stages (3: the first 2 iterations' copies before the loop), and the PTX has the mmas and
// the ldmatrix loads of both operands (b's transposed); with num_stages=1 each iteration waits
// for its own copies; an f32 dot (the seed's matmul) keeps its scalar loop.
TEST(TileCudaEmit, Bf16DotRunsOnTensorCores) {
  const cuda::EmittedKernel k = cuda::emit_kernel(prepared({"mm", [] { return gpu_bench::matmul(128, 128, 32, 8); }}));
  EXPECT_EQ(k.shared_bytes, 3 * 2 * 128 * 32 * 2);
  EXPECT_NE(k.source.find("on tensor cores (mma.sync m16n8k16, bf16 -> f32): 2 x 4 warps, each 4 x 4 tiles"), std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("kiln_tile_mma_regs<float, 64>"), std::string::npos);
  EXPECT_NE(k.source.find("pipelined over 3 stages"), std::string::npos);
  EXPECT_EQ(kiln::test::count_occurrences(k.source, ".copy_run(_e, "), 4);  // a and b, before and in the loop
  EXPECT_EQ(k.source.find("@@"), std::string::npos);
  const cuda::EmittedKernel unpipelined = cuda::emit_kernel(prepared({"mm1", [] {
    Program p = gpu_bench::matmul(128, 128, 32, 8);
    p.meta.num_stages = 1;
    return p;
  }}));
  EXPECT_EQ(unpipelined.shared_bytes, 2 * 128 * 32 * 2);
  EXPECT_EQ(kiln::test::count_occurrences(unpipelined.source, "kiln_tile_cp_async_wait_all();"), 2);
  EXPECT_EQ(unpipelined.source.find("_stage"), std::string::npos);
  const cuda::EmittedKernel f32 = cuda::emit_kernel(prepared({"matmul", [] { return test::matmul(32, 32, 16); }}));
  EXPECT_EQ(f32.source.find("mma"), std::string::npos);
  EXPECT_NE(f32.source.find("for (int _k = 0; _k < 16; ++_k) _c = fmaf("), std::string::npos) << f32.source;

  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  const std::string ptx = nvrtc::compile(cuda::translation_unit({k}), "mm.cu", "compute_90a", {"-std=c++17"}).binary;
  const std::string body = ptx.substr(ptx.find(".entry " + k.entry));
  // Per k16 step of BK = 32: 4 x 4 mmas, 4 ldmatrix.x4 of a, 2 ldmatrix.x4.trans of b.
  EXPECT_EQ(kiln::test::count_occurrences(body, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 32);
  EXPECT_EQ(kiln::test::count_occurrences(body, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 8);
  EXPECT_EQ(kiln::test::count_occurrences(body, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 4);
  // 2 runs of a and of b per thread: 2 x 4 copies for the first 2 iterations, 4 in the loop.
  EXPECT_EQ(kiln::test::count_occurrences(body, "cp.async.cg.shared.global"), 12);
  EXPECT_EQ(kiln::test::count_occurrences(body, "cp.async.wait_group 2"), 1);
}

// On sm_90a a dot whose shape allows it runs on wgmma: 128 x 256 x 64 with 8 warps is 2 x 1
// warpgroups, each one m64n256k16 per k16 step; the accumulators stay in registers; the operands
// in the wgmma layout (1024-byte aligned stages, 1024 bytes more for the alignment), written by
// cp.async and fenced for the async proxy before the barrier; the PTX has the wgmmas with their
// fence, commit and wait, and no mma.sync. A shape wgmma cannot take (K = 48) keeps mma.sync,
// and without the arch every dot stays on mma.sync.
// (Each iteration waiting for its wgmmas, in_flight false; the next test keeps them in flight.)
TEST(TileCudaEmit, Bf16DotRunsOnWgmmaForSm90a) {
  const cuda::EmittedKernel k =
      cuda::emit_kernel(prepared({"mm", [] { return gpu_bench::matmul(128, 256, 64, 8, 4); }}), "sm_90a", false);
  EXPECT_NE(k.source.find("on tensor cores (wgmma m64n256k16, bf16 -> f32): 2 x 1 warpgroups, each 1 m64 tiles"), std::string::npos)
      << k.source;
  EXPECT_EQ(k.shared_bytes, 4 * (128 * 64 + 64 * 256) * 2 + 1024);
  EXPECT_NE(k.source.find("kiln_tile_mma_regs<float, 128>"), std::string::npos);
  EXPECT_NE(k.source.find("kiln_tile_smem16<true, 64, 128>"), std::string::npos);  // a: [128, 64]
  EXPECT_NE(k.source.find("kiln_tile_smem16<true, 256, 64>"), std::string::npos);  // b: [64, 256]
  // (the next iteration's copies issued between the wgmmas and their wait: 2 groups may be pending)
  EXPECT_NE(k.source.find("kiln_tile_cp_async_wait<2>();  // this iteration's\n    kiln_tile_fence_async();\n    __syncthreads();"),
            std::string::npos);
  const size_t issued = k.source.find("kiln_tile_wgmma_commit();"), next = k.source.find("const int _stage = (_pipe_it + 3) % 4;");
  EXPECT_LT(issued, next);
  EXPECT_LT(next, k.source.find("kiln_tile_wgmma_wait<0>();"));
  EXPECT_EQ(k.source.find("@@"), std::string::npos);
  const cuda::EmittedKernel odd = cuda::emit_kernel(prepared({"mm48", [] { return gpu_bench::matmul(128, 128, 48, 8); }}), "sm_90a");
  EXPECT_NE(odd.source.find("mma.sync m16n8k16"), std::string::npos);
  EXPECT_EQ(odd.source.find("wgmma"), std::string::npos);
  EXPECT_EQ(cuda::emit_kernel(prepared({"mm", [] { return gpu_bench::matmul(128, 256, 64, 8, 4); }})).source.find("wgmma m64"),
            std::string::npos);

  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  const std::string ptx = nvrtc::compile(cuda::translation_unit({k}), "mm.cu", "compute_90a", {"-std=c++17"}).binary;
  const std::string body = ptx.substr(ptx.find(".entry " + k.entry));
  EXPECT_EQ(kiln::test::count_occurrences(body, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"), 4);  // BK / 16
  EXPECT_EQ(kiln::test::count_occurrences(body, "wgmma.fence.sync.aligned"), 1);
  EXPECT_EQ(kiln::test::count_occurrences(body, "wgmma.commit_group.sync.aligned"), 1);
  EXPECT_EQ(kiln::test::count_occurrences(body, "wgmma.wait_group.sync.aligned 0"), 1);
  EXPECT_GE(kiln::test::count_occurrences(body, "fence.proxy.async.shared::cta"), 1);
  EXPECT_EQ(body.find("mma.sync"), std::string::npos);
}

// In a pipelined loop of 3 or more stages the wgmmas stay in flight into the next iteration
// (wait_group 1 in the loop, 0 after it; the copies go S - 2 iterations ahead, into the stage read
// two iterations back); where ptxas would serialize them (C7515, 128x256x64 at 255 registers)
// cuda::cubin takes the fallback's cubin (each iteration waiting for its own), and where it
// would not (256x128x64) the in-flight one.
TEST(TileCudaEmit, WgmmasStayInFlightUnlessPtxasSerializesThem) {
  auto source = [](int64_t bm, int64_t bn, bool in_flight) {
    return cuda::translation_unit({cuda::emit_kernel(prepared({"mm", [&] { return gpu_bench::matmul(bm, bn, 64, 8, 4); }}), "sm_90a", in_flight)});
  };
  const std::string deep = source(128, 256, true), waited = source(128, 256, false);
  EXPECT_EQ(kiln::test::count_occurrences(deep, "kiln_tile_wgmma_wait<1>();  // the previous iteration's"), 1);
  EXPECT_EQ(kiln::test::count_occurrences(deep, "kiln_tile_wgmma_wait<0>();  // the last iteration's wgmmas"), 1);
  EXPECT_NE(deep.find("kiln_tile_cp_async_wait<1>();  // this iteration's"), std::string::npos);
  EXPECT_NE(deep.find("const int _stage = (_pipe_it + 2) % 4;"), std::string::npos);
  EXPECT_EQ(waited.find("kiln_tile_wgmma_wait<1>"), std::string::npos);
  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  // Whether ptxas serializes 128x256x64 is not fixed: this machine's NVRTC reports C7515 on every
  // compile; on the H200 (13.0.88) one compile of the same source reported it and the next did
  // not. So the cubin is one of the two: the in-flight one as ptxas built it, or the fallback's.
  const std::string chosen = cuda::cubin(deep, "mm.cu", "sm_90a", waited);
  EXPECT_TRUE(chosen == nvrtc::compile(waited, "mm.cu", "sm_90a", {"-std=c++17"}).binary ||
              chosen == nvrtc::compile(deep, "mm.cu", "sm_90a", {"-std=c++17", "--ptxas-options=-v"}).binary);
  const std::string deep2 = source(256, 128, true), waited2 = source(256, 128, false);
  // (the cubin records ptxas's options: the in-flight one was compiled with -v)
  EXPECT_TRUE(cuda::cubin(deep2, "mm.cu", "sm_90a", waited2) ==
              nvrtc::compile(deep2, "mm.cu", "sm_90a", {"-std=c++17", "--ptxas-options=-v"}).binary);
}

// A copy whose pointers rise by one element along the run and whose mask is true on a prefix of
// it (index < bound, as the matmul's) tests only the run's last element's mask on the 16-byte
// path; a mask true on a suffix (k >= lo) or none keep their own tests (the emulation runs both).
TEST(TileCudaEmit, CopiesTestOnlyTheLastMaskOfAPrefixMask) {
  const cuda::EmittedKernel mm = cuda::emit_kernel(prepared({"mm", [] { return gpu_bench::matmul(128, 256, 64, 8, 4); }}), "sm_90a");
  EXPECT_EQ(kiln::test::count_occurrences(mm.source, ", 0.0f, true);"), 4);  // a and b, before and in the loop
  const cuda::EmittedKernel k = cuda::emit_kernel(prepared({"mm_suffix", [] {
    Builder b("mm_suffix");
    auto a = b.arg_ptr("a", kBFloat16), bp = b.arg_ptr("b", kBFloat16), c = b.arg_ptr("c", kFloat32);
    auto lo = b.arg_int("lo");
    auto r = b.arange(0, 64), kk = b.arange(0, 16), n = b.arange(0, 64);
    auto at = b.load(a + r.expand_dims(1) * 16 + kk.expand_dims(0), (r.expand_dims(1) < 64) & (kk.expand_dims(0) >= lo), 0.0);
    auto bt = b.load(bp + kk.expand_dims(1) * 64 + n.expand_dims(0));
    b.store(c + r.expand_dims(1) * 64 + n.expand_dims(0), b.dot(at, bt, b.zeros({64, 64})));
    return b.finish();
  }}), "sm_90a");
  EXPECT_NE(k.source.find("wgmma m64n64k16"), std::string::npos) << k.source;
  EXPECT_EQ(kiln::test::count_occurrences(k.source, ", 0.0f, true);"), 1) << k.source;  // b's only
  EXPECT_EQ(kiln::test::count_occurrences(k.source, ".copy_run(_e, "), 2);
}

// The benchmark's matmul kernel is a matmul whose grouped tile order covers every tile once: on
// the CPU backend at 10 x 3 tiles (a group of 8 tile rows, then a short one of 2) against eager
// matmul (the CUDA cases compare with the same kernel on the CPU, which cannot see that).
TEST(TileCudaEmit, BenchMatmulCoversEveryTileInGroupedOrder) {
  const int64_t M = 160, N = 48, K = 40;
  Tensor a = randn({M, K}).to(kBFloat16), b = randn({K, N}).to(kBFloat16), c = zeros({M, N}, kBFloat16);
  std::vector<cpu::Arg> args;
  args.emplace_back(a);
  args.emplace_back(b);
  args.emplace_back(c);
  for (int64_t v : {M, N, K}) args.emplace_back(v);
  cpu::compile(gpu_bench::matmul(16, 16, 16, 4)).launch(cpu::Grid(10 * 3), args);
  test::expect_near(c, kiln::matmul(a.to(kFloat32), b.to(kFloat32)).to(kBFloat16), 8e-3, "bench matmul");
}

// The code generator's kernels for the graphs of tests/golden/kernels/ (what the CPU goldens show
// as C++), emitted as CUDA: 2-D blocks, reductions along an axis, broadcasts, masks.
TEST(TileCudaEmit, InductorKernelsCompileWithNvrtc) {
  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  std::vector<cuda::EmittedKernel> kernels;
  for (const char* name : {"inductor_softmax", "inductor_layer_norm", "inductor_pointwise_chain"}) {
    const kiln::test::Golden g = kiln::test::read_golden(kiln::test::golden_files("kernels").front().parent_path() /
                                                         (std::string(name) + ".kir"));
    ASSERT_EQ(g.pipeline, "inductor: decompose | c") << name;
    const inductor::Program p = inductor::lower_and_schedule(
        std::make_shared<graph::Graph>(graph::parse(graph::run_pipeline("decompose", g.input))));
    for (const inductor::Node& n : p.nodes) {
      if (n.kind == inductor::NodeKind::Extern) continue;
      inductor::GeneratedKernel k = inductor::emit_tile(p, n);
      run_passes(k.program, default_passes());
      kernels.push_back(cuda::emit_kernel(k.program));
    }
  }
  ASSERT_GE(kernels.size(), 3u);
  try {
    const nvrtc::Output out = nvrtc::compile(cuda::translation_unit(kernels), "kiln_inductor_cuda_test.cu", "sm_90a", {"-std=c++17"});
    EXPECT_EQ(out.log.find("warning"), std::string::npos) << out.log;
  } catch (const Error& e) {
    FAIL() << e.what();
  }
}

// tests/golden/kernels/*_cuda.kir (pipeline "tile-cuda: <passes> | cuda"): the CUDA of a kernel,
// so a change in the emitter shows as a diff. KILN_UPDATE_GOLDENS=1 rewrites them.
TEST(TileCudaEmit, GoldenSources) {
  int n = 0;
  for (const auto& path : kiln::test::golden_files("kernels")) {
    const kiln::test::Golden g = kiln::test::read_golden(path);
    if (g.pipeline.rfind("tile-cuda:", 0) != 0) continue;  // another backend's golden
    kiln::test::check_golden(g, [](const std::string& pipeline, const std::string& input) {
      const size_t bar = pipeline.rfind('|');
      KILN_CHECK(bar != std::string::npos && pipeline.substr(bar) == "| cuda", "a tile-cuda golden's pipeline ends in '| cuda': ",
                 pipeline);
      std::string passes = pipeline.substr(10, bar - 10);  // after "tile-cuda:"
      passes.erase(0, passes.find_first_not_of(' '));
      passes.erase(passes.find_last_not_of(' ') + 1);
      Program p = parse(input);
      verify(p);
      run_passes(p, passes);
      return cuda::emit_kernel(p).source;
    });
    ++n;
  }
  EXPECT_GE(n, 2);
}

TEST(TileCudaEmit, CubinsComeFromTheDiskCache) {
  namespace nvrtc = runtime::cuda::nvrtc;
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC (libnvrtc) not found: " << nvrtc::unavailable_reason();
  // A source no other test or earlier run compiles (the cache folder may be a lasting one: a
  // KILN_CACHE_DIR set by the caller, as bench/gpu.sh does), so the first compile is a miss.
  const std::string src = cuda::translation_unit({cuda::emit_kernel(prepared({"vector_add", [] { return test::vector_add(256); }}))}) +
                          "// TileCudaEmit.CubinsComeFromTheDiskCache " + std::to_string(::getpid()) + " " +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "\n";
  const runtime::cache::Stats s0 = runtime::cache::stats();
  const std::string cold = cuda::cubin(src, "vector_add.cu", "sm_90a");
  const runtime::cache::Stats s1 = runtime::cache::stats();
  EXPECT_EQ(s1.misses, s0.misses + 1);
  EXPECT_EQ(s1.writes, s0.writes + 1);
  const std::string warm = cuda::cubin(src, "vector_add.cu", "sm_90a");
  EXPECT_EQ(runtime::cache::stats().hits, s1.hits + 1);
  EXPECT_EQ(warm, cold);
  EXPECT_EQ(cold.substr(0, 4), "\x7f" "ELF");  // a cubin is an ELF image
  // Another arch is another entry.
  EXPECT_NE(cuda::cubin(src, "vector_add.cu", "sm_80"), cold);
}

}  // namespace
}  // namespace kiln::tile
