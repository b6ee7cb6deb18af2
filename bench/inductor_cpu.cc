// Compiled ("inductor": generated tile kernels) against eager kiln in the same run: a pointwise
// chain, softmax and layer_norm (forward, float32), and the compile time of the GPT example's
// training step (forward + loss + backward, first call: capture, AOT, code generation, the C++
// compiler).
//
//   ninja -C build kiln_bench_inductor && ./build/kiln_bench_inductor
#include <benchmark/benchmark.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <chrono>

#include "../examples/gpt/model.h"

namespace {

using namespace kiln;

CompileOptions inductor() {
  CompileOptions o;
  o.backend = "inductor";
  return o;
}

Tensor pointwise_chain(const Tensor& x, const Tensor& y) { return ((x * 2.0 + y).sigmoid() * x - y).tanh(); }
Tensor softmax_rows(const Tensor& x) { return softmax(x, -1); }
Tensor layer_norm_rows(const Tensor& x, const Tensor& w, const Tensor& b) { return layer_norm(x, {x.size(-1)}, w, b); }

constexpr int64_t kRows = 4096, kCols = 512;  // 2M elements, 8 MiB per tensor

void BM_PointwiseChain_Eager(benchmark::State& state) {
  Tensor x = randn({kRows, kCols}), y = randn({kRows, kCols});
  for (auto _ : state) benchmark::DoNotOptimize(pointwise_chain(x, y));
}
void BM_PointwiseChain_Inductor(benchmark::State& state) {
  Tensor x = randn({kRows, kCols}), y = randn({kRows, kCols});
  auto f = compile(pointwise_chain, inductor());
  f(x, y);
  for (auto _ : state) benchmark::DoNotOptimize(f(x, y));
}
void BM_Softmax_Eager(benchmark::State& state) {
  Tensor x = randn({kRows, kCols});
  for (auto _ : state) benchmark::DoNotOptimize(softmax_rows(x));
}
void BM_Softmax_Inductor(benchmark::State& state) {
  Tensor x = randn({kRows, kCols});
  auto f = compile(softmax_rows, inductor());
  f(x);
  for (auto _ : state) benchmark::DoNotOptimize(f(x));
}
void BM_LayerNorm_Eager(benchmark::State& state) {
  Tensor x = randn({kRows, kCols}), w = randn({kCols}), b = randn({kCols});
  for (auto _ : state) benchmark::DoNotOptimize(layer_norm_rows(x, w, b));
}
void BM_LayerNorm_Inductor(benchmark::State& state) {
  Tensor x = randn({kRows, kCols}), w = randn({kCols}), b = randn({kCols});
  auto f = compile(layer_norm_rows, inductor());
  f(x, w, b);
  for (auto _ : state) benchmark::DoNotOptimize(f(x, w, b));
}
BENCHMARK(BM_PointwiseChain_Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PointwiseChain_Inductor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax_Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax_Inductor)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerNorm_Eager)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LayerNorm_Inductor)->Unit(benchmark::kMillisecond);

// The first call of the GPT example's compiled loss with its backward (scripts/run.sh's model:
// 2 layers, d 128, 4 heads, context 128, batch 8): one iteration, timed once.
void BM_GptTrainStepCompile(benchmark::State& state) {
  for (auto _ : state) {
    manual_seed(1);
    gpt::Config c{.vocab = 96, .ctx = 128, .d = 128, .heads = 4, .layers = 2};
    gpt::GPT model(c);
    Tensor x = randint(0, c.vocab, {8, 128}), y = randint(0, c.vocab, {8, 128});
    auto f = compile([](gpt::GPT& m, const Tensor& x, const Tensor& y) { return m->loss(x, y); }, inductor());
    auto t0 = std::chrono::steady_clock::now();
    f(model, x, y).backward();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}
BENCHMARK(BM_GptTrainStepCompile)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
