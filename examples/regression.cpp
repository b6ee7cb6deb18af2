// Fits a small nonlinear regression model with kiln's eager tensors and autograd:
//   y = tanh(x @ w1 + b1) @ w2 + b2, trained by plain gradient descent on a synthetic target.
// Usage: example_regression [steps]
#include <kiln/kiln.h>

#include <cstdio>
#include <cstdlib>

using namespace kiln;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  manual_seed(0);
  // Data: 512 points in 4-d; the target is a fixed smooth function of them plus noise.
  Tensor x = randn({512, 4});
  Tensor y = sin(x.slice(1, 0, 1)) + (x.slice(1, 1, 2) * x.slice(1, 2, 3)) * 0.5 + randn({512, 1}) * 0.05;

  Tensor w1 = (randn({4, 32}) * 0.5).requires_grad_();
  Tensor b1 = zeros({32}).requires_grad_();
  Tensor w2 = (randn({32, 1}) * 0.2).requires_grad_();
  Tensor b2 = zeros({1}).requires_grad_();
  const double lr = 0.1;

  for (int step = 0; step <= steps; ++step) {
    Tensor pred = matmul(tanh(matmul(x, w1) + b1), w2) + b2;
    Tensor loss = mean(square(pred - y));
    loss.backward();
    {
      NoGradGuard no_grad;  // parameter updates are not part of the graph
      for (Tensor* p : {&w1, &b1, &w2, &b2}) {
        p->sub_(p->grad() * lr);
        p->set_grad(Tensor());
      }
    }
    if (step % 50 == 0) std::printf("step %4d  loss %.5f\n", step, loss.item<double>());
  }
  return 0;
}
