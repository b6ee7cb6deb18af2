// The seed's vector_add written by hand in kiln's tile IR with the C++ builder, compiled for the
// CPU and run on tensors (docs/tile.md). Prints the kernel's IR, where its generated C++ is, how
// long the cold compile took, and checks the result against eager kiln. Then registers it as the
// custom op mylib::vector_add and calls it inside kiln::compile: one graph, no break, equal to eager.
//
//   ./build/example_tile_vector_add [n]
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <cstdlib>
#include <iostream>

#include "tile/builder.h"
#include "tile/cpu/kernel.h"
#include "tile/op.h"

using namespace kiln;

tile::Program vector_add(DType d = kFloat32) {
  tile::Builder b("vector_add");
  auto x = b.arg_ptr("x", d), y = b.arg_ptr("y", d), out = b.arg_ptr("out", d);
  auto nn = b.arg_int("n");
  const int64_t BLOCK = b.constexpr_int("BLOCK", 1024);
  auto pid = b.program_id(0);
  auto offs = pid * BLOCK + b.arange(0, BLOCK);
  auto m = offs < nn;
  b.store(out + offs, b.load(x + offs, m) + b.load(y + offs, m), m);
  return b.finish();
}

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000003;
  const int64_t BLOCK = 1024;

  tile::cpu::Kernel k = tile::cpu::compile(vector_add());
  std::cout << k.ir() << "\n";
  std::cout << "generated C++: " << k.library().source_path() << "\n";
  std::cout << "cold compile: " << k.library().compile_seconds() << " s\n";

  Tensor xs = randn({n}), ys = randn({n}), outs = empty({n});
  k(tile::cpu::Grid(tile::cdiv(n, BLOCK)), xs, ys, outs, n);
  const bool same = eq(outs, xs + ys).all().item<bool>();
  std::cout << "n = " << n << ": " << (same ? "equal to x + y" : "DIFFERS from x + y") << "\n";

  // The kernel as an op: its program (per input dtype), meta, grid and size argument.
  tile::register_op({
      .name = "mylib::vector_add",
      .program = [](const TensorList& in) { return vector_add(in[0].dtype()); },
      .meta = [](const TensorList& in, const std::vector<double>&) {
        KILN_CHECK(in.size() == 2 && in[0].dtype() == in[1].dtype() && in[0].sizes() == in[1].sizes(),
                   "x and y must have one dtype and shape");
        return std::vector<TensorSpec>{TensorSpec{in[0].sym_sizes(), {}, 0, in[0].dtype(), in[0].device()}};
      },
      .grid = [](const TensorList& in, const tile::Meta& m) {
        return tile::cpu::Grid(tile::cdiv(in[0].numel(), m.find("BLOCK")->to_int()));
      },
      .ints = [](const TensorList& in) { return std::vector<int64_t>{in[0].numel()}; },
      .derivative = [](const ops::GradCtx& g) { return TensorList{g.grads[0], g.grads[0]}; },
  });
  CompileOptions options;
  options.fullgraph = true;  // a graph break is an error
  auto f = kiln::compile(
      [](const Tensor& a, const Tensor& c) { return tile::call_op("mylib::vector_add", {a, c})[0].relu() * 2; }, options);
  const bool compiled_same = eq(f(xs, ys), (xs + ys).relu() * 2).all().item<bool>();
  const ExplainReport r = f.report();
  std::cout << "mylib::vector_add inside kiln::compile: " << r.graph_count << " graph, " << r.breaks.size() << " breaks, "
            << (compiled_same ? "equal to" : "DIFFERENT from") << " eager; the graph:\n" << r.graphs.at(0);
  return same && compiled_same && r.breaks.empty() ? 0 : 1;
}
