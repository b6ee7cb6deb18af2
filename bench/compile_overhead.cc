// The cost compile() adds to a call (issue 5: guards + dispatch under 5 us for 10 tensor inputs),
// against the same call eagerly; and the time to capture GPT-2 small on fake tensors.
//
//   ninja -C build kiln_bench_compile && ./build/kiln_bench_compile
#include <benchmark/benchmark.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>

#include "../examples/gpt/model.h"
#include "ops/fake_mode.h"
#include "capture/guards.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"

namespace {

using namespace kiln;

constexpr int kInputs = 10;

std::vector<Tensor> small_inputs() {
  std::vector<Tensor> v;
  for (int i = 0; i < kInputs; i++) v.push_back(full({8}, double(i)));
  return v;
}

Tensor sum_of_adds(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d, const Tensor& e, const Tensor& f,
                   const Tensor& g, const Tensor& h, const Tensor& i, const Tensor& j) {
  return a + b + c + d + e + f + g + h + i + j;
}

template <class F>
void call10(F& f, const std::vector<Tensor>& v, benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(f(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]));
}

// (a) guard evaluation alone: the checks a cached graph runs on 10 tensor arguments.
void BM_GuardCheck(benchmark::State& state) {
  std::vector<capture::ArgValue> args;
  for (const Tensor& t : small_inputs()) capture::flatten(t, args);
  capture::GuardSet g = capture::GuardSet::from_args(args, {});
  for (auto _ : state) benchmark::DoNotOptimize(g.check(args));
}
BENCHMARK(BM_GuardCheck);

// (a') the same with symbolic sizes: 4 inputs with 2 symbolic dims each (8 symbols in their
// ranges) and 8 relations between them, of the kinds meta functions record, evaluated per call.
void BM_GuardCheckSymbolic(benchmark::State& state) {
  std::vector<capture::ArgValue> args;
  std::vector<capture::SymbolSource> symbols;
  std::vector<sym::ExprPtr> s;
  for (size_t i = 0; i < 4; i++) {
    capture::flatten(full({int64_t(6 + i), int64_t(3 + i)}, 1.0), args);
    for (int64_t d = 0; d < 2; d++) {
      symbols.push_back({"s" + std::to_string(symbols.size()), i, d});
      s.push_back(sym::symbol(symbols.back().name));
    }
  }
  capture::GuardSet g = capture::GuardSet::from_args(args, symbols);
  auto c = [](int64_t v) { return sym::constant(v); };
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    sym::ExprPtr flat = sym::mul(s[i], s[i + 1]);  // a reshape's numel, a slice's length, a chunk
    g.relations.push_back({"<=", sym::add(flat, c(1)), sym::mul(sym::add(s[i], c(1)), sym::add(s[i + 1], c(1))), true});
    g.relations.push_back({"<", sym::floordiv(sym::add(flat, c(-1)), s[i + 1]), sym::add(s[i], c(1)), true});
  }
  if (g.check(args)) state.SkipWithError("a guard failed");
  for (auto _ : state) benchmark::DoNotOptimize(g.check(args));
}
BENCHMARK(BM_GuardCheckSymbolic);

// Building the size expressions a symbolic slice meta builds: (end - start + step - 1) // step.
void BM_SymSliceSize(benchmark::State& state) {
  sym::ExprPtr n = sym::symbol("s0"), start = sym::constant(2), step = sym::constant(1);
  for (auto _ : state) {
    sym::ExprPtr end = sym::min(sym::add(n, sym::constant(-1)), n);
    benchmark::DoNotOptimize(sym::floordiv(
        sym::add(sym::add(sym::add(end, sym::mul(sym::constant(-1), start)), step), sym::constant(-1)), step));
  }
}
BENCHMARK(BM_SymSliceSize);

CompileOptions noop_backend() {
  register_backend("noop", [](std::shared_ptr<const graph::Graph>) -> CompiledGraph {
    return [](const std::vector<Tensor>& inputs) { return inputs; };
  });
  CompileOptions o;
  o.backend = "noop";
  return o;
}

// (b) guards + dispatch: a compiled call whose backend does nothing (returns its inputs).
void BM_CompiledNoopBackend(benchmark::State& state) {
  CompileOptions o = noop_backend();
  auto f = compile(sum_of_adds, o);
  call10(f, small_inputs(), state);
}
BENCHMARK(BM_CompiledNoopBackend);

// A module argument: its guards cover its identity, its parameters' and buffers' identities and
// its modes (here 6 parameters, 5 modules), read on every call.
void BM_CompiledNoopBackendModuleArg(benchmark::State& state) {
  CompileOptions o = noop_backend();
  nn::Sequential net(nn::Linear(8, 8), nn::ReLU(), nn::Linear(8, 8), nn::Linear(8, 8));
  auto f = compile([](nn::Sequential& m, const Tensor& x) { return m->forward(x); }, o);
  Tensor x = ones({2, 8});
  for (auto _ : state) benchmark::DoNotOptimize(f(net, x));
}
BENCHMARK(BM_CompiledNoopBackendModuleArg);

// The same with GPT-2 small as the module argument (148 parameters, 64 modules; built in fake
// mode: only the guards run, the backend does nothing).
void BM_CompiledNoopBackendGpt2Arg(benchmark::State& state) {
  CompileOptions o = noop_backend();
  std::optional<gpt::GPT> model;
  {
    ops::FakeModeScope fake;
    model.emplace(gpt::Config{});
  }
  auto f = compile([](gpt::GPT& m, const Tensor& idx) { return m->forward(idx); }, o);
  Tensor idx = zeros({8, 1024}, kInt64);
  for (auto _ : state) benchmark::DoNotOptimize(f(*model, idx));
}
BENCHMARK(BM_CompiledNoopBackendGpt2Arg);

// (c) the same function eagerly: nine adds of 8-element tensors.
void BM_Eager(benchmark::State& state) {
  auto f = sum_of_adds;
  call10(f, small_inputs(), state);
}
BENCHMARK(BM_Eager);

// (d) compiled with the "eager" backend: guards + dispatch + interpreting the graph.
void BM_CompiledEagerBackend(benchmark::State& state) {
  auto f = compile(sum_of_adds);
  call10(f, small_inputs(), state);
}
BENCHMARK(BM_CompiledEagerBackend);

// GPT-2 small (workloads.md: 12 layers, d 768, 12 heads, vocab 50304, B8 T1024) forward + loss,
// traced with fake parameters and fake inputs: nothing is allocated.
void BM_CaptureGpt2SmallFake(benchmark::State& state) {
  std::optional<gpt::GPT> model;
  {
    ops::FakeModeScope fake;  // fake parameters: building the model allocates nothing either
    model.emplace(gpt::Config{});
  }
  for (auto _ : state) {
    capture::Tracer tracer;
    Tensor idx = tracer.add_input(make_fake(TensorSpec{{8, 1024}, {}, 0, kInt64, kCPU}), {}, "idx");
    Tensor tgt = tracer.add_input(make_fake(TensorSpec{{8, 1024}, {}, 0, kInt64, kCPU}), {}, "targets");
    {
      capture::TraceScope scope(tracer);
      tracer.set_outputs({(*model)->loss(idx, tgt)});
    }
    benchmark::DoNotOptimize(tracer.graph.nodes().size());
  }
}
BENCHMARK(BM_CaptureGpt2SmallFake)->Unit(benchmark::kMillisecond);

// The same with the batch and sequence sizes symbolic (s0, s1): every shape is an expression.
void BM_CaptureGpt2SmallFakeDynamic(benchmark::State& state) {
  std::optional<gpt::GPT> model;
  {
    ops::FakeModeScope fake;
    model.emplace(gpt::Config{});
  }
  for (auto _ : state) {
    capture::Tracer tracer;
    std::vector<capture::SymbolSource> syms{{"s0", 0, 0}, {"s1", 0, 1}};
    Tensor idx = tracer.add_input(make_fake(TensorSpec{{8, 1024}, {}, 0, kInt64, kCPU}), syms, "idx");
    syms = {{"s0", 1, 0}, {"s1", 1, 1}};
    Tensor tgt = tracer.add_input(make_fake(TensorSpec{{8, 1024}, {}, 0, kInt64, kCPU}), syms, "targets");
    {
      capture::TraceScope scope(tracer);
      tracer.set_outputs({(*model)->loss(idx, tgt)});
    }
    benchmark::DoNotOptimize(tracer.graph.nodes().size());
  }
}
BENCHMARK(BM_CaptureGpt2SmallFakeDynamic)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
