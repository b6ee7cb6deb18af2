// A whole training step in one compiled graph: forward, loss, backward(), clip_grad_norm_ and an
// AdamW update inside kiln::compile. Trains a small MLP twice from the same start, eagerly and
// compiled, and prints both losses per step and the number of graphs (1: no recompiles).
// Usage: example_compile_train_step [steps] [backend]
#include <kiln/compile.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <cstdio>
#include <cstdlib>

using namespace kiln;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  manual_seed(0);
  Tensor x = randn({64, 8}), y = randint(0, 4, {64});
  auto make_model = [] {
    manual_seed(1);
    return nn::Sequential(nn::Linear(8, 32), nn::GELU(), nn::Linear(32, 4));
  };
  nn::Sequential eager_model = make_model(), compiled_model = make_model();
  optim::AdamWOptions o;
  o.lr = 1e-2;
  o.capturable = true;  // bias corrections as tensor ops: no step.item() inside the graph
  optim::AdamW eager_opt(eager_model->parameters(), o), compiled_opt(compiled_model->parameters(), o);
  auto train_step = [](nn::Sequential& m, optim::AdamW& opt) {
    return [&m, &opt](const Tensor& in, const Tensor& target) {
      Tensor loss = cross_entropy(m->forward(in), target);
      loss.backward();
      nn::utils::clip_grad_norm_(m->parameters(), 1.0);
      opt.step();
      return loss;
    };
  };
  auto eager_step = train_step(eager_model, eager_opt);
  CompileOptions options;
  options.fullgraph = true;
  if (argc > 2) options.backend = argv[2];
  auto compiled_step = compile(train_step(compiled_model, compiled_opt), options);
  for (int i = 0; i < steps; ++i) {
    eager_opt.zero_grad();  // outside the compiled step (docs/compile.md, "Training steps")
    compiled_opt.zero_grad();
    const double le = eager_step(x, y).item<double>();
    const double lc = compiled_step(x, y).item<double>();
    std::printf("step %2d  eager %.6f  compiled %.6f\n", i, le, lc);
  }
  std::printf("graphs: %d, graph breaks: %zu\n", compiled_step.report().graph_count, compiled_step.report().breaks.size());
}
