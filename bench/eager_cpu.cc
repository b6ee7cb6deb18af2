// Eager CPU benchmarks: the machine's memory bandwidth (memcpy) and BLAS peak (cblas_sgemm) as
// baselines, and kiln's add, matmul, reductions and softmax against them; cross_entropy and
// attention, each as its fast kernel and as its decomposition (decomposed:1).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <kiln/kiln.h>

#include "ops/dispatch.h"

#include <cstring>
#include <vector>

using namespace kiln;

namespace {

constexpr int64_t kAddN = int64_t(1) << 24;

// Bytes moved: memcpy reads and writes each byte once, so 2 x size per copy.
void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = size_t(kAddN) * sizeof(float);
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["bytes/s"] = benchmark::Counter(2.0 * double(bytes) * double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();

// Two reads and one write of 4 bytes per element.
void BM_AddFloat32(benchmark::State& state) {
  Tensor a = rand({kAddN}), b = rand({kAddN});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["bytes/s"] = benchmark::Counter(3.0 * 4.0 * double(kAddN) * double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AddFloat32)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kN = 1024;
double gemm_flops(benchmark::State& state) { return 2.0 * double(kN) * double(kN) * double(kN) * double(state.iterations()); }

void BM_MatmulKiln(benchmark::State& state) {
  Tensor a = rand({kN, kN}), b = rand({kN, kN});
  for (auto _ : state) {
    Tensor c = matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["FLOP/s"] = benchmark::Counter(gemm_flops(state), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatmulKiln)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CblasSgemm(benchmark::State& state) {
  std::vector<float> a(size_t(kN * kN), 0.5f), b(size_t(kN * kN), 0.25f), c(size_t(kN * kN));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(kN), int(kN), int(kN), 1.0f, a.data(), int(kN), b.data(),
                int(kN), 0.0f, c.data(), int(kN));
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(gemm_flops(state), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CblasSgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

// A ResNet-style 3x3 convolution, forward (im2col + gemm), as FLOP/s.
void BM_Conv2d3x3(benchmark::State& state) {
  Tensor x = rand({8, 64, 56, 56}), w = rand({64, 64, 3, 3});
  for (auto _ : state) {
    Tensor y = conv2d(x, w, Tensor(), 1, 1);
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * 8 * 64 * 56 * 56 * 64 * 9 * double(state.iterations()),
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Conv2d3x3)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SumLastDim(benchmark::State& state) {
  Tensor x = rand({2048, 4096});
  for (auto _ : state) {
    Tensor s = sum(x, {-1});
    benchmark::DoNotOptimize(s.data_ptr());
  }
  state.counters["bytes/s"] = benchmark::Counter(4.0 * 2048 * 4096 * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SumLastDim)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reductions of a 2048x4096 float32 tensor; bytes/s counts the input read once.
template <class F>
void reduce_bench(benchmark::State& state, F f) {
  Tensor x = rand({2048, 4096});
  for (auto _ : state) {
    Tensor s = f(x);
    benchmark::DoNotOptimize(s.data_ptr());
  }
  state.counters["bytes/s"] = benchmark::Counter(4.0 * 2048 * 4096 * double(state.iterations()), benchmark::Counter::kIsRate);
}
void BM_SumDim0(benchmark::State& state) { reduce_bench(state, [](const Tensor& x) { return sum(x, {0}); }); }
BENCHMARK(BM_SumDim0)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_AmaxLastDim(benchmark::State& state) { reduce_bench(state, [](const Tensor& x) { return amax(x, {-1}); }); }
BENCHMARK(BM_AmaxLastDim)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_AmaxDim0(benchmark::State& state) { reduce_bench(state, [](const Tensor& x) { return amax(x, {0}); }); }
BENCHMARK(BM_AmaxDim0)->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_MeanAll(benchmark::State& state) { reduce_bench(state, [](const Tensor& x) { return mean(x); }); }
BENCHMARK(BM_MeanAll)->Unit(benchmark::kMillisecond)->UseRealTime();

// A mid-size add (2 MB per operand): dominated by the cost of going parallel, which under CPU
// contention is the wait for a descheduled OpenMP worker.
void BM_AddFloat32Mid(benchmark::State& state) {
  const int64_t n = int64_t(1) << 19;
  Tensor a = rand({n}), b = rand({n});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["bytes/s"] = benchmark::Counter(3.0 * 4.0 * double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AddFloat32Mid)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_SoftmaxLastDim(benchmark::State& state) {
  Tensor x = rand({2048, 4096});
  try {
    (void)softmax(x, -1);
  } catch (const Error& e) {  // softmax lands from another branch; report instead of aborting
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    Tensor s = softmax(x, -1);
    benchmark::DoNotOptimize(s.data_ptr());
  }
  state.counters["bytes/s"] = benchmark::Counter(2.0 * 4.0 * 2048 * 4096 * double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SoftmaxLastDim)->Unit(benchmark::kMillisecond)->UseRealTime();

// Runs op through the dispatcher (fast kernel) or straight through its decomposition.
Tensor run_op(bool decomposed, ops::OpId op, std::vector<ops::Arg> args) {
  ops::Args a{op, std::move(args)};
  return decomposed ? ops::op_info(op).decomp(a).at(0) : ops::call(op, a.v).at(0);
}

// An LM head's loss: 1024 rows of 32000 logits.
void BM_CrossEntropy(benchmark::State& state) {
  const bool decomposed = state.range(0) != 0;
  Tensor x = randn({1024, 32000}), t = randint(0, 32000, {1024});
  for (auto _ : state) {
    Tensor l = run_op(decomposed, ops::OpId::cross_entropy, {x, t, Tensor(), std::string("mean"), int64_t(-100), 0.0});
    benchmark::DoNotOptimize(l.data_ptr());
  }
  state.counters["bytes/s"] = benchmark::Counter(4.0 * 1024 * 32000 * double(state.iterations()),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CrossEntropy)->ArgName("decomposed")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Causal self-attention, B1 H8 S512 D64 float32.
void BM_SdpaCausal(benchmark::State& state) {
  const bool decomposed = state.range(0) != 0;
  Tensor q = randn({1, 8, 512, 64}), k = randn({1, 8, 512, 64}), v = randn({1, 8, 512, 64});
  for (auto _ : state) {
    Tensor o = run_op(decomposed, ops::OpId::scaled_dot_product_attention,
                      {q, k, v, ops::Arg(), 0.0, true, ops::Arg(), false});
    benchmark::DoNotOptimize(o.data_ptr());
  }
  // Useful flops of the causal half: 2 matmuls of 2 L S D each, halved.
  state.counters["flop/s"] = benchmark::Counter(2.0 * 8 * 512 * 512 * 64 * double(state.iterations()),
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SdpaCausal)->ArgName("decomposed")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
