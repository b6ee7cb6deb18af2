// Shape composites (flatten ... pad) against float64 index-mapping references, plus errors and
// gradients through their decompositions.
#include <functional>

#include "support/ref_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const char* kLayouts[] = {"contiguous", "transposed", "strided"};

// out[c] = x[src(c)] over out_shape.
std::vector<double> mapped(const std::vector<double>& xv, const Shape& xs, const Shape& out_shape,
                           const std::function<std::vector<int64_t>(std::vector<int64_t>)>& src) {
  std::vector<double> out;
  for (int64_t p = 0; p < numel(out_shape); ++p) out.push_back(xv[size_t(ravel(src(unravel(p, out_shape)), xs))]);
  return out;
}

void gradcheck1(const std::function<Tensor(const Tensor&)>& f, const Shape& shape, const std::string& what) {
  Tensor x = grad_input(shape);
  expect_gradcheck([&](const TensorList& in) { return TensorList{f(in[0])}; }, {x}, what);
}

TEST(Shape, FlattenUnflatten) {
  for (const char* layout : kLayouts) {
    std::vector<double> xv;
    Tensor x = random_tensor({2, 3, 4, 5}, kFloat32, &xv, layout);
    EXPECT_EQ(x.flatten().sizes(), (Shape{120}));
    EXPECT_EQ(x.flatten(1, 2).sizes(), (Shape{2, 12, 5}));
    EXPECT_EQ(x.flatten(-2).sizes(), (Shape{2, 3, 20}));
    EXPECT_EQ(x.flatten(2, 2).sizes(), (Shape{2, 3, 4, 5}));
    expect_close(x.flatten(1, -1), xv, 0, 0, std::string("flatten ") + layout);
    Tensor u = x.unflatten(-1, {5, 1});
    EXPECT_EQ(u.sizes(), (Shape{2, 3, 4, 5, 1}));
    EXPECT_EQ(x.unflatten(2, {2, -1}).sizes(), (Shape{2, 3, 2, 2, 5}));
    expect_close(x.unflatten(1, {-1, 1, 3}), xv, 0, 0, "unflatten values");
  }
  EXPECT_EQ(scalar_tensor(1.0).flatten().sizes(), (Shape{1}));
  Tensor x = zeros({2, 3, 4});
  EXPECT_TRUE(x.flatten(0, 1).shares_storage(x));  // a view where possible
  EXPECT_THROW(x.flatten(2, 1), Error);
  EXPECT_THROW(x.flatten(0, 3), Error);
  EXPECT_THROW(x.unflatten(1, {2, 2}), Error);
  EXPECT_THROW(x.unflatten(1, {-1, -1}), Error);
  EXPECT_THROW(x.unflatten(1, {}), Error);
  gradcheck1([](const Tensor& t) { return t.transpose(0, 1).flatten(); }, {3, 4}, "flatten transposed");
  gradcheck1([](const Tensor& t) { return t.unflatten(1, {2, 2}); }, {3, 4}, "unflatten");
}

TEST(Shape, ExpandAsAndRepeat) {
  std::vector<double> xv;
  Tensor x = random_tensor({3, 1}, kFloat64, &xv, "strided");
  Tensor e = x.expand_as(zeros({2, 3, 4}));
  EXPECT_EQ(e.sizes(), (Shape{2, 3, 4}));
  EXPECT_THROW(x.expand_as(zeros({2, 4})), Error);
  for (DType dt : {kFloat32, kInt64, kBFloat16})
    for (const char* layout : kLayouts) {
      const Shape xs = {2, 3};
      Tensor y = random_tensor(xs, dt, &xv, layout);
      for (const auto& reps : std::vector<Shape>{{2, 3}, {1, 1}, {2, 1, 2}, {3, 0}}) {
        Tensor r = y.repeat(reps);
        Shape rs = reps;
        const size_t lead = reps.size() - 2;
        rs[lead] *= 2;
        rs[lead + 1] *= 3;
        ASSERT_EQ(r.sizes(), rs);
        expect_close(r, mapped(xv, xs, rs, [&](std::vector<int64_t> c) {
                       return std::vector<int64_t>{c[lead] % 2, c[lead + 1] % 3};
                     }), 0, 0, std::string("repeat ") + layout);
      }
    }
  EXPECT_EQ(scalar_tensor(2.0).repeat({3}).sizes(), (Shape{3}));
  EXPECT_THROW(zeros({2, 3}).repeat({2}), Error);
  EXPECT_THROW(zeros({2, 3}).repeat({2, -1}), Error);
  gradcheck1([](const Tensor& t) { return t.repeat({2, 1, 3}); }, {2, 3}, "repeat");
  gradcheck1([](const Tensor& t) { return t.transpose(0, 1).repeat({2, 2}); }, {2, 3}, "repeat transposed");
  gradcheck1([](const Tensor& t) { return t.expand_as(zeros({4, 2, 3})); }, {2, 1}, "expand_as");
}

TEST(Shape, NarrowSelectUnbind) {
  const Shape xs = {4, 5};
  for (const char* layout : kLayouts) {
    std::vector<double> xv;
    Tensor x = random_tensor(xs, kFloat64, &xv, layout);
    Tensor n = x.narrow(1, -4, 3);  // negative start counts from the end
    EXPECT_EQ(n.sizes(), (Shape{4, 3}));
    EXPECT_TRUE(n.shares_storage(x));
    expect_close(n, mapped(xv, xs, {4, 3}, [](std::vector<int64_t> c) { return std::vector<int64_t>{c[0], c[1] + 1}; }),
                 0, 0, "narrow");
    for (int64_t i : {0, 3, -1, -4}) {
      Tensor s = x.select(0, i);
      const int64_t w = i < 0 ? i + 4 : i;
      EXPECT_EQ(s.sizes(), (Shape{5}));
      expect_close(s, mapped(xv, xs, {5}, [&](std::vector<int64_t> c) { return std::vector<int64_t>{w, c[0]}; }), 0,
                   0, "select");
      Tensor s1 = x.select(-1, i);
      const int64_t w1 = i < 0 ? i + 5 : i;
      expect_close(s1, mapped(xv, xs, {4}, [&](std::vector<int64_t> c) { return std::vector<int64_t>{c[0], w1}; }), 0,
                   0, "select dim -1");
    }
    TensorList parts = x.unbind(1);
    ASSERT_EQ(parts.size(), 5u);
    for (int64_t j = 0; j < 5; ++j)
      expect_close(parts[size_t(j)],
                   mapped(xv, xs, {4}, [&](std::vector<int64_t> c) { return std::vector<int64_t>{c[0], j}; }), 0, 0,
                   "unbind");
  }
  Tensor x = zeros({4, 5});
  EXPECT_THROW(x.narrow(0, 3, 2), Error);
  EXPECT_THROW(x.narrow(0, -5, 1), Error);
  EXPECT_THROW(x.narrow(0, 0, -1), Error);
  EXPECT_THROW(x.select(0, 4), Error);
  EXPECT_THROW(x.select(1, -6), Error);
  EXPECT_THROW(x.select(2, 0), Error);
  EXPECT_THROW(scalar_tensor(1.0).select(0, 0), Error);
  EXPECT_THROW(scalar_tensor(1.0).unbind(), Error);
  EXPECT_EQ(zeros({0, 3}).unbind().size(), 0u);
  gradcheck1([](const Tensor& t) { return t.narrow(1, 1, 2); }, {3, 4}, "narrow");
  gradcheck1([](const Tensor& t) { return t.transpose(0, 1).select(0, -1); }, {3, 4}, "select transposed");
  Tensor g = grad_input({3, 4});
  expect_gradcheck([](const TensorList& in) { return in[0].unbind(1); }, {g}, "unbind");
}

TEST(Shape, SplitChunk) {
  std::vector<double> xv;
  Tensor x = random_tensor({7, 3}, kFloat32, &xv, "transposed");
  auto check_parts = [&](const TensorList& parts, const std::vector<int64_t>& sizes, const std::string& what) {
    ASSERT_EQ(parts.size(), sizes.size()) << what;
    int64_t at = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      EXPECT_EQ(parts[k].sizes(), (Shape{sizes[k], 3})) << what;
      EXPECT_TRUE(parts[k].shares_storage(x));
      expect_close(parts[k], mapped(xv, {7, 3}, {sizes[k], 3}, [&](std::vector<int64_t> c) {
                     return std::vector<int64_t>{c[0] + at, c[1]};
                   }), 0, 0, what);
      at += sizes[k];
    }
  };
  check_parts(x.split(3), {3, 3, 1}, "split 3");
  check_parts(x.split(7), {7}, "split 7");
  check_parts(x.split(10), {7}, "split 10");
  check_parts(x.split_with_sizes({2, 0, 5}), {2, 0, 5}, "split_with_sizes");
  check_parts(x.chunk(3), {3, 3, 1}, "chunk 3");
  check_parts(x.chunk(4), {2, 2, 2, 1}, "chunk 4");
  check_parts(x.chunk(7), {1, 1, 1, 1, 1, 1, 1}, "chunk 7");
  check_parts(x.chunk(10), {1, 1, 1, 1, 1, 1, 1}, "chunk 10");
  check_parts(x.chunk(6), {2, 2, 2, 1}, "chunk 6 (fewer chunks, as PyTorch)");
  EXPECT_EQ(x.split(1, -1).size(), 3u);
  EXPECT_EQ(zeros({0, 2}).split(2).size(), 1u);
  EXPECT_THROW(x.split(0), Error);
  EXPECT_THROW(x.split_with_sizes({2, 4}), Error);
  EXPECT_THROW(x.split_with_sizes({8, -1}), Error);
  EXPECT_THROW(x.chunk(0), Error);
  {  // an empty dim gives `chunks` empty pieces (PyTorch), not one
    std::vector<Tensor> parts = zeros({0, 2}).chunk(3);
    ASSERT_EQ(parts.size(), 3u);
    for (const Tensor& p : parts) EXPECT_EQ(p.sizes(), (Shape{0, 2}));
  }
  EXPECT_THROW(x.split(2, 2), Error);
  Tensor g = grad_input({5, 4});
  expect_gradcheck([](const TensorList& in) { return in[0].split(2); }, {g}, "split");
  expect_gradcheck([](const TensorList& in) { return in[0].transpose(0, 1).split_with_sizes({1, 3}); }, {g},
                   "split_with_sizes transposed");
  expect_gradcheck([](const TensorList& in) { return in[0].chunk(2, 1); }, {g}, "chunk");
}

TEST(Shape, Stack) {
  for (DType dt : {kFloat32, kInt32})
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      std::vector<std::vector<double>> vals(3);
      TensorList ts;
      for (size_t i = 0; i < 3; ++i) ts.push_back(random_tensor({2, 4}, dt, &vals[i], kLayouts[i]));
      Tensor s = stack(ts, dim);
      const int64_t d = dim < 0 ? dim + 3 : dim;
      Shape ss = {2, 4};
      ss.insert(ss.begin() + d, 3);
      ASSERT_EQ(s.sizes(), ss);
      std::vector<double> ref;
      for (int64_t p = 0; p < numel(ss); ++p) {
        auto c = unravel(p, ss);
        const int64_t k = c[size_t(d)];
        c.erase(c.begin() + d);
        ref.push_back(vals[size_t(k)][size_t(ravel(c, {2, 4}))]);
      }
      expect_close(s, ref, 0, 0, "stack");
    }
  EXPECT_EQ(stack({scalar_tensor(1.0), scalar_tensor(2.0)}).sizes(), (Shape{2}));
  EXPECT_THROW(stack({}), Error);
  EXPECT_THROW(stack({zeros({2}), zeros({3})}), Error);
  EXPECT_THROW(stack({zeros({2}), zeros({2})}, 2), Error);
  Tensor a = grad_input({2, 3}), b = grad_input({3, 2});
  expect_gradcheck([](const TensorList& in) { return TensorList{stack({in[0], in[1].transpose(0, 1)}, 1)}; }, {a, b},
                   "stack");
}

TEST(Shape, Roll) {
  const Shape xs = {3, 4};
  for (const char* layout : kLayouts) {
    std::vector<double> xv;
    Tensor x = random_tensor(xs, kFloat64, &xv, layout);
    for (int64_t s : {1, -1, 5, -13, 0, 12}) {
      // Flattened roll.
      Tensor r = x.roll({s});
      ASSERT_EQ(r.sizes(), xs);
      expect_close(r, mapped(xv, xs, xs, [&](std::vector<int64_t> c) {
                     const int64_t p = ((ravel(c, xs) - s) % 12 + 12) % 12;
                     return unravel(p, xs);
                   }), 0, 0, "roll flat");
      // Two dims at once.
      Tensor r2 = x.roll({s, -2 * s}, {1, -2});
      expect_close(r2, mapped(xv, xs, xs, [&](std::vector<int64_t> c) {
                     return std::vector<int64_t>{((c[0] + 2 * s) % 3 + 3) % 3, ((c[1] - s) % 4 + 4) % 4};
                   }), 0, 0, "roll dims");
    }
  }
  EXPECT_EQ(zeros({0, 3}).roll({2}, {1}).sizes(), (Shape{0, 3}));
  EXPECT_THROW(zeros({3}).roll({1, 2}), Error);
  EXPECT_THROW(zeros({3, 3}).roll({1}, {0, 1}), Error);
  EXPECT_THROW(zeros({3}).roll({1}, {1}), Error);
  gradcheck1([](const Tensor& t) { return t.roll({2}); }, {3, 4}, "roll flat");
  gradcheck1([](const Tensor& t) { return t.transpose(0, 1).roll({1, -1}, {0, 1}); }, {3, 4}, "roll transposed");
}

TEST(Shape, Movedim) {
  std::vector<double> xv;
  const Shape xs = {2, 3, 4, 5};
  Tensor x = random_tensor(xs, kFloat32, &xv, "transposed");
  struct C {
    std::vector<int64_t> src, dst;
    std::vector<int64_t> perm;  // expected output dim i <- input dim perm[i]
  };
  for (const C& c : std::vector<C>{{{0}, {3}, {1, 2, 3, 0}},
                                   {{-1}, {0}, {3, 0, 1, 2}},
                                   {{0, 1}, {2, 3}, {2, 3, 0, 1}},
                                   {{3, 0}, {0, 3}, {3, 1, 2, 0}},
                                   {{1, 3}, {0, 1}, {1, 3, 0, 2}},
                                   {{}, {}, {0, 1, 2, 3}}}) {
    Tensor m = x.movedim(c.src, c.dst);
    Shape ms;
    for (int64_t p : c.perm) ms.push_back(xs[size_t(p)]);
    ASSERT_EQ(m.sizes(), ms);
    EXPECT_TRUE(m.shares_storage(x));
    expect_close(m, mapped(xv, xs, ms, [&](std::vector<int64_t> oc) {
                   std::vector<int64_t> s(4);
                   for (size_t i = 0; i < 4; ++i) s[size_t(c.perm[i])] = oc[i];
                   return s;
                 }), 0, 0, "movedim");
  }
  EXPECT_THROW(x.movedim({0}, {1, 2}), Error);
  EXPECT_THROW(x.movedim({0, 0}, {1, 2}), Error);
  EXPECT_THROW(x.movedim({0, 1}, {2, 2}), Error);
  EXPECT_THROW(x.movedim({4}, {0}), Error);
  gradcheck1([](const Tensor& t) { return t.movedim({0}, {-1}); }, {2, 3, 4}, "movedim");
}

TEST(Shape, PadModes) {
  const Shape xs = {2, 3, 4};
  struct P {
    std::vector<int64_t> pad;
  };
  // Circular as PyTorch: negative pads crop first; positive ones wrap around what is left [lo, n - hi_crop).
  auto src_index = [](int64_t j, int64_t n, int64_t l, int64_t r, const std::string& mode) -> int64_t {
    if (mode == "reflect") return j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
    if (mode == "replicate") return std::clamp<int64_t>(j, 0, n - 1);
    const int64_t lo = l < 0 ? -l : 0, m = n - (r < 0 ? -r : 0) - lo;
    return lo + (((j - lo) % m) + m) % m;
  };
  for (const std::string mode : {"constant", "reflect", "replicate", "circular"})
    for (const char* layout : kLayouts)
      for (const auto& pad : std::vector<std::vector<int64_t>>{{1, 2}, {2, 0, 1, 1}, {3, 3}, {0, 0, 2, 2}, {-1, 2}, {2, -1, -1, 1}}) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, kFloat32, &xv, layout);
        Tensor out = mode == "constant" ? kiln::pad(x, pad, mode, 1.5) : kiln::pad(x, pad, mode);
        Shape os = xs;
        for (size_t i = 0; i < pad.size() / 2; ++i) os[2 - i] += pad[2 * i] + pad[2 * i + 1];
        ASSERT_EQ(out.sizes(), os) << mode;
        std::vector<double> ref;
        for (int64_t p = 0; p < numel(os); ++p) {
          auto c = unravel(p, os);
          bool inside = true;
          for (size_t i = 0; i < pad.size() / 2; ++i) {
            const size_t d = 2 - i;
            int64_t j = c[d] - pad[2 * i];
            if (mode == "constant") inside = inside && j >= 0 && j < xs[d];
            else j = src_index(j, xs[d], pad[2 * i], pad[2 * i + 1], mode);
            c[d] = j;
          }
          ref.push_back(inside ? xv[size_t(ravel(c, xs))] : 1.5);
        }
        expect_close(out, ref, 0, 0, "pad " + mode + " " + layout);
      }
  Tensor x = zeros({2, 3});
  EXPECT_THROW(kiln::pad(x, {3, 0}, "reflect"), Error);  // must be < size
  EXPECT_THROW(kiln::pad(x, {4, 0}, "circular"), Error);
  EXPECT_THROW(kiln::pad(x, {-1, 3}, "circular"), Error);  // wraps twice around the 2 left after cropping
  EXPECT_THROW(kiln::pad(x, {1, 0}, "wrap"), Error);
  EXPECT_THROW(kiln::pad(x, {1}, "reflect"), Error);
  EXPECT_THROW(kiln::pad(x, {1, 1, 1, 1, 1, 1}, "replicate"), Error);
  EXPECT_THROW(kiln::pad(x, {1, 1}, "reflect", 2.0), Error);
  for (const std::string mode : {"constant", "reflect", "replicate", "circular"}) {
    gradcheck1([&](const Tensor& t) { return kiln::pad(t, {2, 1, 1, 2}, mode); }, {3, 4}, "pad " + mode);
    gradcheck1([&](const Tensor& t) { return kiln::pad(t.transpose(0, 1), {1, -1}, mode); }, {3, 4},
               "pad transposed " + mode);
  }
}

}  // namespace
