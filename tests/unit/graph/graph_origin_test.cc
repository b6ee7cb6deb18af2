// Origins: the tracer records the op the user called and the user's line; decompose, the joint
// graph and the partition carry them (backward nodes marked), and the text form round-trips them.
#include <gtest/gtest.h>

#include <cstring>

#include "aot/aot.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"
#include "graph/graph.h"

namespace kiln::graph {
namespace {

using ops::OpId;

bool from_here(const Origin& o) { return o.file && std::strcmp(o.file, source_file(__FILE__)) == 0; }

TEST(GraphOrigin, TracedThroughDecomposeJointAndPartition) {
  capture::Tracer tracer;
  Tensor x = tracer.add_input(make_fake(TensorSpec{{4}, {}, 0, kFloat32, kCPU}), {}, "x");
  Tensor w = tracer.add_input(make_fake(TensorSpec{{4}, {}, 0, kFloat32, kCPU}), {}, "w");
  int gelu_line = 0, mul_line = 0;
  {
    capture::TraceScope scope(tracer);
    gelu_line = __LINE__ + 1;
    Tensor y = gelu(x);
    mul_line = __LINE__ + 1;
    Tensor z = mul(y, w);
    tracer.set_outputs({sum(z)});
  }
  const Graph& traced = tracer.graph;
  ASSERT_EQ(traced.nodes().size(), 3u);
  Node* g = traced.nodes().front();
  EXPECT_EQ(g->op, OpId::gelu);
  EXPECT_EQ(g->origin.op, OpId::gelu);
  EXPECT_TRUE(from_here(g->origin)) << (g->origin.file ? g->origin.file : "no file");
  EXPECT_EQ(g->origin.line, gelu_line);
  EXPECT_FALSE(g->origin.backward);

  // decompose: gelu's prims say gelu and its line; mul stays mul.
  Graph prims = aot::decompose(traced);
  int gelu_prims = 0;
  for (const Node* n : prims.nodes()) {
    ASSERT_TRUE(n->origin.known()) << n->name();
    EXPECT_TRUE(from_here(n->origin)) << n->name();
    EXPECT_FALSE(n->origin.backward);
    if (n->origin.op == OpId::gelu) {
      ++gelu_prims;
      EXPECT_EQ(n->origin.line, gelu_line);
      EXPECT_NE(n->op, OpId::gelu);  // a prim of it
    }
  }
  EXPECT_GE(gelu_prims, 4) << print(prims, {.origins = true});

  // joint: forward nodes as before; the derivative nodes say backward, of the op whose
  // derivative made them, at that op's line.
  aot::Joint j = aot::build_joint(aot::functionalize(prims), {true, true});
  int gelu_backward = 0, mul_backward = 0;
  for (const Node* n : j.graph->nodes()) {
    ASSERT_TRUE(n->origin.known()) << n->name() << "\n" << print(*j.graph, {.origins = true});
    EXPECT_TRUE(from_here(n->origin)) << n->name();
    if (!n->origin.backward) continue;
    if (n->origin.op == OpId::gelu) {
      ++gelu_backward;
      EXPECT_EQ(n->origin.line, gelu_line);
    }
    if (n->origin.op == OpId::mul) {
      ++mul_backward;
      EXPECT_EQ(n->origin.line, mul_line);
    }
  }
  EXPECT_GE(gelu_backward, 3) << print(*j.graph, {.origins = true});
  EXPECT_GE(mul_backward, 2) << print(*j.graph, {.origins = true});  // one product per input

  // partition: the forward graph has no backward nodes; the backward graph has the derivative
  // nodes, still named after gelu and mul.
  aot::Partition p = aot::partition(j);
  for (const Node* n : p.forward->nodes()) {
    EXPECT_FALSE(n->origin.backward) << n->name();
    EXPECT_TRUE(from_here(n->origin)) << n->name();
  }
  int bwd_gelu = 0;
  for (const Node* n : p.backward->nodes()) {
    EXPECT_TRUE(from_here(n->origin)) << n->name();
    bwd_gelu += n->origin.backward && n->origin.op == OpId::gelu;
  }
  EXPECT_EQ(bwd_gelu, gelu_backward);
}

TEST(GraphOrigin, PrintsAndParsesBack) {
  const std::string text =
      "graph(%x: f32[3]):\n"
      "  %0: f64[] = constant(0.5, wrapped=True)  # gelu @ model.py:12\n"
      "  %1: f32[3] = mul(%x, %0)  # gelu @ model.py:12\n"
      "  %2: f32[3] = neg(%1)  # gelu backward @ my dir/model.py:7\n"
      "  %3: f32[3] = exp(%2)  # softmax\n"
      "  %4: f32[3] = sin(%3)\n"
      "  %5: f32[3] = copy_(%x, %4)  # add @ c:\\work\\train.py:3\n"
      "  return (%4)\n";
  Graph g = parse(text);
  verify(g);
  EXPECT_EQ(print(g, {.origins = true}), text);
  std::vector<Node*> n(g.nodes().begin(), g.nodes().end());
  EXPECT_EQ(n[0]->origin, n[1]->origin);
  EXPECT_EQ(n[1]->origin.op, OpId::gelu);
  EXPECT_STREQ(n[1]->origin.file, "model.py");
  EXPECT_EQ(n[1]->origin.line, 12);
  EXPECT_TRUE(n[2]->origin.backward);
  EXPECT_STREQ(n[2]->origin.file, "my dir/model.py");
  EXPECT_EQ(n[3]->origin.op, OpId::softmax);
  EXPECT_EQ(n[3]->origin.file, nullptr);
  EXPECT_FALSE(n[4]->origin.known());
  EXPECT_STREQ(n[5]->origin.file, "c:\\work\\train.py");  // the line is after the last ':'
  // Without the option the text has no origins (what explain and the goldens print).
  const std::string plain = print(g);
  EXPECT_EQ(plain.find('#'), std::string::npos) << plain;
  EXPECT_TRUE(structurally_equal(parse(plain), g));  // origins don't take part
}

TEST(GraphOrigin, BadOriginsAreParseErrors) {
  auto expect_error = [](const std::string& origin, const std::string& what) {
    const std::string text = "graph(%x: f32[3]):\n  %0: f32[3] = neg(%x)  # " + origin + "\n  return (%0)\n";
    try {
      parse(text);
      ADD_FAILURE() << "parsed: " << origin;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("2:25:", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error("nope @ a.py:3", "with a known op");
  expect_error("gelu @ a.py", "'<file>:<line>'");
  expect_error("gelu @ a.py:x", "'<file>:<line>'");
  expect_error("gelu @ :3", "'<file>:<line>'");
  expect_error("", "with a known op");
  // An origin belongs after a node, nowhere else.
  EXPECT_THROW(parse("graph(%x: f32[3]):  # gelu\n  return (%x)\n"), Error);
}

TEST(GraphOrigin, InternedFilesCompareByPointer) {
  const std::string a = "model.py";
  EXPECT_EQ(intern_file(a), intern_file("model.py"));
  EXPECT_NE(intern_file("model.py"), intern_file("other.py"));
  EXPECT_STREQ(intern_file(a), "model.py");
}

}  // namespace
}  // namespace kiln::graph
