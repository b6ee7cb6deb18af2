// Symbolic sizes: SymInt arithmetic, evaluation, guards recorded by comparisons, symbolic shapes
// through fake tensors and capture.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "core/tensor_impl.h"
#include "sym/expr.h"

using namespace kiln;

TEST(SymInt, ConcreteArithmeticStaysConcrete) {
  SymInt a = 6, b = 4;
  EXPECT_FALSE((a * b + 1).is_symbolic());
  EXPECT_EQ((a * b + 1).value(), 25);
  EXPECT_EQ(floordiv(SymInt(-7), SymInt(2)).value(), -4);  // floor, like Python
  EXPECT_EQ((SymInt(-7) % SymInt(2)).value(), 1);
}

TEST(SymInt, ExpressionsCanonicalize) {
  SymInt s(sym::symbol("s0"), 5), t(sym::symbol("s1"), 3);
  EXPECT_EQ((s + t).str(), (t + s).str());
  EXPECT_EQ((s * 2 * 3).str(), (SymInt(6) * s).str());
  EXPECT_EQ((s + 0).str(), "s0");
  EXPECT_EQ((s * 1).str(), "s0");
  EXPECT_FALSE((s * 0).is_symbolic());
  EXPECT_EQ((s * t + 1).hint(), 16);
  EXPECT_THROW((void)s.value(), Error);
}

TEST(SymInt, EvaluatesWithBindings) {
  SymInt s(sym::symbol("s0"), 5);
  SymInt e = floordiv(s * 3 + 1, SymInt(2));
  EXPECT_EQ(sym::evaluate(e.expr(), {{"s0", 9}}), 14);
  EXPECT_THROW(sym::evaluate(e.expr(), {}), Error);
}

TEST(SymInt, ComparisonsAreRecordedAsGuards) {
  struct Rec : sym::GuardRecorder {
    std::vector<std::string> seen;
    void record(const char* rel, const sym::ExprPtr& a, const sym::ExprPtr& b, bool r) override {
      seen.push_back(sym::str(a) + " " + rel + " " + sym::str(b) + " -> " + (r ? "true" : "false"));
    }
  } rec;
  auto* prev = sym::set_guard_recorder(&rec);
  SymInt s(sym::symbol("s0"), 5);
  bool eq1 = s == 1;
  bool lt = SymInt(3) < s;
  bool concrete = SymInt(2) == 2;  // not recorded
  sym::set_guard_recorder(prev);
  EXPECT_FALSE(eq1);
  EXPECT_TRUE(lt);
  EXPECT_TRUE(concrete);
  ASSERT_EQ(rec.seen.size(), 2u);
  EXPECT_EQ(rec.seen[0], "s0 == 1 -> false");
  EXPECT_EQ(rec.seen[1], "3 < s0 -> true");
}

TEST(SymInt, FakeTensorsPropagateSymbolicShapes) {
  // Meta functions run on fake tensors with symbolic sizes and never touch data.
  SymInt s(sym::symbol("s0"), 8);
  Tensor x = make_fake(TensorSpec{{s, 4}, {}, 0, kFloat32, kCPU});
  Tensor y = exp(x + zeros({4})).sum(IntList{1});
  EXPECT_TRUE(y.is_fake());
  EXPECT_EQ(shape_str(y.sym_sizes()), "[s0]");
  Tensor r = x.reshape({-1});
  EXPECT_EQ(shape_str(r.sym_sizes()), "[(4*s0)]");
  EXPECT_THROW(x.data_ptr(), Error);
}

TEST(SymInt, SplitOfASymbolicSizeIsReadable) {
  // split(x, 3) of a tensor of size s0 in [7, 8]: the chunks' sizes were sums of mins that
  // never cancelled, e.g. the second chunk's
  //   ((-1*min(3, s0)) + min(3, (-3 + s0)) + min(3, s0))
  // Like terms now cancel and the ranges decide the mins: 3, 3 and s0 - 6.
  SymInt s(sym::symbol("s0", {7, 8}), 7);
  Tensor x = make_fake(TensorSpec{{s, 4}, {}, 0, kFloat32, kCPU});
  std::vector<std::string> sizes, offsets;
  for (const Tensor& p : x.split(SymInt(3), 0)) {
    sizes.push_back(shape_str(p.sym_sizes()));
    offsets.push_back(p.sym_storage_offset().str());
  }
  EXPECT_EQ(sizes, (std::vector<std::string>{"[3, 4]", "[3, 4]", "[(-6 + s0), 4]"}));
  EXPECT_EQ(offsets, (std::vector<std::string>{"0", "12", "24"}));
  // With a size of unknown range the mins stay, each once.
  SymInt u(sym::symbol("s1"), 7);
  Tensor y = make_fake(TensorSpec{{u, 4}, {}, 0, kFloat32, kCPU});
  sizes.clear();
  for (const Tensor& p : y.split(SymInt(3), 0)) sizes.push_back(shape_str(p.sym_sizes()));
  EXPECT_EQ(sizes, (std::vector<std::string>{"[min(3, s1), 4]", "[min(3, -3 + s1), 4]", "[min(3, -6 + s1), 4]"}));
}

TEST(SymInt, CaptureGivesSymbolsTheirMarkedRange) {
  sym::Range seen;
  auto f = compile([&](const Tensor& x) {
    seen = sym::bound(x.sym_size(0).as_expr());
    return x.sum(0);
  });
  Tensor a = ones({5, 3});
  mark_dynamic(a, 0, 2, 64);
  f(a);
  EXPECT_EQ(seen, (sym::Range{2, 64}));
  CompileOptions o;
  o.dynamic = true;  // unmarked symbolic dims: [2, inf) (0 and 1 stay specialized)
  auto g = compile([&](const Tensor& x) {
    seen = sym::bound(x.sym_size(0).as_expr());
    return x.sum(0);
  }, o);
  g(ones({5, 3}));
  EXPECT_EQ(seen, (sym::Range{2, INT64_MAX}));
}
