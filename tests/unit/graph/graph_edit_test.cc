// Graph editing: erase / insert / move / replace under random edits against a plain reference
// list (program order, the order index, users lists, is_output), relabelling under many inserts
// at one place, and iteration that survives erasing the current node.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "graph/graph.h"
#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

using ops::OpId;

TensorSpec f32(int64_t n) { return TensorSpec{{n}, {}, 0, kFloat32, kCPU}; }

// The graph must match the reference order; users lists must hold exactly each value's uses.
void expect_matches(const Graph& g, const std::vector<Node*>& ref, std::mt19937& rng) {
  ASSERT_EQ(g.nodes().size(), ref.size());
  ASSERT_EQ(std::vector<Node*>(g.nodes().begin(), g.nodes().end()), ref);
  std::vector<Node*> reversed(g.nodes().rbegin(), g.nodes().rend());
  std::reverse(reversed.begin(), reversed.end());
  ASSERT_EQ(reversed, ref);
  if (!ref.empty()) {
    EXPECT_EQ(g.nodes().front(), ref.front());
    EXPECT_EQ(g.nodes().back(), ref.back());
  }
  for (int k = 0; k < 50 && !ref.empty(); ++k) {  // "a before b" agrees with list positions
    const size_t i = rng() % ref.size(), j = rng() % ref.size();
    EXPECT_EQ(ref[i]->before(*ref[j]), i < j) << i << " vs " << j;
  }
  std::map<const Value*, std::multiset<const Node*>> uses;  // recounted from the arguments
  for (Node* n : ref)
    for (const Value* v : n->inputs()) uses[v].insert(n);
  auto check_users = [&](const Value* v) {
    EXPECT_EQ(std::multiset<const Node*>(v->users.begin(), v->users.end()), uses[v]);
  };
  for (const Value* v : g.inputs()) check_users(v);
  for (Node* n : ref)
    for (const Value* o : n->outputs) {
      check_users(o);
      const bool out = std::find(g.outputs().begin(), g.outputs().end(), o) != g.outputs().end();
      EXPECT_EQ(g.is_output(o), out);
      EXPECT_EQ(g.has_uses(o), out || !uses[o].empty());
    }
}

TEST(GraphEdit, RandomEditsMatchAReferenceList) {
  std::mt19937 rng(1234);
  Graph g;
  Value* x = g.add_input(f32(4), "x");
  std::vector<Node*> ref;  // the program order the edits should produce
  auto pos = [&](const Node* n) { return size_t(std::find(ref.begin(), ref.end(), n) - ref.begin()); };
  // Nodes that read only x can go anywhere; users of other nodes are appended (SSA holds).
  auto reads_only_x = [&](const Node* n) {
    for (const Value* v : n->inputs())
      if (v != x) return false;
    return true;
  };
  for (int step = 0; step < 3000; ++step) {
    const int what = int(rng() % 7);
    if (what <= 1 || ref.size() < 4) {  // insert a node on x before a random node (or at the end)
      const size_t at = rng() % (ref.size() + 1);
      const Node* before = at < ref.size() ? ref[at] : nullptr;
      Node* n = rng() % 2 ? g.add_node(OpId::neg, {x}, {f32(4)}, before) : g.add_node(OpId::add, {x, x}, {f32(4)}, before);
      ref.insert(ref.begin() + long(at), n);
    } else if (what == 2) {  // append a user of a random node's output
      Value* v = ref[rng() % ref.size()]->outputs[0];
      ref.push_back(g.add_node(OpId::mul, {v, rng() % 2 ? v : x}, {f32(4)}));
    } else if (what == 3) {  // erase a random unused node
      Node* n = ref[rng() % ref.size()];
      if (g.has_uses(n->outputs[0])) {
        EXPECT_THROW(g.erase_node(n), Error);
        continue;
      }
      g.erase_node(n);
      ref.erase(ref.begin() + long(pos(n)));
    } else if (what == 4) {  // move an unused node that reads only x
      Node* n = ref[rng() % ref.size()];
      if (!n->outputs[0]->users.empty() || !reads_only_x(n)) continue;
      ref.erase(ref.begin() + long(pos(n)));
      const size_t at = rng() % (ref.size() + 1);
      g.move_before(n, at < ref.size() ? ref[at] : nullptr);
      ref.insert(ref.begin() + long(at), n);
    } else if (what == 5) {  // new graph outputs
      std::vector<Value*> outs;
      for (int k = int(rng() % 4); k > 0; --k) outs.push_back(ref[rng() % ref.size()]->outputs[0]);
      g.set_outputs(outs);
    } else {  // replace a value by one defined before it
      Node* a = ref[rng() % ref.size()];
      Node* b = ref[rng() % ref.size()];
      if (!b->before(*a)) std::swap(a, b);
      if (a == b) continue;
      g.replace_all_uses(a->outputs[0], b->outputs[0]);
      EXPECT_FALSE(g.has_uses(a->outputs[0]));
    }
    if (step % 100 == 0) {
      expect_matches(g, ref, rng);
      verify(g);
    }
  }
  expect_matches(g, ref, rng);
  verify(g);
  EXPECT_GT(ref.size(), 100u);
}

TEST(GraphEdit, ManyInsertsAtOnePlaceKeepTheOrder) {
  Graph g;
  Value* x = g.add_input(f32(2), "x");
  Node* first = g.add_node(OpId::neg, {x}, {f32(2)});
  Node* last = g.add_node(OpId::neg, {x}, {f32(2)});
  std::vector<Node*> ref{first, last};
  // Each round inserts right before `last` and right after `first`: the gaps there run out
  // again and again, so labels are spread many times.
  for (int i = 0; i < 2000; ++i) {
    ref.insert(ref.end() - 1, g.add_node(OpId::neg, {x}, {f32(2)}, last));
    ref.insert(ref.begin() + 1, g.add_node(OpId::neg, {x}, {f32(2)}, ref[1]));
  }
  std::mt19937 rng(7);
  expect_matches(g, ref, rng);
  for (size_t i = 1; i < ref.size(); ++i) ASSERT_TRUE(ref[i - 1]->before(*ref[i])) << i;
  verify(g);
}

TEST(GraphEdit, IterationSurvivesErasingTheCurrentNode) {
  Graph g;
  Value* x = g.add_input(f32(3), "x");
  std::vector<Node*> all;
  for (int i = 0; i < 10; ++i) all.push_back(g.add_node(OpId::neg, {x}, {f32(3)}));
  g.set_outputs({all[3]->outputs[0]});
  std::vector<Node*> seen;
  for (Node* n : g.nodes()) {  // forward, erasing as we go
    seen.push_back(n);
    if (!g.has_uses(n->outputs[0]) && n != all[5]) g.erase_node(n);
  }
  EXPECT_EQ(seen, all);
  EXPECT_EQ(std::vector<Node*>(g.nodes().begin(), g.nodes().end()), (std::vector<Node*>{all[3], all[5]}));
  seen.clear();
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {  // reverse, erasing the front too
    seen.push_back(*it);
    if (*it == all[5]) g.erase_node(*it);
  }
  EXPECT_EQ(seen, (std::vector<Node*>{all[5], all[3]}));
  ASSERT_EQ(g.nodes().size(), 1u);
  g.set_outputs({});
  for (Node* n : g.nodes()) g.erase_node(n);
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(g.nodes().begin(), g.nodes().end());
  verify(g);
}

TEST(GraphEdit, IsOutputCountsRepeatsAndFollowsReplacement) {
  Graph g;
  Value* x = g.add_input(f32(3), "x");
  Value* a = g.add_node(OpId::neg, {x}, {f32(3)})->outputs[0];
  Value* b = g.add_node(OpId::exp, {x}, {f32(3)})->outputs[0];
  g.set_outputs({a, a, x});
  EXPECT_TRUE(g.is_output(a));
  EXPECT_TRUE(g.is_output(x));
  EXPECT_FALSE(g.is_output(b));
  g.replace_all_uses(a, b);
  EXPECT_FALSE(g.is_output(a));
  EXPECT_TRUE(g.is_output(b));
  EXPECT_EQ(g.outputs(), (std::vector<Value*>{b, b, x}));
  g.erase_node(a->producer);
  g.set_outputs({b});
  EXPECT_FALSE(g.is_output(x));
  EXPECT_THROW(g.erase_node(b->producer), Error);  // still an output
  verify(g);
}

TEST(GraphEdit, SetArgsKeepsUsersLists) {
  Graph g;
  Value* x = g.add_input(f32(3), "x");
  Value* y = g.add_input(f32(3), "y");
  Node* n = g.add_node(OpId::mul, {x, x}, {f32(3)});
  g.set_outputs({n->outputs[0]});
  EXPECT_EQ(x->users.size(), 2u);
  g.set_args(n, {x, y});
  EXPECT_EQ(x->users, std::vector<Node*>{n});
  EXPECT_EQ(y->users, std::vector<Node*>{n});
  verify(g);
  // Editing the arguments behind the graph's back leaves stale users lists: the verifier says so.
  n->args[1] = x;
  EXPECT_THROW(verify(g), Error);
}

// Nodes from a pass (fold's constants) land before the node they replace and take its origin.
TEST(GraphEdit, ConstantInsertedBeforeANodeTakesItsOrigin) {
  Graph g = parse("graph(%x: f32[2]):\n  %0: f32[2] = constant([1.0, 2.0])\n  %1: f32[2] = neg(%0)\n"
                  "  %2: f32[2] = mul(%x, %1)  # gelu @ model.py:3\n  return (%2)\n");
  Node* mul = g.nodes().back();
  Value* c = g.add_constant(full({2}, 3.0), false, mul);
  EXPECT_EQ(c->producer->origin, mul->origin);
  EXPECT_TRUE(c->producer->before(*mul));
  EXPECT_EQ(c->producer->outputs[0], c);
}

}  // namespace
}  // namespace kiln::graph
