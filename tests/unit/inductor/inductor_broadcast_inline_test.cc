// A value with several readers that loads nothing along its innermost dim (cross_entropy's
// one-hot gradient: a row's target and a per-row scale) is recomputed by each reader instead of
// stored (lower.cc, Lowering::loader): no buffer of the logits' size for it, results as eager's.
#include <gtest/gtest.h>

#include "inductor/inductor.h"
#include "support/test_util.h"

namespace kiln {
namespace {

// scatter_add of one value per row into zeros (read by a row sum and by the output), as
// cross_entropy's derivative writes it.
const char* kOneHot = R"(graph(%x: f32[8, 32], %t: i64[8, 1], %c: f32[8, 1]):
  %z: f32[8, 32] = full([8, 32], 0, dtype=f32, device="cpu")
  %o: f32[8, 32] = scatter_add(%z, 1, %t, %c)
  %n: f32[8, 32] = neg(%o)
  %s: f32[8, 1] = sum(%n, dim=[1], keepdim=True)
  %b: f32[8, 32]{strides=[1, 0]} = expand(%s, [8, 32])
  %e: f32[8, 32] = exp(%x)
  %m: f32[8, 32] = mul(%e, %b)
  %r: f32[8, 32] = add(%o, %m)
  return (%r)
)";

// A value as costly (six prims) with two readers that loads along its rows: stored once.
const char* kRowRead = R"(graph(%x: f32[8, 32], %y: f32[8, 32]):
  %o1: f32[8, 32] = mul(%y, %y)
  %o2: f32[8, 32] = mul(%o1, %y)
  %o3: f32[8, 32] = sin(%o2)
  %o4: f32[8, 32] = cos(%o3)
  %o5: f32[8, 32] = mul(%o4, %y)
  %o: f32[8, 32] = sin(%o5)
  %n: f32[8, 32] = neg(%o)
  %s: f32[8, 1] = sum(%n, dim=[1], keepdim=True)
  %b: f32[8, 32]{strides=[1, 0]} = expand(%s, [8, 32])
  %e: f32[8, 32] = exp(%x)
  %m: f32[8, 32] = mul(%e, %b)
  %r: f32[8, 32] = add(%o, %m)
  return (%r)
)";

int full_size_temps(const inductor::Program& p) {
  int k = 0;
  for (const inductor::Buffer& b : p.buffers)
    k += b.kind == inductor::BufferKind::Temp && b.sizes.size() == 2 && b.sizes[1] == SymInt(32);
  return k;
}

TEST(InductorBroadcastInline, OneHotGradientIsRecomputedNotStored) {
  auto g = std::make_shared<graph::Graph>(graph::parse(kOneHot));
  EXPECT_EQ(full_size_temps(inductor::lower_and_schedule(g)), 1);  // the output only
  std::vector<double> t = {3, 0, 31, 7, 7, 12, 1, 30};
  std::vector<Tensor> in = {test::make(test::random_values(256), {8, 32}, kFloat32), test::make(t, {8, 1}, kInt64),
                            test::make(test::random_values(8), {8, 1}, kFloat32)};
  const Tensor got = inductor::compile_graph(g)(in).at(0), want = graph::interpret(*g, in).at(0);
  test::expect_close(got, want.to_vector<double>(), 1e-5, 1e-6, "one-hot");
}

TEST(InductorBroadcastInline, AValueReadAlongItsRowsIsStillStored) {
  auto g = std::make_shared<graph::Graph>(graph::parse(kRowRead));
  EXPECT_EQ(full_size_temps(inductor::lower_and_schedule(g)), 2);
  std::vector<Tensor> in = {test::make(test::random_values(256), {8, 32}, kFloat32),
                            test::make(test::random_values(256), {8, 32}, kFloat32)};
  const Tensor got = inductor::compile_graph(g)(in).at(0), want = graph::interpret(*g, in).at(0);
  test::expect_close(got, want.to_vector<double>(), 1e-5, 1e-6, "row read");
}

}  // namespace
}  // namespace kiln
