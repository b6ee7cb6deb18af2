// Trains a small MLP twice from the same start: eagerly, and with its forward compiled by the
// "aot_eager" backend (forward and backward traced ahead of time, split by the min-cut
// partitioner). The losses match step for step. Run with KILN_LOGS=aot to see the joint graph,
// the partition and the saved tensors.
// Usage: example_aot [steps]
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
  Tensor x = randn({64, 8}), y = randn({64, 1});
  auto make_model = [] {
    manual_seed(1);
    return nn::Sequential(nn::Linear(8, 32), nn::GELU(), nn::Linear(32, 1));
  };
  nn::Sequential eager_model = make_model(), aot_model = make_model();
  auto loss_fn = [](nn::Sequential& m, const Tensor& in, const Tensor& target) {
    return (m->forward(in) - target).square().mean();
  };
  CompileOptions options;
  options.backend = "aot_eager";
  auto compiled_loss = compile(loss_fn, options);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.1}), aot_opt(aot_model->parameters(), {.lr = 0.1});
  for (int step = 0; step < steps; ++step) {
    Tensor le = loss_fn(eager_model, x, y);
    eager_opt.zero_grad();
    le.backward();
    eager_opt.step();
    Tensor la = compiled_loss(aot_model, x, y);  // one autograd node runs the compiled backward
    aot_opt.zero_grad();
    la.backward();
    aot_opt.step();
    std::printf("step %2d  eager loss %.6f  aot_eager loss %.6f\n", step, le.item<double>(), la.item<double>());
  }
  return 0;
}
