// Custom ops made of tile kernels (tile/op.h, ops/custom.h): the seed's vector_add registered as
// an op runs eagerly, is captured by kiln::compile as one node naming it (fullgraph: no break)
// and runs there through its kernel, has its derivative, and its meta rejects bad inputs with
// the op's name; the compiler finds the op's tile program from the graph node.
#include <gtest/gtest.h>

#include <kiln/compile.h>
#include <kiln/kiln.h>

#include "graph/graph.h"
#include "tests/unit/tile/tile_kernels.h"
#include "tile/op.h"

namespace kiln::tile {
namespace {

std::shared_ptr<const TileOp> vector_add_op() {
  static const std::shared_ptr<const TileOp> op = register_op({
      .name = "test::vector_add",
      .program = [](const TensorList& in) { return test::vector_add(1024, in[0].dtype()); },
      .meta = [](const TensorList& in, const std::vector<double>&) {
        KILN_CHECK(in.size() == 2, "takes 2 tensors, got ", in.size());
        KILN_CHECK(in[0].dtype() == in[1].dtype(), "x and y must have one dtype, got ", name(in[0].dtype()), " and ",
                   name(in[1].dtype()));
        KILN_CHECK(in[0].sizes() == in[1].sizes(), "x and y must have one shape, got ", shape_str(in[0].sizes()),
                   " and ", shape_str(in[1].sizes()));
        return std::vector<TensorSpec>{TensorSpec{in[0].sym_sizes(), {}, 0, in[0].dtype(), in[0].device()}};
      },
      .grid = [](const TensorList& in, const Meta& m) { return cpu::Grid(cdiv(in[0].numel(), m.find("BLOCK")->to_int())); },
      .ints = [](const TensorList& in) { return std::vector<int64_t>{in[0].numel()}; },
      .derivative = [](const ops::GradCtx& g) { return TensorList{g.grads[0], g.grads[0]}; },
  });
  return op;
}

Tensor vector_add(const Tensor& x, const Tensor& y) { return call_op("test::vector_add", {x, y}).at(0); }

TEST(TileOp, RunsEagerlyThroughItsKernel) {
  vector_add_op();
  Tensor x = randn({3000}), y = randn({3000});
  EXPECT_TRUE(vector_add(x, y).eq(x + y).all().item<bool>());
  Tensor a = randn({30, 50});
  EXPECT_TRUE(vector_add(a.t(), a.t()).eq(a.t() + a.t()).all().item<bool>()) << "non-contiguous inputs";
  Tensor d = randn({100}).to(kFloat64);  // another dtype: another compiled kernel
  EXPECT_TRUE(vector_add(d, d).eq(d + d).all().item<bool>());
}

TEST(TileOp, IsOneGraphNodeInACompiledFunction) {
  auto op = vector_add_op();
  for (const char* backend : {"eager", "aot_eager"}) {
    CompileOptions options;
    options.backend = backend;
    options.fullgraph = true;  // a graph break is an error
    auto f = kiln::compile([](const Tensor& x, const Tensor& y) { return vector_add(x * 2, y).relu() + 1; }, options);
    Tensor x = randn({5000}), y = randn({5000});
    EXPECT_TRUE(f(x, y).eq((x * 2 + y).relu() + 1).all().item<bool>()) << backend;
    const ExplainReport r = f.report();
    ASSERT_EQ(r.graph_count, 1) << backend;
    EXPECT_TRUE(r.breaks.empty()) << backend;
    EXPECT_NE(r.graphs[0].find("custom(\"test::vector_add\""), std::string::npos) << r.graphs[0];
    // What the compiler sees: the node names the op, and the op keeps its tile program.
    graph::Graph g = graph::parse(r.graphs[0]);
    int found = 0;
    for (graph::Node* n : g.nodes())
      if (n->op == ops::OpId::custom) {
        ++found;
        auto custom = ops::find_custom_op(std::get<std::string>(n->args[0]));
        auto tile_op = std::dynamic_pointer_cast<const TileOp>(custom);
        ASSERT_TRUE(tile_op);
        EXPECT_EQ(tile_op.get(), op.get());
        EXPECT_EQ(tile_op->def().program({x, y}).name, "vector_add");
      }
    EXPECT_EQ(found, 1) << backend;
  }
}

TEST(TileOp, HasItsDerivative) {
  vector_add_op();
  Tensor x = randn({64}).requires_grad_(), y = randn({64}).requires_grad_();
  Tensor w = arange(0.0, 64.0, 1.0);
  (vector_add(x, y) * w).sum().backward();
  EXPECT_TRUE(x.grad().eq(w).all().item<bool>());
  EXPECT_TRUE(y.grad().eq(w).all().item<bool>());
}

TEST(TileOp, BadInputsAreErrorsNamingTheOp) {
  vector_add_op();
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Tensor x = randn({10});
  EXPECT_NE(message([&] { vector_add(x, x.to(kFloat64)); }).find("test::vector_add: x and y must have one dtype, got float32 and float64"),
            std::string::npos);
  EXPECT_NE(message([&] { vector_add(x, randn({11})); }).find("test::vector_add: x and y must have one shape, got [10] and [11]"),
            std::string::npos);
  EXPECT_NE(message([&] { call_op("test::unknown", {x}); }).find("custom op test::unknown is not registered"), std::string::npos);
  EXPECT_NE(message([&] { register_op({.name = "plain"}); }).find("needs a program"), std::string::npos);
  auto no_derivative = std::make_shared<ops::CustomOp>();
  no_derivative->name = "test::no_derivative";
  no_derivative->meta = [](const TensorList& in, const std::vector<double>&) { return std::vector<TensorSpec>{in[0].spec()}; };
  no_derivative->kernel = [](const TensorList& in, const std::vector<double>&, const std::vector<TensorSpec>&) {
    return TensorList{in[0] * 1};
  };
  ops::register_custom_op(no_derivative);
  Tensor r = randn({3}).requires_grad_();
  EXPECT_NE(message([&] { call_op("test::no_derivative", {r})[0].sum().backward(); }).find("test::no_derivative has no derivative"),
            std::string::npos);
  auto incomplete = std::make_shared<ops::CustomOp>();
  incomplete->name = "test::incomplete";
  EXPECT_NE(message([&] { ops::register_custom_op(incomplete); }).find("needs a meta function and a kernel"), std::string::npos);
  incomplete->name = "nonamespace";
  EXPECT_NE(message([&] { ops::register_custom_op(incomplete); }).find("namespace::name"), std::string::npos);
}

}  // namespace
}  // namespace kiln::tile
