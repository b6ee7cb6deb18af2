// decompose_for_joint: a detach() inside a decomposition (log_softmax's row max) is an
// aot::stop_gradient node, and build_joint gives it no derivative: cross_entropy's backward has
// no pass for the row max's gradient (which is zero), and its gradient is still eager's.
#include <gtest/gtest.h>

#include "aot/aot.h"
#include "aot/recorder.h"
#include "support/test_util.h"

namespace kiln::aot {
namespace {

const char* kGraph = R"(graph(%x: f64[4, 6], %t: i64[4]):
  %0: f64[] = cross_entropy(%x, %t)
  return (%0)
)";

int count(const graph::Graph& g, const std::function<bool(const graph::Node&)>& pred) {
  int k = 0;
  for (const graph::Node* n : g.nodes()) k += pred(*n);
  return k;
}
int stop_gradients(const graph::Graph& g) { return count(g, [](const graph::Node& n) { return is_stop_gradient(n); }); }
// amax's derivative compares the logits with their row max (an eq on [4, 6] floats); nothing
// else here does (the mean's zero-count test compares a scalar).
int logit_compares(const graph::Graph& g) {
  return count(g, [](const graph::Node& n) {
    if (n.kind != graph::NodeKind::Call || n.op != ops::OpId::eq) return false;
    const TensorSpec& s = n.inputs().at(0)->spec;
    return is_floating(s.dtype) && s.sizes.size() == 2;
  });
}

TEST(AotStopGradient, DetachInADecompositionIsAStopGradientNodeForTheJointOnly) {
  graph::Graph g = graph::parse(kGraph);
  EXPECT_EQ(stop_gradients(decompose(g)), 0);
  graph::Graph marked = decompose_for_joint(g);
  graph::verify(marked);
  EXPECT_EQ(stop_gradients(marked), 1);  // log_softmax's detached row max

  std::vector<Tensor> in = {test::make(test::random_values(24), {4, 6}), test::make({1, 5, 0, 3}, {4}, kInt64)};
  Tensor want = cross_entropy(in[0], in[1]);
  test::expect_close(graph::interpret(marked, in).at(0), want.to_vector<double>(), 1e-12, 1e-12, "forward");
}

TEST(AotStopGradient, JointGivesTheDetachedRowMaxNoDerivative) {
  graph::Graph g = graph::parse(kGraph);
  Joint plain = build_joint(functionalize(decompose(g)), {true, false});
  Joint j = build_joint(functionalize(decompose_for_joint(g)), {true, false});
  graph::verify(*j.graph);
  EXPECT_EQ(stop_gradients(*j.graph), 0);
  EXPECT_GT(logit_compares(*plain.graph), 0);  // without the stop-gradient: amax's mask
  EXPECT_EQ(logit_compares(*j.graph), 0);
  EXPECT_LT(j.graph->nodes().size(), plain.graph->nodes().size());

  // The joint's gradient against eager autograd's (inputs: x, t, the loss's tangent).
  Tensor x = test::make(test::random_values(24, -4, 4), {4, 6});
  Tensor t = test::make({1, 5, 0, 3}, {4}, kInt64);
  std::vector<Tensor> outs = graph::interpret(*j.graph, {x, t, test::make({1.0}, {})});
  ASSERT_EQ(j.grad_inputs, (std::vector<size_t>{0}));
  Tensor xr = x.detach();
  xr.requires_grad_();
  Tensor loss = cross_entropy(xr, t);
  loss.backward();
  test::expect_close(outs.at(0), loss.detach().to_vector<double>(), 1e-12, 1e-12, "loss");
  test::expect_close(outs.at(1), xr.grad().to_vector<double>(), 1e-12, 1e-12, "gradient");
}

}  // namespace
}  // namespace kiln::aot
