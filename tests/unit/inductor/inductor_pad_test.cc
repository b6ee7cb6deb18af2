// constant_pad lowered as index math (lower/pad.cc): padding, cropping (negative pads), several
// dims, a fill value, an integer dtype and a transposed input, each against eager's kernel, and
// the pad fused into its reader (no extern left).
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/ops.h>

#include "inductor/inductor.h"

namespace kiln::inductor {
namespace {

struct Case {
  std::string x_type, pad, fill, out_type;
};

// compiled `constant_pad(x, pad, fill) * 2` against eager on the same x.
void check(const Case& c, const Tensor& x) {
  const std::string text = "graph(%x: " + c.x_type + "):\n  %0: " + c.out_type + " = constant_pad(%x, " + c.pad + ", " +
                           c.fill + ")\n  %1: " + c.out_type + " = add(%0, %0)\n  return (%1)\n";
  SCOPED_TRACE(text);
  auto g = std::make_shared<graph::Graph>(graph::parse(text));
  for (const Node& n : lower_and_schedule(g).nodes) EXPECT_NE(n.kind, NodeKind::Extern);
  std::vector<ops::Arg> args = {x, graph::box_arg(g->nodes().front()->args[1], nullptr),
                                graph::box_arg(g->nodes().front()->args[2], nullptr)};
  const Tensor padded = ops::call(ops::OpId::constant_pad, std::move(args)).at(0);
  const Tensor want = padded + padded;
  const Tensor got = compile_graph(g)({x}).at(0);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ((got.to(kFloat64) - want.to(kFloat64)).abs().max().item<double>(), 0.0) << got << "\n" << want;
}

TEST(InductorPad, MatchesEager) {
  const Tensor x = randn({3, 5});
  check({"f32[3, 5]", "[2, 1]", "0", "f32[3, 8]"}, x);
  check({"f32[3, 5]", "[-1, -2]", "0", "f32[3, 2]"}, x);          // crops
  check({"f32[3, 5]", "[1, -2, -1, 2]", "0.5", "f32[4, 4]"}, x);  // both dims, mixed, a fill
  check({"i64[3, 5]", "[0, 3, 2, 0]", "7", "i64[5, 8]"}, randint(0, 100, {3, 5}));
}

TEST(InductorPad, TransposedInput) {
  const Tensor x = randn({6, 4});
  const std::string text =
      "graph(%x: f32[6, 4]):\n"
      "  %t: f32[4, 6]{strides=[1, 4]} = permute(%x, [1, 0])\n"
      "  %0: f32[4, 9] = constant_pad(%t, [1, 2], 0)\n"
      "  %1: f32[4, 9] = add(%0, %0)\n"
      "  return (%1)\n";
  auto g = std::make_shared<graph::Graph>(graph::parse(text));
  const Tensor p = ops::call(ops::OpId::constant_pad, {x.t(), SymShape{1, 2}, kiln::Scalar(0.0)}).at(0);
  const Tensor got = compile_graph(g)({x}).at(0);
  EXPECT_EQ((got - (p + p)).abs().max().item<double>(), 0.0);
}

}  // namespace
}  // namespace kiln::inductor
