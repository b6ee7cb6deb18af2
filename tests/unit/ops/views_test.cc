// The VIEW prims: values against index-mapping references, storage sharing (writes through a
// view are visible in the base), errors, and gradients.
#include <functional>

#include "support/ref_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// Expected values of a view: out[c] = x[src(c)] for every coordinate c of out_shape.
std::vector<double> mapped(const std::vector<double>& xv, const Shape& xs, const Shape& out_shape,
                           const std::function<std::vector<int64_t>(const std::vector<int64_t>&)>& src) {
  std::vector<double> out;
  for (int64_t p = 0; p < numel(out_shape); ++p) out.push_back(xv[size_t(ravel(src(unravel(p, out_shape)), xs))]);
  return out;
}

// Writing through v changes base where v maps (checked by filling v and comparing base with
// the same fill through the reference mapping).
void expect_writes_through(Tensor base, const std::function<Tensor(const Tensor&)>& make_view, const std::string& what) {
  Tensor v = make_view(base);
  EXPECT_TRUE(v.shares_storage(base)) << what;
  if (v.numel() == 0) return;
  std::vector<double> before = base.to_vector<double>();
  v.fill_(123.0);
  std::vector<double> after = base.to_vector<double>();
  int64_t changed = 0;
  for (size_t i = 0; i < after.size(); ++i) changed += after[i] != before[i];
  EXPECT_GT(changed, 0) << what;
  for (double x : make_view(base).to_vector<double>()) EXPECT_EQ(x, 123.0) << what;
}

const char* kLayouts[] = {"contiguous", "transposed", "strided"};

TEST(Views, ViewAndReshapeSemantics) {
  std::vector<double> xv;
  Tensor x = random_tensor({2, 3, 4}, kFloat32, &xv);
  Tensor v = x.view({4, -1});
  EXPECT_EQ(v.sizes(), (Shape{4, 6}));
  expect_close(v, xv, 0, 0, "view values");
  expect_writes_through(x, [](const Tensor& t) { return t.view({6, 4}); }, "view");
  // A transposed tensor can be viewed where dims stay contiguous together...
  Tensor xt = random_tensor({2, 3, 4}, kFloat64, &xv, "transposed");  // last two dims swapped in memory
  Tensor w = xt.view({1, 2, 3, 2, 2});  // splits the strided last dim
  expect_close(w, xv, 0, 0, "view splitting a strided dim");
  EXPECT_TRUE(w.shares_storage(xt));
  // ...but not flattened across the swapped dims.
  EXPECT_THROW(xt.view({2, 12}), Error);
  EXPECT_THROW(xt.view({-1}), Error);
  EXPECT_THROW(x.view({5, -1}), Error);
  EXPECT_THROW(x.view({-1, -1}), Error);
  EXPECT_THROW(x.view({7, 3}), Error);
  // 0-d and empty tensors.
  EXPECT_EQ(scalar_tensor(1.0).view({1, 1}).sizes(), (Shape{1, 1}));
  EXPECT_EQ(zeros({0, 3}).view({3, 0, 5}).sizes(), (Shape{3, 0, 5}));
  EXPECT_EQ(zeros({2, 0}).view({-1, 2}).sizes(), (Shape{0, 2}));
}

TEST(Views, PermuteMatchesReference) {
  const Shape xs = {2, 3, 4};
  for (const char* layout : kLayouts)
    for (const auto& dims : std::vector<std::vector<int64_t>>{{2, 0, 1}, {-1, -3, 1}, {0, 1, 2}}) {
      std::vector<double> xv;
      Tensor x = random_tensor(xs, kFloat64, &xv, layout);
      Tensor p = x.permute(dims);
      std::vector<int64_t> w;
      for (int64_t d : dims) w.push_back(d < 0 ? d + 3 : d);
      Shape ps = {xs[size_t(w[0])], xs[size_t(w[1])], xs[size_t(w[2])]};
      ASSERT_EQ(p.sizes(), ps);
      expect_close(p, mapped(xv, xs, ps, [&](const std::vector<int64_t>& c) {
                     std::vector<int64_t> s(3);
                     for (size_t i = 0; i < 3; ++i) s[size_t(w[i])] = c[i];
                     return s;
                   }), 0, 0, std::string("permute ") + layout);
    }
  expect_writes_through(zeros({2, 3}), [](const Tensor& t) { return t.permute({1, 0}).slice(0, 1, 2); }, "permute");
  EXPECT_THROW(zeros({2, 3}).permute({0}), Error);
  EXPECT_THROW(zeros({2, 3}).permute({0, 0}), Error);
  EXPECT_THROW(zeros({2, 3}).permute({0, 2}), Error);
  EXPECT_THROW(zeros({2, 3}).permute({1, -2, 0}), Error);
}

TEST(Views, SliceMatchesReference) {
  const Shape xs = {5, 7};
  struct S {
    int64_t dim;
    std::optional<int64_t> start, end;
    int64_t step;
  };
  const std::vector<S> cases = {{0, 1, 4, 1},   {1, 0, 7, 2},      {1, -3, std::nullopt, 1}, {-1, -100, 100, 3},
                                {0, 4, 2, 1},   {1, 7, 9, 1},      {1, std::nullopt, -2, 2}, {0, -2, -1, 1},
                                {1, 2, 6, 10},  {-2, std::nullopt, std::nullopt, 4}};
  for (DType dt : {kFloat32, kInt64, kBFloat16})
    for (const char* layout : kLayouts)
      for (const S& s : cases) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout);
        Tensor v = x.slice(s.dim, s.start ? std::optional<SymInt>(*s.start) : std::nullopt,
                           s.end ? std::optional<SymInt>(*s.end) : std::nullopt, s.step);
        // Python's slice rules: negative bounds count from the end, then clamp.
        const int64_t d = s.dim < 0 ? s.dim + 2 : s.dim, n = xs[size_t(d)];
        auto norm = [&](std::optional<int64_t> b, int64_t dflt) {
          if (!b) return dflt;
          int64_t v2 = *b < 0 ? *b + n : *b;
          return std::clamp<int64_t>(v2, 0, n);
        };
        const int64_t st = norm(s.start, 0), en = std::max(norm(s.end, n), st);
        std::vector<int64_t> picks;
        for (int64_t i = st; i < en; i += s.step) picks.push_back(i);
        Shape vs = xs;
        vs[size_t(d)] = int64_t(picks.size());
        ASSERT_EQ(v.sizes(), vs) << layout;
        EXPECT_TRUE(v.shares_storage(x));
        expect_close(v, mapped(xv, xs, vs, [&](std::vector<int64_t> c) {
                       c[size_t(d)] = picks[size_t(c[size_t(d)])];
                       return c;
                     }), 0, 0, "slice");
      }
  expect_writes_through(zeros({4, 6}), [](const Tensor& t) { return t.slice(1, 1, std::nullopt, 2); }, "slice");
  EXPECT_THROW(zeros({3}).slice(0, 0, 2, 0), Error);
  EXPECT_THROW(zeros({3}).slice(0, 0, 2, -1), Error);
  EXPECT_THROW(scalar_tensor(1.0).slice(0, 0, 1), Error);
  EXPECT_THROW(zeros({3}).slice(1, 0, 1), Error);
}

TEST(Views, SqueezeUnsqueeze) {
  std::vector<double> xv;
  Tensor x = random_tensor({1, 3, 1, 2}, kFloat64, &xv, "strided");
  EXPECT_EQ(x.squeeze().sizes(), (Shape{3, 2}));
  EXPECT_EQ(x.squeeze(std::vector<int64_t>{0}).sizes(), (Shape{3, 1, 2}));
  EXPECT_EQ(x.squeeze(std::vector<int64_t>{-2, 1}).sizes(), (Shape{1, 3, 2}));  // size-3 dim stays
  EXPECT_EQ(x.squeeze(std::vector<int64_t>{}).sizes(), (Shape{1, 3, 1, 2}));
  expect_close(x.squeeze(), xv, 0, 0, "squeeze values");
  EXPECT_EQ(scalar_tensor(1.0).squeeze().sizes(), Shape{});
  EXPECT_EQ(scalar_tensor(1.0).squeeze(std::vector<int64_t>{0}).sizes(), Shape{});
  EXPECT_THROW(x.squeeze(std::vector<int64_t>{4}), Error);
  EXPECT_THROW(x.squeeze(std::vector<int64_t>{0, -4}), Error);
  for (int64_t d : {0, 1, 2, 3, 4, -1, -5}) {
    Tensor u = x.unsqueeze(d);
    Shape us = {1, 3, 1, 2};
    us.insert(us.begin() + (d < 0 ? d + 5 : d), 1);
    EXPECT_EQ(u.sizes(), us) << d;
    expect_close(u, xv, 0, 0, "unsqueeze values");
  }
  EXPECT_EQ(scalar_tensor(1.0).unsqueeze(-1).sizes(), (Shape{1}));
  EXPECT_THROW(x.unsqueeze(5), Error);
  EXPECT_THROW(x.unsqueeze(-6), Error);
  expect_writes_through(zeros({2, 1, 3}), [](const Tensor& t) { return t.squeeze().unsqueeze(0); }, "squeeze");
}

TEST(Views, ExpandAndBroadcastInDim) {
  std::vector<double> xv;
  Tensor x = random_tensor({3, 1}, kFloat32, &xv, "strided");
  Tensor e = x.expand({2, 3, 4});
  EXPECT_EQ(e.sizes(), (Shape{2, 3, 4}));
  expect_close(e, mapped(xv, {3, 1}, {2, 3, 4}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{c[1], 0};
               }), 0, 0, "expand");
  EXPECT_EQ(x.expand({-1, 5}).sizes(), (Shape{3, 5}));
  EXPECT_EQ(x.expand({0, 3, 0}).sizes(), (Shape{0, 3, 0}));
  EXPECT_TRUE(e.shares_storage(x));
  EXPECT_THROW(x.expand({4, 4}), Error);
  EXPECT_THROW(x.expand({4}), Error);
  EXPECT_THROW(x.expand({-1, 3, 4}), Error);
  EXPECT_THROW(x.expand({3, -2}), Error);
  Tensor b = broadcast_in_dim(x, {2, 3, 5}, {1, 2});
  expect_close(b, mapped(xv, {3, 1}, {2, 3, 5}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{c[1], 0};
               }), 0, 0, "broadcast_in_dim");
  Tensor y = random_tensor({4}, kFloat64, &xv);
  Tensor b2 = broadcast_in_dim(y, {4, 3}, {0});
  expect_close(b2, mapped(xv, {4}, {4, 3}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{c[0]};
               }), 0, 0, "broadcast_in_dim leading");
  EXPECT_THROW(broadcast_in_dim(y, {4, 3}, {1}), Error);     // 4 vs 3
  EXPECT_THROW(broadcast_in_dim(y, {4, 3}, {}), Error);      // wrong count
  EXPECT_THROW(broadcast_in_dim(x, {3, 2, 2}, {1, 0}), Error);  // not increasing
}

TEST(Views, AsStridedAndDiagonal) {
  std::vector<double> xv;
  Tensor x = random_tensor({10}, kFloat64, &xv);
  // Overlapping sliding windows.
  Tensor w = x.as_strided({4, 3}, {2, 1}, 1);
  expect_close(w, mapped(xv, {10}, {4, 3}, [](const std::vector<int64_t>& c) {
                 return std::vector<int64_t>{1 + 2 * c[0] + c[1]};
               }), 0, 0, "as_strided");
  expect_writes_through(zeros({10}), [](const Tensor& t) { return t.as_strided({2, 2}, {4, 1}, 3); }, "as_strided");
  EXPECT_THROW(x.as_strided({4, 3}, {3, 1}, 1), Error);  // reaches element 13
  EXPECT_THROW(x.as_strided({4, 3}, {2}, 0), Error);
  EXPECT_THROW(x.as_strided({2}, {1}, -1), Error);
  EXPECT_EQ(x.as_strided({0, 3}, {100, 100}, 0).numel(), 0);

  const Shape xs = {3, 4, 5};
  for (const char* layout : kLayouts)
    for (int64_t off : {0, 1, -1, 3, -2, 5, -3, 10})
      for (const auto& dd : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 0}, {0, 2}, {-1, 1}}) {
        Tensor t = random_tensor(xs, kFloat32, &xv, layout);
        Tensor dg = t.diagonal(off, dd.first, dd.second);
        const size_t d1 = size_t(dd.first < 0 ? dd.first + 3 : dd.first), d2 = size_t(dd.second < 0 ? dd.second + 3 : dd.second);
        const int64_t len = std::max<int64_t>(0, off >= 0 ? std::min(xs[d1], xs[d2] - off) : std::min(xs[d1] + off, xs[d2]));
        size_t other = 3 - d1 - d2;
        ASSERT_EQ(dg.sizes(), (Shape{xs[other], len})) << off;
        EXPECT_TRUE(dg.shares_storage(t));
        expect_close(dg, mapped(xv, xs, {xs[other], len}, [&](const std::vector<int64_t>& c) {
                       std::vector<int64_t> s(3);
                       s[other] = c[0];
                       s[d1] = c[1] + (off < 0 ? -off : 0);
                       s[d2] = c[1] + (off > 0 ? off : 0);
                       return s;
                     }), 0, 0, std::string("diagonal ") + layout);
      }
  expect_writes_through(zeros({3, 3}), [](const Tensor& t) { return t.diagonal(1); }, "diagonal");
  EXPECT_THROW(zeros({3}).diagonal(), Error);
  EXPECT_THROW(zeros({3, 3}).diagonal(0, 1, -1), Error);
  EXPECT_THROW(zeros({3, 3}).diagonal(0, 0, 2), Error);
}

TEST(Views, Gradchecks) {
  Tensor x = grad_input({3, 4});
  auto check = [&](const std::function<Tensor(const Tensor&)>& f, const std::string& what) {
    expect_gradcheck([&](const TensorList& in) { return TensorList{f(in[0])}; }, {x}, what);
    // Non-contiguous input.
    expect_gradcheck([&](const TensorList& in) { return TensorList{f(in[0].transpose(0, 1).contiguous().transpose(0, 1))}; },
                     {x}, what + " (transposed)");
  };
  check([](const Tensor& t) { return t.contiguous().view({2, 6}); }, "view");
  check([](const Tensor& t) { return t.permute({1, 0}); }, "permute");
  check([](const Tensor& t) { return t.slice(1, 1, std::nullopt, 2); }, "slice step");
  check([](const Tensor& t) { return t.slice(0, -2, 100); }, "slice clamp");
  check([](const Tensor& t) { return t.unsqueeze(1).squeeze(); }, "squeeze/unsqueeze");
  check([](const Tensor& t) { return t.unsqueeze(0).expand({2, 3, 4}); }, "expand");
  check([](const Tensor& t) { return t.slice(1, 0, 1).expand({3, 5}); }, "expand size 1");
  check([](const Tensor& t) { return broadcast_in_dim(t.slice(1, 0, 1), {2, 3, 4}, {1, 2}); }, "broadcast_in_dim");
  check([](const Tensor& t) { return t.diagonal(1); }, "diagonal +1");
  check([](const Tensor& t) { return t.diagonal(-1, 1, 0); }, "diagonal -1 swapped");
  check([](const Tensor& t) { return t.unsqueeze(1).diagonal(0, 0, 2); }, "diagonal 3-d");
  check([](const Tensor& t) { return t.contiguous().as_strided({3, 3}, {2, 1}, 1); }, "as_strided overlapping");
  Tensor y = grad_input({10});
  expect_gradcheck([](const TensorList& in) { return TensorList{in[0].slice(0, 2, 8).as_strided({2, 3}, {1, 1}, 3)}; },
                   {y}, "as_strided of an offset view");
}

// The slice and diagonal backward formulas are themselves differentiable (second order).
TEST(Views, SecondOrderSliceAndDiagonal) {
  std::vector<double> xv;
  Tensor x = random_tensor({4, 5}, kFloat64, &xv);
  x.requires_grad_();
  for (int which = 0; which < 2; ++which) {
    auto pick = [&](const Tensor& t) { return which == 0 ? t.slice(1, 1, std::nullopt, 2) : t.diagonal(1); };
    Tensor p = pick(x);
    Tensor y = sum(mul(p, p));
    Tensor g = kiln::grad({y}, {x}, {}, true, true)[0];  // 2 x on the picked elements
    Tensor z = sum(mul(g, g));                              // 4 sum of picked x^2
    Tensor gg = kiln::grad({z}, {x})[0];
    std::vector<double> ref(xv.size(), 0.0);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        const bool picked = which == 0 ? (j % 2 == 1) : (j == i + 1);
        if (picked) ref[size_t(i * 5 + j)] = 8 * xv[size_t(i * 5 + j)];
      }
    expect_close(gg, ref, 1e-12, 1e-12, which == 0 ? "slice second order" : "diagonal second order");
  }
}

}  // namespace
