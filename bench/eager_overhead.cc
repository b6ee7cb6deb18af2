// Per-call overhead of eager ops on tiny (16-element) tensors: the data is negligible, so the time
// is dispatch, allocation and autograd bookkeeping. The C++ side of bench/python_overhead.py;
// instruction counts of one case are repeatable under valgrind even on a loaded machine:
// KILN_OVERHEAD_ITERS fixes the iteration count (this benchmark library only takes a minimum time):
//   KILN_OVERHEAD_ITERS=2000 valgrind --tool=callgrind ./build/kiln_bench_overhead --benchmark_filter='^BM_Add(/|$)'
// and the difference of two such counts over the difference of iterations is the cost per call.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <cstdlib>

using namespace kiln;

namespace {

constexpr int64_t kN = 16;

void BM_Add(benchmark::State& state) {
  Tensor x = rand({kN}), y = rand({kN});
  for (auto _ : state) benchmark::DoNotOptimize(add(x, y).data_ptr());
}

void BM_MulScalar(benchmark::State& state) {
  Tensor x = rand({kN});
  for (auto _ : state) benchmark::DoNotOptimize(mul(x, 2.0).data_ptr());
}

void BM_Sum(benchmark::State& state) {
  Tensor x = rand({kN});
  for (auto _ : state) benchmark::DoNotOptimize(x.sum().data_ptr());
}

void BM_Relu(benchmark::State& state) {
  Tensor x = randn({kN});
  for (auto _ : state) benchmark::DoNotOptimize(relu(x).data_ptr());
}

void BM_AddInplace(benchmark::State& state) {
  Tensor x = rand({kN}), y = rand({kN});
  for (auto _ : state) benchmark::DoNotOptimize(x.add_(y).data_ptr());
}

void BM_Select(benchmark::State& state) {
  Tensor x = rand({kN});
  for (auto _ : state) benchmark::DoNotOptimize(x.select(0, 3).data_ptr());
}

// With an input that requires grad: the autograd node is built on every call.
void BM_AddRequiresGrad(benchmark::State& state) {
  Tensor x = rand({kN}).requires_grad_(), y = rand({kN});
  for (auto _ : state) benchmark::DoNotOptimize(add(x, y).data_ptr());
}

void BM_ReluRequiresGrad(benchmark::State& state) {
  Tensor x = randn({kN}).requires_grad_();
  for (auto _ : state) benchmark::DoNotOptimize(relu(x).data_ptr());
}

}  // namespace

int main(int argc, char** argv) {
  using Fn = void (*)(benchmark::State&);
  const std::pair<const char*, Fn> cases[] = {
      {"BM_Add", BM_Add},       {"BM_MulScalar", BM_MulScalar},         {"BM_Sum", BM_Sum},
      {"BM_Relu", BM_Relu},     {"BM_AddInplace", BM_AddInplace},       {"BM_Select", BM_Select},
      {"BM_AddRequiresGrad", BM_AddRequiresGrad}, {"BM_ReluRequiresGrad", BM_ReluRequiresGrad}};
  const char* iters = std::getenv("KILN_OVERHEAD_ITERS");
  for (auto& [name, fn] : cases) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    if (iters) b->Iterations(std::atoll(iters));
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
