// A matmul whose product is read only through transposes of its last two dims (a weight gradient
// x^T g transposed into the weight's shape) is stored transposed (lower/fallback.cc) and computed
// as (g^T x)^T by the plan: its buffer's strides, the values against eager's kernels, and the
// cases left as they were (the transpose is a graph output; a row-vector product).
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/ops.h>

#include "inductor/inductor.h"

namespace kiln::inductor {
namespace {

// The strides of the buffer the graph's matmul writes, evaluated.
Shape matmul_strides(const Program& p) {
  for (const Node& n : p.nodes)
    if (n.kind == NodeKind::Extern && n.call && n.call->op == ops::OpId::matmul) {
      Shape s;
      for (const SymInt& st : p.buffers[size_t(n.outputs.at(0))].strides) s.push_back(st.value());
      return s;
    }
  ADD_FAILURE() << "no matmul extern";
  return {};
}

double max_diff(const Tensor& a, const Tensor& b) { return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>(); }

TEST(InductorMatmulLayout, WeightGradientStoredTransposed) {
  const std::string text =
      "graph(%x: f32[6, 4], %g: f32[6, 5], %y: f32[5, 4]):\n"
      "  %xt: f32[4, 6]{strides=[1, 4]} = permute(%x, [1, 0])\n"
      "  %w: f32[4, 5] = matmul(%xt, %g)\n"
      "  %v: f32[4, 5] = view(%w, [4, 5])\n"
      "  %t: f32[5, 4]{strides=[1, 5]} = permute(%v, [1, 0])\n"
      "  %o: f32[5, 4] = add(%t, %y)\n"
      "  return (%o)\n";
  auto g = std::make_shared<graph::Graph>(graph::parse(text));
  EXPECT_EQ(matmul_strides(lower_and_schedule(g)), (Shape{1, 4}));  // [4, 5] stored as a contiguous [5, 4]
  const Tensor x = randn({6, 4}), gr = randn({6, 5}), y = randn({5, 4});
  const Tensor got = compile_graph(g)({x, gr, y}).at(0);
  // Eager: the product as the graph writes it, x^T g, then transposed.
  const Tensor want = matmul(x.t(), gr).t() + y;
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LT(max_diff(got, want), 1e-5) << got << "\n" << want;
}

TEST(InductorMatmulLayout, BatchedProduct) {
  const std::string text =
      "graph(%a: f32[2, 3, 6], %b: f32[2, 6, 5]):\n"
      "  %p: f32[2, 3, 5] = matmul(%a, %b)\n"
      "  %t: f32[2, 5, 3]{strides=[15, 1, 5]} = permute(%p, [0, 2, 1])\n"
      "  %o: f32[2, 5, 3] = mul(%t, %t)\n"
      "  return (%o)\n";
  auto g = std::make_shared<graph::Graph>(graph::parse(text));
  EXPECT_EQ(matmul_strides(lower_and_schedule(g)), (Shape{15, 1, 3}));
  const Tensor a = randn({2, 3, 6}), b = randn({2, 6, 5});
  const Tensor p = matmul(a, b).transpose(1, 2);
  const Tensor got = compile_graph(g)({a, b}).at(0);
  EXPECT_LT(max_diff(got, p * p), 1e-4);
}

TEST(InductorMatmulLayout, TransposeReturnedKeepsTheLayout) {
  // The transpose is an output: the product stays laid out as its spec says (the output a view of it).
  const std::string text =
      "graph(%a: f32[4, 6], %b: f32[6, 5]):\n"
      "  %p: f32[4, 5] = matmul(%a, %b)\n"
      "  %t: f32[5, 4]{strides=[1, 5]} = permute(%p, [1, 0])\n"
      "  return (%t)\n";
  auto g = std::make_shared<graph::Graph>(graph::parse(text));
  EXPECT_EQ(matmul_strides(lower_and_schedule(g)), (Shape{5, 1}));
  const Tensor a = randn({4, 6}), b = randn({6, 5});
  const Tensor got = compile_graph(g)({a, b}).at(0);
  EXPECT_EQ(got.strides(), (Shape{1, 5}));
  EXPECT_EQ(max_diff(got, matmul(a, b).t()), 0.0);
}

TEST(InductorMatmulLayout, RowProductKeepsTheLayout) {
  const std::string text =
      "graph(%a: f32[1, 6], %b: f32[6, 5], %y: f32[5, 1]):\n"
      "  %p: f32[1, 5] = matmul(%a, %b)\n"
      "  %t: f32[5, 1]{strides=[1, 5]} = permute(%p, [1, 0])\n"
      "  %o: f32[5, 1] = add(%t, %y)\n"
      "  return (%o)\n";
  auto g = std::make_shared<graph::Graph>(graph::parse(text));
  EXPECT_EQ(matmul_strides(lower_and_schedule(g)), (Shape{5, 1}));
  const Tensor a = randn({1, 6}), b = randn({6, 5}), y = randn({5, 1});
  EXPECT_EQ(max_diff(compile_graph(g)({a, b, y}).at(0), matmul(a, b).t() + y), 0.0);
}

}  // namespace
}  // namespace kiln::inductor
