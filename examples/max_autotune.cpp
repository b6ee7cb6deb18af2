// Compile mode "max-autotune" (docs/compiler.md, "Modes"): inductor times a few block sizes of each
// generated kernel and races BLAS against a generated matmul, on inputs of the graph's sizes, and
// keeps the fastest; the choices are cached on disk, so a second run tunes nothing.
//
//   ninja -C build example_max_autotune && KILN_LOGS=autotune ./build/example_max_autotune
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <cstdio>

using namespace kiln;

int main() {
  auto mlp = [](const Tensor& x, const Tensor& w1, const Tensor& w2) { return softmax(x.matmul(w1).relu().matmul(w2), -1); };
  CompileOptions tuned;
  tuned.mode = "max-autotune";  // (backend "inductor", the default)
  auto f = compile(mlp, tuned), g = compile(mlp);
  Tensor x = randn({128, 256}), w1 = randn({256, 512}) * 0.05, w2 = randn({512, 256}) * 0.05;
  Tensor got = f(x, w1, w2);  // first call: capture, tuning (a progress bar on stderr), code generation
  std::printf("max-autotune vs default: max difference %.3g\n", (got - g(x, w1, w2)).abs().max().item<double>());
  std::printf("max-autotune vs eager:   max difference %.3g\n", (got - mlp(x, w1, w2)).abs().max().item<double>());
  return 0;
}
