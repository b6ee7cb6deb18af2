// DCE + CSE + verify on big graphs: the GPT-2 small joint graph (forward + loss + backward,
// captured on fake tensors, decomposed, functionalized, differentiated) and synthetic graphs of
// 5k to 200k nodes, to show that the passes grow linearly. Each iteration copies the graph
// (untimed) and runs dce, cse and verify on the copy; the counters give each pass's CPU time
// and the CPU time per node of the three.
//
//   ninja -C build kiln_bench_graph && ./build/kiln_bench_graph
//
// It uses only Graph calls that predate the O(1) graph (add_input, add_node, add_constant,
// nodes(), set_outputs), so the same file builds against an older kiln to compare.
#include <benchmark/benchmark.h>
#include <kiln/kiln.h>

#include <ctime>
#include <optional>
#include <unordered_map>

#include "../examples/gpt/model.h"
#include "aot/aot.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"
#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "ops/fake_mode.h"

namespace {

using namespace kiln;
using graph::Graph;
using graph::Value;

// A node-for-node copy (no spec inference).
Graph copy_of(const Graph& src) {
  Graph g;
  std::unordered_map<const Value*, Value*> map;
  for (Value* v : src.inputs()) map[v] = g.add_input(v->spec, v->name);
  auto mapped = [&](graph::NodeArg a) {
    if (auto* v = std::get_if<Value*>(&a)) *v = map.at(*v);
    if (auto* l = std::get_if<graph::ValueList>(&a))
      for (Value*& e : *l)
        if (e) e = map.at(e);
    return a;
  };
  for (const auto& n : src.nodes()) {
    if (n->kind == graph::NodeKind::Constant) {
      map[n->outputs[0]] = g.add_constant(n->literal, n->wrapped);
      continue;
    }
    std::vector<graph::NodeArg> args;
    for (const graph::NodeArg& a : n->args) args.push_back(mapped(a));
    std::vector<TensorSpec> specs;
    for (const Value* o : n->outputs) specs.push_back(o->spec);
    graph::Node* m = g.add_node(n->op, std::move(args), std::move(specs));
    for (size_t k = 0; k < n->outputs.size(); ++k) map[n->outputs[k]] = m->outputs[k];
  }
  std::vector<Value*> outs;
  for (Value* v : src.outputs()) outs.push_back(map.at(v));
  g.set_outputs(outs);
  return g;
}

// GPT-2 small (12 layers, d 768) forward + loss on fake tensors, through decompose,
// functionalize and build_joint (every floating input needs a gradient).
const Graph& gpt2_joint() {
  static const std::shared_ptr<Graph> joint = [] {
    std::optional<gpt::GPT> model;
    {
      ops::FakeModeScope fake;
      model.emplace(gpt::Config{});
    }
    capture::Tracer tracer;
    Tensor idx = tracer.add_input(make_fake(TensorSpec{{8, 1024}, {}, 0, kInt64, kCPU}), {}, "idx");
    Tensor tgt = tracer.add_input(make_fake(TensorSpec{{8, 1024}, {}, 0, kInt64, kCPU}), {}, "targets");
    {
      capture::TraceScope scope(tracer);
      tracer.set_outputs({(*model)->loss(idx, tgt)});
    }
    Graph functional = aot::functionalize(aot::decompose(tracer.graph));
    std::vector<bool> needs;
    for (const Value* v : functional.inputs()) needs.push_back(is_floating(v->spec.dtype));
    return aot::build_joint(functional, needs).graph;
  }();
  return *joint;
}

// n nodes in groups of four: a chain step c' = exp(c) + exp(c) (the second exp is a duplicate
// for CSE) and a dead branch mul(exp(c), x) for DCE; every dead branch also reads the input x,
// so x has n/4 users.
Graph synthetic(int64_t n) {
  Graph g;
  const TensorSpec spec{{16}, {}, 0, kFloat32, kCPU};
  Value* x = g.add_input(spec, "x");
  Value* c = x;
  for (int64_t i = 0; i + 4 <= n; i += 4) {
    Value* a = g.add_node(ops::OpId::exp, {c}, {spec})->outputs[0];
    Value* dup = g.add_node(ops::OpId::exp, {c}, {spec})->outputs[0];
    g.add_node(ops::OpId::mul, {a, x}, {spec});
    c = g.add_node(ops::OpId::add, {a, dup}, {spec})->outputs[0];
  }
  g.set_outputs({c});
  return g;
}

// This thread's CPU time in ms: the passes run on one thread, and on a shared machine CPU time
// is steadier than wall time.
double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

void run_passes(benchmark::State& state, const Graph& src) {
  double dce_ms = 0, cse_ms = 0, verify_ms = 0;
  size_t after = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Graph g = copy_of(src);
    state.ResumeTiming();
    double t = cpu_ms();
    graph::dce(g);
    dce_ms += cpu_ms() - t;
    t = cpu_ms();
    graph::cse(g);
    cse_ms += cpu_ms() - t;
    t = cpu_ms();
    graph::verify(g);
    verify_ms += cpu_ms() - t;
    after = g.nodes().size();
    state.PauseTiming();
    { Graph drop = std::move(g); }  // freeing the copy is not part of the passes
    state.ResumeTiming();
  }
  const double iters = double(state.iterations()), nodes = double(src.nodes().size());
  state.counters["nodes"] = nodes;
  state.counters["nodes_after"] = double(after);
  state.counters["dce_ms"] = dce_ms / iters;
  state.counters["cse_ms"] = cse_ms / iters;
  state.counters["verify_ms"] = verify_ms / iters;
  state.counters["us_per_node"] = (dce_ms + cse_ms + verify_ms) * 1e3 / iters / nodes;
}

void BM_Gpt2SmallJoint(benchmark::State& state) { run_passes(state, gpt2_joint()); }
BENCHMARK(BM_Gpt2SmallJoint)->Unit(benchmark::kMillisecond);

void BM_Synthetic(benchmark::State& state) {
  const Graph src = synthetic(state.range(0));
  run_passes(state, src);
}
BENCHMARK(BM_Synthetic)->Arg(5000)->Arg(10000)->Arg(20000)->Arg(50000)->Arg(100000)->Arg(200000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
