// The seed's vector_add written by hand in kiln's tile IR with the C++ builder, compiled for the
// CPU and run on tensors (docs/tile.md). Prints the kernel's IR, where its generated C++ is, how
// long the cold compile took, and checks the result against eager kiln.
//
//   ./build/example_tile_vector_add [n]
#include <kiln/kiln.h>

#include <cstdlib>
#include <iostream>

#include "tile/builder.h"
#include "tile/cpu/kernel.h"

using namespace kiln;

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000003;

  tile::Builder b("vector_add");
  auto x = b.arg_ptr("x", kFloat32), y = b.arg_ptr("y", kFloat32), out = b.arg_ptr("out", kFloat32);
  auto nn = b.arg_int("n");
  const int64_t BLOCK = b.constexpr_int("BLOCK", 1024);
  auto pid = b.program_id(0);
  auto offs = pid * BLOCK + b.arange(0, BLOCK);
  auto m = offs < nn;
  b.store(out + offs, b.load(x + offs, m) + b.load(y + offs, m), m);

  tile::cpu::Kernel k = tile::cpu::compile(b.finish());
  std::cout << k.ir() << "\n";
  std::cout << "generated C++: " << k.library().source_path() << "\n";
  std::cout << "cold compile: " << k.library().compile_seconds() << " s\n";

  Tensor xs = randn({n}), ys = randn({n}), outs = empty({n});
  k(tile::cpu::Grid(tile::cdiv(n, BLOCK)), xs, ys, outs, n);
  const bool same = eq(outs, xs + ys).all().item<bool>();
  std::cout << "n = " << n << ": " << (same ? "equal to x + y" : "DIFFERS from x + y") << "\n";
  return same ? 0 : 1;
}
