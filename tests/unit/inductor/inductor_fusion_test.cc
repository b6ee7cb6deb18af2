// Row groups (fusion.cc): a reduction with the reductions and pointwise nodes over its rows in one
// kernel. How many kernels a graph becomes, and that the fused kernels (persistent when the row
// fits in a block, looped when it does not, masked when the block does not divide it) compute
// what eager computes. Tiled pointwise kernels (emit_tile.cc), and a pointwise-shaped custom
// tile op fused with its neighbours (lower/custom.cc).
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include "graph/pass_manager.h"
#include "inductor/inductor.h"
#include "tests/unit/tile/tile_kernels.h"
#include "tile/op.h"

namespace kiln::inductor {
namespace {

// The kernels (and externs) a one-op graph becomes after decomposition.
std::vector<NodeKind> kernels_of(const std::string& graph_text) {
  auto g = std::make_shared<graph::Graph>(graph::parse(graph::run_pipeline("decompose", graph_text)));
  std::vector<NodeKind> kinds;
  for (const Node& n : lower_and_schedule(g).nodes) kinds.push_back(n.kind);
  return kinds;
}

TEST(InductorRowFusion, SoftmaxLayerNormAndRmsNormAreOneKernelEach) {
  const std::vector<NodeKind> one = {NodeKind::Reduction};
  EXPECT_EQ(kernels_of("graph(%x: f32[64, 128]):\n  %0: f32[64, 128] = softmax(%x, -1)\n  return (%0)\n"), one);
  EXPECT_EQ(kernels_of("graph(%x: f32[64, 128], %w: f32[128], %b: f32[128]):\n"
                       "  %0: f32[64, 128] = layer_norm(%x, [128], %w, %b, 1e-05)\n  return (%0)\n"),
            one);
  // rmsnorm: x * rsqrt(mean(x * x) + eps) * w
  EXPECT_EQ(kernels_of("graph(%x: f32[64, 128], %w: f32[128]):\n"
                       "  %0: f32[64, 128] = mul(%x, %x)\n"
                       "  %1: f32[64, 1] = mean(%0, [-1], True)\n"
                       "  %c: f64[] = constant(1e-06, wrapped=True)\n"
                       "  %2: f32[64, 1] = add(%1, %c)\n"
                       "  %3: f32[64, 1] = rsqrt(%2)\n"
                       "  %4: f32[64, 128] = mul(%x, %3)\n"
                       "  %5: f32[64, 128] = mul(%4, %w)\n"
                       "  return (%5)\n"),
            one);
  // A softmax over a leading dim: its max and sum share their rows, its epilogue (over [16, 8],
  // the rows being [8] x [16]) is not over them and stays a kernel of its own.
  EXPECT_EQ(kernels_of("graph(%x: f32[16, 8]):\n  %0: f32[16, 8] = softmax(%x, 0)\n  return (%0)\n"),
            (std::vector<NodeKind>{NodeKind::Reduction, NodeKind::Pointwise}));
}

CompileOptions inductor(bool dynamic = false) {
  CompileOptions o;
  o.backend = "inductor";
  o.dynamic = dynamic;
  return o;
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  if (got.numel() == 0) return;
  const double err = (got.to(kFloat64) - want.to(kFloat64)).abs().max().item<double>();
  EXPECT_LE(err, tol) << "compiled:\n" << got << "\neager:\n" << want;
}

TEST(InductorRowFusion, FusedKernelsMatchEagerForEveryRowLength) {
  // 1: a row of one; 96 and 4096: persistent, the block divides it; 300: persistent, masked;
  // 5000: longer than a block, looped and masked.
  for (auto [rows, len] : {std::pair<int64_t, int64_t>{1, 1}, {33, 96}, {3, 300}, {2, 4096}, {3, 5000}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + ", length " + std::to_string(len));
    Tensor x = randn({rows, len}) * 3.0, w = randn({len}), b = randn({len});
    Tensor t = randint(0, len, {rows});
    auto fn = [len](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& t) {
      return std::vector<Tensor>{softmax(x, -1), layer_norm(x, {len}, w, b),
                                 x * rsqrt(mean(x * x, {-1}, true) + 1e-6) * w, cross_entropy(x, t)};
    };
    auto f = compile(fn, inductor());
    std::vector<Tensor> got = f(x, w, b, t), want = fn(x, w, b, t);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-4);
  }
}

TEST(InductorRowFusion, StatisticsPerRowAreStoredBesideTheEpilogue) {
  // mean and rstd are outputs (as a training forward keeps them): a row group stores them too.
  auto fn = [](const Tensor& x) {
    Tensor mu = mean(x, {-1}, true);
    Tensor rstd = rsqrt(mean((x - mu) * (x - mu), {-1}, true) + 1e-5);
    return std::vector<Tensor>{(x - mu) * rstd, mu, rstd};
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({7, 200});
  std::vector<Tensor> got = f(x), want = fn(x);
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], 1e-5);
}

TEST(InductorRowFusion, EmptyRowsStillStoreTheirReductions) {
  // Rows of length 0: the epilogue stores nothing, the sums (0) are stored all the same.
  auto fn = [](const Tensor& x) {
    Tensor s = x.sum({-1}, true);
    return std::vector<Tensor>{s, x * 2.0 + s};
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({3, 0});
  std::vector<Tensor> got = f(x);
  expect_close(got[0], zeros({3, 1}), 0.0);
  EXPECT_EQ(got[1].size(0), 3);
  EXPECT_EQ(got[1].size(1), 0);
}

TEST(InductorRowFusion, DynamicRowCountRunsTheSameKernel) {
  auto fn = [](const Tensor& x) { return softmax(x, -1); };
  auto f = compile(fn, inductor(true));
  for (int64_t n : {5, 17, 64}) {
    Tensor x = randn({n, 40});
    expect_close(f(x), fn(x), 1e-6);
  }
  EXPECT_EQ(f.report().graphs.size(), 1u);
}

TEST(InductorTiledPointwise, BroadcastAndTransposedOperandsMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& a) { return (x * a + 1.0).tanh() + x.t().contiguous().t(); };
  auto f = compile(fn, inductor());
  for (std::vector<int64_t> shape : {std::vector<int64_t>{37, 13}, {1, 2048}, {3, 1}, {0, 5}}) {
    Tensor x = randn(shape), a = randn({shape[1]});
    expect_close(f(x, a), fn(x, a), 1e-6);
  }
}

// The seed's vector_add as a custom op (its own name: tile_op_test.cc registers test::vector_add).
Tensor vector_add(const Tensor& x, const Tensor& y) {
  static const auto op = tile::register_op({
      .name = "test::fused_vector_add",
      .program = [](const TensorList& in) { return tile::test::vector_add(256, in[0].dtype()); },
      .meta = [](const TensorList& in, const std::vector<double>&) {
        KILN_CHECK(in.size() == 2 && in[0].sizes() == in[1].sizes(), "two tensors of one shape");
        return std::vector<TensorSpec>{TensorSpec{in[0].sym_sizes(), {}, 0, in[0].dtype(), in[0].device()}};
      },
      .grid = [](const TensorList& in, const tile::Meta& m) {
        return tile::cpu::Grid(tile::cdiv(in[0].numel(), m.find("BLOCK")->to_int()));
      },
      .ints = [](const TensorList& in) { return std::vector<int64_t>{in[0].numel()}; },
  });
  return tile::call_op(op->def().name, {x, y}).at(0);
}

TEST(InductorCustomOp, PointwiseTileOpFusesWithItsNeighbours) {
  CompileOptions o = inductor();
  o.fullgraph = true;
  auto fn = [](const Tensor& x, const Tensor& y) { return vector_add(x * 2.0, y).relu() + 1.0; };
  auto f = compile(fn, o);
  Tensor x = randn({5000}), y = randn({5000});
  expect_close(f(x, y), (x * 2.0 + y).relu() + 1.0, 0.0);
  ASSERT_EQ(f.report().graph_count, 1);
  // The mul before it, the relu and add after it and the op itself: one kernel.
  EXPECT_EQ(kernels_of(f.report().graphs[0]), std::vector<NodeKind>{NodeKind::Pointwise});
  // Inputs of another shape than the kernel's element count reads: the op stays an extern.
  Tensor a = randn({30, 50});
  expect_close(f(a.t(), a.t()), (a.t() * 2.0 + a.t()).relu() + 1.0, 0.0);
}

}  // namespace
}  // namespace kiln::inductor
