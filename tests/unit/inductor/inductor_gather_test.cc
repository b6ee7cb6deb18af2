// gather / index_select lowered as indirect loads and scatter_add of a few positions per row as a
// where (lower/gather.cc): each against eager's kernel,
// fused into its reader (no extern left), an out-of-range index (eager's error), the text form of
// an indirect load (print / parse round trip, its errors), and cross_entropy's pattern: the
// log-softmax is never materialized.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/ops.h>

#include "inductor/inductor.h"
#include "support/test_util.h"

namespace kiln::inductor {
namespace {

std::shared_ptr<graph::Graph> graph_of(const std::string& text) {
  return std::make_shared<graph::Graph>(graph::parse(text));
}

void expect_no_extern(const std::shared_ptr<graph::Graph>& g) {
  for (const Node& n : lower_and_schedule(g).nodes) EXPECT_NE(n.kind, NodeKind::Extern) << n.name;
}

double max_diff(const Tensor& a, const Tensor& b) { return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>(); }

TEST(InductorGather, GatherMatchesEager) {
  const Tensor x = randn({4, 7});
  const Tensor idx = randint(0, 7, {4, 3});
  auto g = graph_of(
      "graph(%x: f32[4, 7], %i: i64[4, 3]):\n"
      "  %0: f32[4, 3] = gather(%x, 1, %i)\n"
      "  %1: f32[4, 3] = add(%0, %0)\n"
      "  return (%1)\n");
  expect_no_extern(g);
  const Tensor want = gather(x, 1, idx) * 2.0;
  const Tensor got = compile_graph(g)({x, idx}).at(0);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(max_diff(got, want), 0.0) << got << "\n" << want;
}

TEST(InductorGather, GatherAlongDim0OfAnIntTensor) {
  const Tensor x = randint(-50, 50, {5, 3});
  const Tensor idx = randint(0, 5, {2, 3});
  auto g = graph_of(
      "graph(%x: i64[5, 3], %i: i64[2, 3]):\n"
      "  %0: i64[2, 3] = gather(%x, 0, %i)\n"
      "  return (%0)\n");
  expect_no_extern(g);
  EXPECT_EQ(max_diff(compile_graph(g)({x, idx}).at(0), gather(x, 0, idx)), 0.0);
}

TEST(InductorGather, IndexSelectMatchesEager) {  // embedding's forward: rows of a table
  const Tensor w = randn({6, 5});
  const Tensor idx = tensor<int64_t>({5, 0, 3, 3});
  auto g = graph_of(
      "graph(%w: f32[6, 5], %i: i64[4]):\n"
      "  %0: f32[4, 5] = index_select(%w, 0, %i)\n"
      "  %1: f32[4, 5] = mul(%0, %0)\n"
      "  return (%1)\n");
  expect_no_extern(g);
  const Tensor rows = index_select(w, 0, idx);
  EXPECT_EQ(max_diff(compile_graph(g)({w, idx}).at(0), rows * rows), 0.0);
  // Along the last dim (columns picked), from an i32 index.
  auto g2 = graph_of(
      "graph(%w: f32[6, 5], %i: i32[3]):\n"
      "  %0: f32[6, 3] = index_select(%w, 1, %i)\n"
      "  return (%0)\n");
  const Tensor i32 = tensor<int64_t>({4, 1, 4}).to(kInt32);
  EXPECT_EQ(max_diff(compile_graph(g2)({w, i32}).at(0), index_select(w, 1, i32)), 0.0);
}

// An index out of range: the kernel records it and the plan raises the kiln::Error eager's kernel
// raises (index_error.h), naming the index and the size; the process goes on as before.
TEST(InductorGather, OutOfRangeIndexRaisesEagersError) {
  const Tensor x = randn({2, 4});
  auto g = graph_of(
      "graph(%x: f32[2, 4], %i: i64[2, 2]):\n"
      "  %0: f32[2, 2] = gather(%x, 1, %i)\n"
      "  return (%0)\n");
  const GraphFn f = compile_graph(g);
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{1, 4, 0, 3}, std::vector<int64_t>{1, 2, -1, 3}}) {
    const Tensor idx = tensor<int64_t>(bad, {2, 2});
    std::string want;
    try {
      gather(x, 1, idx);
    } catch (const Error& e) {
      want = e.message();
    }
    ASSERT_FALSE(want.empty());
    test::expect_error([&] { f({x, idx}); }, want);
    test::expect_error([&] { f({x, idx}); }, "hint: indices must be in [0, 4)");
  }
  const Tensor good = tensor<int64_t>({1, 2, 0, 3}, {2, 2});
  EXPECT_EQ(max_diff(f({x, good}).at(0), gather(x, 1, good)), 0.0);
}

// log_softmax's value at the target column, as cross_entropy decomposes it: the gather reads the
// log-softmax's function at one column per row, so no [N, C] buffer is written.
TEST(InductorGather, PicksTheLogSoftmaxWithoutMaterializingIt) {
  const Tensor x = randn({8, 33});
  const Tensor t = randint(0, 33, {8, 1});
  auto g = graph_of(
      "graph(%x: f32[8, 33], %t: i64[8, 1]):\n"
      "  %m: f32[8, 1] = amax(%x, dim=[1], keepdim=True)\n"
      "  %s: f32[8, 33] = sub(%x, %m)\n"
      "  %e: f32[8, 33] = exp(%s)\n"
      "  %z: f32[8, 1] = sum(%e, dim=[1], keepdim=True)\n"
      "  %l: f32[8, 1] = log(%z)\n"
      "  %lp: f32[8, 33] = sub(%s, %l)\n"
      "  %p: f32[8, 1] = gather(%lp, 1, %t)\n"
      "  %r: f32[] = sum(%p)\n"
      "  return (%r)\n");
  const Program p = lower_and_schedule(g);
  for (const Buffer& b : p.buffers)
    if (b.kind == BufferKind::Temp) EXPECT_NE(b.sizes.size() == 2 && b.sizes[1] == SymInt(33), true) << print(p);
  const Tensor lp = log_softmax(x, 1);
  const double want = gather(lp, 1, t).sum().item<double>();
  EXPECT_NEAR(compile_graph(g)({x, t}).at(0).item<double>(), want, 1e-4);
}

// gather's derivative: scatter_add into zeros at one (or a few) positions per row, a where on the
// column (duplicates add up in order, an out-of-range index adds nothing).
TEST(InductorGather, ScatterAddOfAFewPositionsIsAWhere) {
  const Tensor base = randn({4, 6}), src = randn({4, 2});
  const Tensor idx = tensor<int64_t>({5, 0, 2, 2, 1, 4, 3, 3}, {4, 2});
  auto g = graph_of(
      "graph(%b: f32[4, 6], %i: i64[4, 2], %s: f32[4, 2]):\n"
      "  %0: f32[4, 6] = scatter_add(%b, 1, %i, %s)\n"
      "  %1: f32[4, 6] = mul(%0, %0)\n"
      "  return (%1)\n");
  expect_no_extern(g);
  const Tensor want = scatter_add(base, 1, idx, src);
  EXPECT_EQ(max_diff(compile_graph(g)({base, idx, src}).at(0), want * want), 0.0);
  // Along dim 0 of an i64 tensor, one position per column.
  auto g0 = graph_of(
      "graph(%b: i64[3, 5], %i: i64[1, 5], %s: i64[1, 5]):\n"
      "  %0: i64[3, 5] = scatter_add(%b, 0, %i, %s)\n"
      "  return (%0)\n");
  const Tensor b0 = randint(-9, 9, {3, 5}), i0 = randint(0, 3, {1, 5}), s0 = randint(-9, 9, {1, 5});
  EXPECT_EQ(max_diff(compile_graph(g0)({b0, i0, s0}).at(0), scatter_add(b0, 0, i0, s0)), 0.0);
}

TEST(InductorGather, IndirectLoadPrintsAndParses) {
  auto g = graph_of(
      "graph(%x: f32[4, 7], %i: i64[4, 3]):\n"
      "  %0: f32[4, 3] = gather(%x, 1, %i)\n"
      "  return (%0)\n");
  const Program p = lower_and_schedule(g);
  const std::string text = print(p);
  EXPECT_NE(text.find("load(g0 < 7 = t"), std::string::npos) << text;
  EXPECT_NE(text.find("in0[(g0 + 7*i0)]"), std::string::npos) << text;
  const Program q = parse(text);
  EXPECT_EQ(print(q), text);
  EXPECT_NO_THROW(verify(q));
  // A load's gather variable is named by its position and needs its value.
  const std::string head =
      "in0: input 0 f32[4, 7] strides [7, 1]\n"
      "in1: input 1 i64[4] strides [1]\n"
      "buf2: temp f32[4] strides [1]\n"
      "k: pointwise -> buf2 over [i0 < 4]\n"
      "    t0: i64 = load in1[i0]\n";
  EXPECT_NO_THROW(verify(parse(head + "    t1: f32 = load(g0 < 7 = t0) in0[(g0 + 7*i0)]\n    store t1\noutputs: buf2\n")));
  test::expect_error([&] { parse(head + "    t1: f32 = load(g1 < 7 = t0) in0[(g1 + 7*i0)]\n    store t1\noutputs: buf2\n"); },
                     "expected gather variable g0");
  test::expect_error([&] {  // (a float's value as a position)
    verify(parse(head + "    t1: f32 = load in0[i0]\n    t2: f32 = load(g0 < 7 = t1) in0[(g0 + 7*i0)]\n    store t2\noutputs: buf2\n"));
  }, "gather variable g0 is not an integer");
}

}  // namespace
}  // namespace kiln::inductor
