// decompose(g, keep): the composites `keep` names stay whole (kiln.onnx maps them to single ONNX
// ops), the others still become prims, and the graph computes what the original does.
#include <gtest/gtest.h>

#include <algorithm>

#include "aot/aot.h"
#include "support/test_util.h"

namespace kiln::aot {
namespace {

const char* kGraph = R"(graph(%x: f32[2, 8], %w: f32[4, 8], %b: f32[4]):
  %0: f32[2, 4] = linear(%x, %w, bias=%b)
  %1: f32[2, 4] = gelu(%0)
  %2: f32[2, 4] = softmax(%1, -1)
  return (%2)
)";

std::vector<std::string> ops_of(const graph::Graph& g) {
  std::vector<std::string> r;
  for (const graph::Node* n : g.nodes()) r.push_back(n->name());
  return r;
}
bool has(const std::vector<std::string>& ops, const std::string& op) { return std::count(ops.begin(), ops.end(), op) > 0; }

TEST(AotDecomposeKeep, KeptCompositesStayWholeAndTheRestBecomesPrims) {
  graph::Graph g = graph::parse(kGraph);
  std::vector<std::string> all = ops_of(decompose(g));
  EXPECT_FALSE(has(all, "linear") || has(all, "gelu") || has(all, "softmax"));
  graph::Graph kept = decompose(g, [](ops::OpId op) { return op == ops::OpId::linear || op == ops::OpId::softmax; });
  graph::verify(kept);
  std::vector<std::string> ops = ops_of(kept);
  EXPECT_TRUE(has(ops, "linear") && has(ops, "softmax"));
  EXPECT_FALSE(has(ops, "gelu"));  // not kept: its prims (erf...) instead
  EXPECT_TRUE(has(ops, "erf"));

  std::vector<Tensor> in = {test::make(test::random_values(16), {2, 8}, kFloat32), test::make(test::random_values(32), {4, 8}, kFloat32),
                            test::make(test::random_values(4), {4}, kFloat32)};
  Tensor want = softmax(gelu(linear(in[0], in[1], in[2])), -1);
  test::expect_close(graph::interpret(kept, in).at(0), want.to_vector<double>(), 1e-6, 1e-6, "kept");
}

}  // namespace
}  // namespace kiln::aot
