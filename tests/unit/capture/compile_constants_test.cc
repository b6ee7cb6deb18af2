// What a C++ compiled function bakes in: values a lambda captures are constants of the graph,
// listed by explain() with their value and origin; a changing value is passed as an argument
// (docs/compile.md, "Constants"). And kiln::cond's check that both branches agree.
#include <kiln/compile.h>

#include "support/test_util.h"

namespace kiln {
namespace {
using test::expect_error;

using test::random_tensor;

bool mentions(const std::vector<std::string>& lines, const std::string& a, const std::string& b) {
  for (const std::string& l : lines)
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
  return false;
}

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) EXPECT_DOUBLE_EQ(x[i], y[i]) << i;
}

TEST(CompileConstants, CapturedValuesAreListedAndBakedIn) {
  double k = 2.5;
  auto f = compile([&](const Tensor& x) { return x * k + 1; });
  Tensor x = random_tensor({4}, kFloat32);
  expect_equal(f(x), x * 2.5 + 1);
  ExplainReport r = f.report();
  EXPECT_TRUE(mentions(r.constants, "graph 0: 2.5", "in mul at ")) << r.str();
  EXPECT_TRUE(mentions(r.constants, "graph 0: 1", "compile_constants_test.cc")) << r.str();
  EXPECT_NE(r.str().find("constants baked into the graphs:"), std::string::npos);
  // C++ captures are not re-read (a compiled function cannot see them): the graph keeps 2.5.
  k = 4.0;
  expect_equal(f(x), x * 2.5 + 1);
  EXPECT_EQ(f.report().graph_count, 1);
}

TEST(CompileConstants, AChangingValueIsAnArgument) {
  // As a number argument it is guarded by value: each distinct value is one graph.
  auto by_number = compile([](const Tensor& x, double k) { return x * k; });
  Tensor x = random_tensor({4}, kFloat32);
  expect_equal(by_number(x, 2.0), x * 2.0);
  expect_equal(by_number(x, 4.0), x * 4.0);
  EXPECT_EQ(by_number.report().graph_count, 2);
  // As a 0-d tensor it is a graph input: one graph for every value.
  auto by_tensor = compile([](const Tensor& x, const Tensor& k) { return x * k; });
  for (double v : {2.0, 4.0, -1.0}) expect_equal(by_tensor(x, scalar_tensor(v, kFloat32)), x * v);
  ExplainReport r = by_tensor.report();
  EXPECT_EQ(r.graph_count, 1);
  EXPECT_FALSE(mentions(r.constants, "graph 0: ", "in mul")) << r.str();
}

TEST(CompileCond, BranchesMustAgreeInShapeAndDtype) {
  Tensor x = random_tensor({3}, kFloat32);
  Tensor yes = scalar_tensor(true);
  auto halves = [&] { return x.slice(0, 0, 1); };
  auto twice = [&] { return x * 2; };
  expect_error([&] { cond(yes, twice, halves); }, "cond: the branches return shapes [3] and [1]");
  expect_error([&] { cond(yes, twice, [&] { return (x * 2).to(kFloat64); }); }, "cond: the branches return float32 and float64");
  auto f = compile([](const Tensor& a) { return cond(a.sum() > 0, [&] { return a * 2; }, [&] { return a.slice(0, 0, 1); }); });
  expect_error([&] { f(x); }, "cond: the branches return shapes");
  expect_equal(cond(yes, twice, [&] { return x - 1; }), x * 2);
}

}  // namespace
}  // namespace kiln
