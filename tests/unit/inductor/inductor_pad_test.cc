// constant_pad lowered as index math (lower/pad.cc): padding, cropping (negative pads), several
// dims, a fill value, an integer dtype and a transposed input, each against eager's kernel, and
// the pad fused into its reader (no extern left). Split's backward (pads of head-split views,
// summed): one kernel whose loads are masked, not clamped, and contiguous along its lanes.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/ops.h>

#include <sstream>

#include "graph/pass_manager.h"
#include "inductor/emit_tile.h"
#include "inductor/inductor.h"
#include "tile/ir.h"

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

// What split's backward is after decomposition in a GPT block: per piece, [B, H, T, D] transposed
// to [B, T, H, D], viewed as [B, T, H * D] and padded into its place along the last dim of
// [B, T, 3 * H * D], the three summed. (B, H, T, D) = (2, 4, 8, 16).
constexpr const char* kSplitBackward =
    "graph(%q: f32[2, 4, 8, 16], %k: f32[2, 4, 8, 16], %v: f32[2, 4, 8, 16]):\n"
    "  %tq: f32[2, 8, 4, 16]{strides=[512, 16, 128, 1]} = permute(%q, [0, 2, 1, 3])\n"
    "  %tk: f32[2, 8, 4, 16]{strides=[512, 16, 128, 1]} = permute(%k, [0, 2, 1, 3])\n"
    "  %tv: f32[2, 8, 4, 16]{strides=[512, 16, 128, 1]} = permute(%v, [0, 2, 1, 3])\n"
    "  %rq: f32[2, 8, 64] = reshape(%tq, [2, 8, 64])\n"
    "  %rk: f32[2, 8, 64] = reshape(%tk, [2, 8, 64])\n"
    "  %rv: f32[2, 8, 64] = reshape(%tv, [2, 8, 64])\n"
    "  %pq: f32[2, 8, 192] = constant_pad(%rq, [0, 128], 0)\n"
    "  %pk: f32[2, 8, 192] = constant_pad(%rk, [64, 64], 0)\n"
    "  %pv: f32[2, 8, 192] = constant_pad(%rv, [128, 0], 0)\n"
    "  %s0: f32[2, 8, 192] = add(%pq, %pk)\n"
    "  %s1: f32[2, 8, 192] = add(%s0, %pv)\n"
    "  return (%s1)\n";

TEST(InductorPad, SplitBackwardIsOneKernelMatchingEager) {
  auto g = std::make_shared<graph::Graph>(graph::parse(graph::run_pipeline("decompose", kSplitBackward)));
  const Tensor q = randn({2, 4, 8, 16}), k = randn({2, 4, 8, 16}), v = randn({2, 4, 8, 16});
  auto piece = [](const Tensor& t) { return t.permute({0, 2, 1, 3}).reshape({2, 8, 64}); };
  const Tensor want = cat({piece(q), piece(k), piece(v)}, 2);
  const Tensor got = compile_graph(g)({q, k, v}).at(0);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ((got - want).abs().max().item<double>(), 0.0);
}

// The kernel's inner block is one head (16 lanes, the largest power of two dividing the view's
// divisor), so each piece's load is lane + a per-row, per-program offset: no floor division,
// mod, or clamp (minimum / maximum) on a block of lanes, and masked loads.
TEST(InductorPad, SplitBackwardLoadsAreContiguousAlongTheLanes) {
  auto g = std::make_shared<graph::Graph>(graph::parse(graph::run_pipeline("decompose", kSplitBackward)));
  const Program p = lower_and_schedule(g);
  const Node* kernel = nullptr;
  for (const Node& n : p.nodes)
    if (n.kind != NodeKind::Extern) {
      ASSERT_EQ(kernel, nullptr) << "one kernel";
      kernel = &n;
    }
  ASSERT_NE(kernel, nullptr);
  const std::string text = tile::print(emit_tile(p, *kernel).program);
  EXPECT_NE(text.find("XBLOCK=16"), std::string::npos) << text;
  std::istringstream lines(text);
  int masked_loads = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("16] = ") == std::string::npos) continue;  // (a block along the lanes)
    for (const char* op : {"floor_divide(", "remainder(", "minimum(", "maximum("})
      EXPECT_EQ(line.find(op), std::string::npos) << line << "\n" << text;
    masked_loads += line.find("= load(") != std::string::npos && line.find(", %") != std::string::npos;
  }
  EXPECT_EQ(masked_loads, 3) << text;
}

}  // namespace
}  // namespace kiln::inductor
