// kiln::compile from C++: capture, guards and recompiles, dynamic shapes, a graph break, cond,
// explain() and lazy mode. See docs/compile.md.
#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <cstdio>
#include <iostream>

using namespace kiln;

int main() {
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));

  // A module argument: its parameters become graph inputs (optimizer steps need no recompile).
  auto step = compile([](nn::Sequential& m, const Tensor& x) { return m->forward(x).softmax(-1); });
  Tensor x = randn({3, 4});
  Tensor y = step(mlp, x);
  double diff = (y - mlp->forward(x).softmax(-1)).abs().max().item<double>();
  std::printf("compiled vs eager: max difference %g\n", diff);

  // A new batch size recompiles once; from then on dim 0 is symbolic.
  step(mlp, randn({5, 4}));
  step(mlp, randn({7, 4}));
  step(mlp, randn({9, 4}));
  ExplainReport r = step.report();
  std::printf("graphs after batch sizes 3, 5, 7, 9: %d (recompile: %s)\n", r.graph_count, r.recompile_reasons.at(0).c_str());

  // A graph break: item() needs data, so the function runs as two captured segments.
  auto normalize = [](const Tensor& t) {
    Tensor e = t.exp();
    double total = e.sum().item<double>();
    return e / total;
  };
  std::cout << "\nexplain(normalize):\n" << explain(normalize, randn({4}));

  // cond captures both branches instead of breaking.
  auto pick = [](const Tensor& t) { return cond(t.sum() > 0, [&] { return t * 2; }, [&] { return -t; }); };
  ExplainReport c = explain(pick, randn({4}));
  std::printf("\ncond: %d graph, %zu breaks; its graph:\n%s", c.graph_count, c.breaks.size(), c.graphs.at(0).c_str());

  // Lazy mode: ops are recorded, and run (compiled once per distinct graph) when data is read.
  Tensor z;
  {
    LazyScope lazy;
    z = (x * 2 + 1).relu().sum();
    const bool pending = z.is_fake();
    const double value = z.item<double>();  // a sync point: the pending graph runs
    std::printf("\nlazy: pending before the read: %s; value %.4f; eager: %.4f\n", pending ? "yes" : "no", value,
                (x * 2 + 1).relu().sum().item<double>());
  }
  return 0;
}
