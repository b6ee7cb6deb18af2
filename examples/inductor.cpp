// The "inductor" backend: a function compiled into generated C++ kernels (docs/compiler.md).
//
//   ninja -C build example_inductor && KILN_LOGS=fusion ./build/example_inductor
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <cstdio>

using namespace kiln;

int main() {
  CompileOptions o;
  o.backend = "inductor";
  // softmax, a bias and a GELU: three kernels (row max, row sum of exp, then the pointwise rest
  // with the division, the bias and the GELU inlined into one loop).
  auto f = compile([](const Tensor& x, const Tensor& b) { return gelu(softmax(x, -1) + b, "tanh"); }, o);
  Tensor x = randn({64, 256}), b = randn({256});
  Tensor got = f(x, b), want = gelu(softmax(x, -1) + b, "tanh");
  std::printf("compiled vs eager: max difference %.3g\n", (got - want).abs().max().item<double>());
  // A dynamic size: the same kernels run for every batch size (sizes are kernel arguments).
  o.dynamic = true;
  auto g = compile([](const Tensor& x) { return (x * x).sum({1}).sqrt(); }, o);
  for (int64_t n : {3, 10, 100}) {
    Tensor y = randn({n, 32});
    std::printf("rows %3lld: max difference %.3g\n", (long long)n, (g(y) - (y * y).sum({1}).sqrt()).abs().max().item<double>());
  }
  std::printf("graphs compiled for the dynamic function: %d\n", g.report().graph_count);
  return 0;
}
