// Trains an MLP classifier on a synthetic data set: three interleaved spirals in the plane.
// Usage: example_mlp [epochs]
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace kiln;

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 200;
  manual_seed(0);
  // Data: 3 arms of 300 points each; point i of arm k at radius r and angle 4r + 2pi k/3, plus noise.
  const int64_t per_class = 300, classes = 3, n = per_class * classes;
  Tensor r = arange(0, n).to(kFloat32).remainder(double(per_class)) / double(per_class);
  Tensor label = arange(0, n).floor_divide(per_class);
  Tensor angle = r * 4.0 + label.to(kFloat32) * (2 * M_PI / classes) + randn({n}) * 0.2;
  Tensor x = stack({r * cos(angle), r * sin(angle)}, 1);

  nn::Sequential model(nn::Linear(2, 64), nn::ReLU(), nn::Linear(64, 64), nn::ReLU(), nn::Linear(64, classes));
  optim::Adam opt(model->parameters(), {.lr = 1e-2});
  nn::CrossEntropyLoss loss_fn;
  for (int epoch = 0; epoch <= epochs; ++epoch) {
    Tensor logits = model(x);
    Tensor loss = loss_fn(logits, label);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (epoch % 25 == 0) {
      const double acc = (logits.argmax(1) == label).to(kFloat32).mean().item<double>();
      std::printf("epoch %4d  loss %.4f  accuracy %.3f\n", epoch, loss.item<double>(), acc);
    }
  }
  return 0;
}
