// The min-cut partitioner on small joint graphs whose optimal saved sets are known, the max-flow
// it uses, and forward+backward graphs that compute what the joint graph computes.
#include <gtest/gtest.h>

#include <algorithm>

#include "aot/aot.h"
#include "support/test_util.h"

namespace kiln::aot {
namespace {

Joint joint_of(const std::string& ir, size_t primals, size_t outputs, std::vector<size_t> grad_inputs) {
  Joint j;
  j.graph = std::make_shared<graph::Graph>(graph::parse(ir));
  j.num_primals = primals;
  j.num_outputs = outputs;
  j.grad_inputs = std::move(grad_inputs);
  for (size_t i = 0; i < outputs; ++i) j.output_tangent.push_back(int(i));
  return j;
}

bool recomputes(const Partition& p, const std::string& op) {
  return std::find(p.recomputed.begin(), p.recomputed.end(), op) != p.recomputed.end();
}

// Forward then backward on random inputs equals the joint graph run at once.
void expect_split_matches_joint(const Joint& j, const Partition& p) {
  std::vector<Tensor> in;
  for (const graph::Value* v : j.graph->inputs()) {
    Shape s;
    for (const SymInt& d : v->spec.sizes) s.push_back(d.hint());
    in.push_back(test::random_tensor(s, v->spec.dtype));
  }
  std::vector<Tensor> whole = graph::interpret(*j.graph, in);
  std::vector<Tensor> primals(in.begin(), in.begin() + long(j.num_primals));
  std::vector<Tensor> fwd = graph::interpret(*p.forward, primals);
  const size_t first_saved = j.num_outputs + j.mutated_inputs.size();
  ASSERT_EQ(fwd.size(), first_saved + p.num_saved);
  std::vector<Tensor> bwd_in(fwd.begin() + long(first_saved), fwd.end());
  bwd_in.insert(bwd_in.end(), in.begin() + long(j.num_primals), in.end());
  std::vector<Tensor> grads = graph::interpret(*p.backward, bwd_in);
  for (size_t i = 0; i < first_saved; ++i) test::expect_close(fwd[i], whole[i].to_vector<double>(), 1e-6, 1e-6, "fwd");
  ASSERT_EQ(grads.size(), whole.size() - first_saved);
  for (size_t i = 0; i < grads.size(); ++i)
    test::expect_close(grads[i], whole[first_saved + i].to_vector<double>(), 1e-6, 1e-6, "grad");
}

TEST(AotPartition, FlowNetworkMaxFlow) {
  // The textbook network (CLRS fig. 26.6): max flow 23; cut {s, v1, v2, v4}.
  FlowNetwork n(6);
  const int s = 0, v1 = 1, v2 = 2, v3 = 3, v4 = 4, t = 5;
  n.add_edge(s, v1, 16), n.add_edge(s, v2, 13), n.add_edge(v2, v1, 4), n.add_edge(v1, v3, 12);
  n.add_edge(v3, v2, 9), n.add_edge(v2, v4, 14), n.add_edge(v4, v3, 7), n.add_edge(v3, t, 20), n.add_edge(v4, t, 4);
  EXPECT_EQ(n.max_flow(s, t), 23);
  EXPECT_TRUE(n.source_side(v1) && n.source_side(v2) && n.source_side(v4));
  EXPECT_FALSE(n.source_side(v3) || n.source_side(t));
}

const char* kPointwiseChain = R"(graph(%x: f32[100], %t: f32[100]):
  %0: f32[100] = sin(%x)
  %1: f32[100] = exp(%0)
  %2: f32[100] = mul(%t, %1)
  %3: f32[100] = cos(%x)
  %4: f32[100] = mul(%2, %3)
  return (%1, %4)
)";

TEST(AotPartition, PointwiseChainSavesOnlyThePrimal) {
  Joint j = joint_of(kPointwiseChain, 1, 1, {0});
  Partition p = partition(j);  // budget 0: exp(sin(x)) and cos(x) are recomputed from x
  EXPECT_EQ(p.num_saved, 1u);
  EXPECT_EQ(p.saved_bytes, 400);
  EXPECT_EQ(p.saved_activation_bytes, 0);
  EXPECT_EQ(p.forward->outputs().at(1), p.forward->inputs().at(0));
  EXPECT_TRUE(recomputes(p, "cos") && recomputes(p, "exp"));
  expect_split_matches_joint(j, p);
}

TEST(AotPartition, BudgetOneSavesWhatTheBackwardReads) {
  Joint j = joint_of(kPointwiseChain, 1, 1, {0});
  Partition p = partition(j, {.activation_memory_budget = 1.0});
  EXPECT_EQ(p.num_saved, 2u);  // exp(...) and cos(x): nothing recomputed
  EXPECT_EQ(p.saved_bytes, 800);
  EXPECT_TRUE(p.recomputed.empty());
  expect_split_matches_joint(j, p);
  Partition half = partition(j, {.activation_memory_budget = 0.5});
  // The primal costs nothing to keep; budget 0.5 may keep at most half of the 800 bytes.
  EXPECT_EQ(p.saved_activation_bytes, 800);
  EXPECT_GT(half.saved_activation_bytes, 0);
  EXPECT_LE(half.saved_activation_bytes, 400);
  expect_split_matches_joint(j, half);
  EXPECT_THROW(partition(j, {.activation_memory_budget = 1.5}), Error);
}

TEST(AotPartition, MatmulIsNeverRecomputed) {
  // Saving x and w (800 bytes) would let the backward redo everything, but not the matmul:
  // one 400-byte value at or after it is the optimum.
  Joint j = joint_of(R"(graph(%x: f32[10, 10], %w: f32[10, 10], %t: f32[10, 10]):
  %0: f32[10, 10] = matmul(%x, %w)
  %1: f32[10, 10] = tanh(%0)
  %2: f32[10, 10] = mul(%1, %1)
  %3: f32[10, 10] = mul(%t, %2)
  return (%1, %3)
)", 2, 1, {0});
  Partition p = partition(j);
  EXPECT_EQ(p.num_saved, 1u);
  EXPECT_EQ(p.saved_bytes, 400);
  EXPECT_FALSE(recomputes(p, "matmul"));
  expect_split_matches_joint(j, p);
}

TEST(AotPartition, BigReductionsAreNotRecomputed) {
  // The backward reads x and sum(exp(x)); recomputing the sum from x would be free in bytes but
  // reduces 1000 elements to one, so it is saved too.
  Joint j = joint_of(R"(graph(%x: f32[1000], %t: f32[]):
  %0: f32[1000] = exp(%x)
  %1: f32[] = sum(%0)
  %2: f32[1000] = mul(%x, %t)
  %3: f32[1000] = mul(%2, %1)
  return (%1, %3)
)", 1, 1, {0});
  Partition p = partition(j);
  EXPECT_EQ(p.num_saved, 2u);
  EXPECT_EQ(p.saved_bytes, 4004);
  EXPECT_FALSE(recomputes(p, "sum"));
  expect_split_matches_joint(j, p);
}

TEST(AotPartition, RandomOpsAreNeverRecomputed) {
  Joint j = joint_of(R"(graph(%x: f32[50], %t: f32[50]):
  %0: f32[50] = rand_uniform([50], 1, 0, dtype=f32)
  %1: f32[50] = mul(%x, %0)
  %2: f32[50] = mul(%t, %0)
  return (%1, %2)
)", 1, 1, {0});
  Partition p = partition(j);
  EXPECT_EQ(p.num_saved, 1u);
  EXPECT_FALSE(recomputes(p, "rand_uniform"));
  EXPECT_EQ(p.backward->inputs().at(0)->spec.sizes.size(), 1u);
  expect_split_matches_joint(j, p);
}

TEST(AotPartition, JointOfARealFunctionSplitsCorrectly) {
  // build_joint on a captured-style graph, then every budget gives the joint's gradients.
  graph::Graph g = graph::parse(R"(graph(%x: f64[4, 3], %w: f64[3, 5]):
  %0: f64[4, 5] = matmul(%x, %w)
  %1: f64[4, 5] = tanh(%0)
  %2: f64[4, 5] = mul(%1, %1)
  %3: f64[] = sum(%2)
  return (%3)
)");
  Joint j = build_joint(g, {true, true});
  EXPECT_EQ(j.num_tangents(), 1u);
  EXPECT_EQ(j.grad_inputs, (std::vector<size_t>{0, 1}));
  for (double b : {0.0, 0.5, 1.0}) expect_split_matches_joint(j, partition(j, {.activation_memory_budget = b}));
}

}  // namespace
}  // namespace kiln::aot
