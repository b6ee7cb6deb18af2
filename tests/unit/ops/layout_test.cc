// The copying layout prims: cat, constant_pad, flip, against float64 loop references.
#include "core/tensor_impl.h"
#include "support/ref_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

TEST(Layout, CatMatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32})
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<Shape> shapes;
      for (int64_t n : {2, 0, 3, 1}) {
        Shape s = {2, 3, 4};
        s[size_t(d)] = n;
        shapes.push_back(s);
      }
      const char* layouts[] = {"contiguous", "transposed", "strided", "contiguous"};
      std::vector<std::vector<double>> vals(shapes.size());
      TensorList ts;
      for (size_t i = 0; i < shapes.size(); ++i) ts.push_back(random_tensor(shapes[i], dt, &vals[i], layouts[i]));
      Tensor out = cat(ts, dim);
      Shape os = {2, 3, 4};
      os[size_t(d)] = 6;
      ASSERT_EQ(out.sizes(), os);
      EXPECT_EQ(out.dtype(), dt);
      std::vector<double> ref(size_t(numel(os)));
      for (size_t p = 0; p < ref.size(); ++p) {
        auto c = unravel(int64_t(p), os);
        size_t k = 0;
        while (c[size_t(d)] >= shapes[k][size_t(d)]) c[size_t(d)] -= shapes[k++][size_t(d)];
        ref[p] = vals[k][size_t(ravel(c, shapes[k]))];
      }
      expect_close(out, ref, 0, 0, std::string("cat ") + name(dt));
    }
}

TEST(Layout, CatPromotionAndLegacyEmpty) {
  Tensor a = tensor<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor b = tensor<float>({0.5f, 1.5f}, {2, 1});
  Tensor out = cat({a, zeros({0}, kFloat64), b}, 1);  // the [0] tensor is skipped but promotes
  EXPECT_EQ(out.dtype(), kFloat64);
  EXPECT_EQ(out.sizes(), (Shape{2, 3}));
  expect_close(out, {1, 2, 0.5, 3, 4, 1.5}, 0, 0, "promoted cat");
  Tensor c = cat({tensor<int32_t>({1}), tensor<bool>(std::vector<bool>{true})});
  EXPECT_EQ(c.dtype(), kInt32);
  EXPECT_EQ(cat({zeros({0}), zeros({0})}).sizes(), (Shape{0}));
  EXPECT_EQ(cat({tensor<float>({1, 2})}).sizes(), (Shape{2}));
}

TEST(Layout, CatErrors) {
  EXPECT_THROW(cat({}), Error);
  EXPECT_THROW(cat({zeros({2, 3}), zeros({3, 3})}, 1), Error);
  EXPECT_THROW(cat({zeros({2, 3}), zeros({2})}), Error);
  EXPECT_THROW(cat({scalar_tensor(1.0), scalar_tensor(2.0)}), Error);
  EXPECT_THROW(cat({zeros({2, 3}), zeros({2, 3})}, 2), Error);
}

TEST(Layout, CatGradcheck) {
  Tensor a = grad_input({2, 3}), b = grad_input({3, 2}), c = grad_input({2, 1});
  expect_gradcheck([](const TensorList& in) { return TensorList{cat({in[0], in[1].transpose(0, 1), in[2]}, -1)}; },
                   {a, b, c}, "cat dim -1");
  Tensor e = grad_input({0});
  expect_gradcheck([](const TensorList& in) { return TensorList{cat({in[0], in[1]}, 0)}; }, {a, e}, "cat legacy empty");
  // Mixed dtypes: the float32 input's gradient comes back as float32 (not checked numerically).
  Tensor f = zeros({2, 3}, kFloat32);
  f.requires_grad_();
  Tensor out = cat({f, a.detach()});
  sum(out).backward();
  ASSERT_TRUE(f.grad().defined());
  EXPECT_EQ(f.grad().dtype(), kFloat32);
  expect_close(f.grad(), std::vector<double>(6, 1.0), 0, 0, "mixed dtype grad");
}

// ------------------------------------------------------------------------------ constant_pad
std::vector<double> pad_ref(const std::vector<double>& x, const Shape& xs, const std::vector<int64_t>& pad, double v,
                            Shape* os_out) {
  Shape os = xs;
  for (size_t i = 0; i < pad.size() / 2; ++i) os[xs.size() - 1 - i] += pad[2 * i] + pad[2 * i + 1];
  std::vector<double> out(size_t(numel(os)), v);
  for (size_t p = 0; p < out.size(); ++p) {
    auto c = unravel(int64_t(p), os);
    bool inside = true;
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      const size_t d = xs.size() - 1 - i;
      c[d] -= pad[2 * i];
      inside = inside && c[d] >= 0 && c[d] < xs[d];
    }
    if (inside) out[p] = x[size_t(ravel(c, xs))];
  }
  *os_out = os;
  return out;
}

TEST(Layout, ConstantPadMatchesReference) {
  const Shape xs = {2, 3, 4};
  const std::vector<std::vector<int64_t>> pads = {{1, 2}, {0, 0, 2, 1}, {-1, 2, 1, -2}, {1, 1, 1, 1, 1, 1},
                                                  {-2, -2}, {}, {0, 0, -3, 0}};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt64, kBool})
    for (const char* layout : {"contiguous", "transposed", "strided"})
      for (const auto& pad : pads) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout);
        const double value = dt == kBool ? 1 : 2.5;
        Tensor out = constant_pad(x, pad, value);
        Shape os;
        std::vector<double> ref = pad_ref(xv, xs, pad, dt == kInt64 ? 2 : value, &os);
        ASSERT_EQ(out.sizes(), os);
        expect_close(out, ref, 0, 0, std::string("pad ") + layout + " " + name(dt));
      }
}

TEST(Layout, ConstantPadErrorsAndGrad) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW(constant_pad(x, {1}, 0), Error);
  EXPECT_THROW(constant_pad(x, {1, 1, 1, 1, 1, 1}, 0), Error);
  EXPECT_THROW(constant_pad(x, {-2, -2}, 0), Error);
  Tensor g = grad_input({3, 4});
  expect_gradcheck([](const TensorList& in) { return TensorList{constant_pad(in[0], {1, 2, 0, 1}, 3)}; }, {g}, "pad");
  expect_gradcheck([](const TensorList& in) { return TensorList{constant_pad(in[0].transpose(0, 1), {-1, 1, 2, -1}, 0)}; },
                   {g}, "pad negative transposed");
}

// ------------------------------------------------------------------------------ flip
TEST(Layout, FlipMatchesReference) {
  const Shape xs = {3, 4, 2};
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt16})
    for (const char* layout : {"contiguous", "transposed", "strided"})
      for (const auto& dims : std::vector<std::vector<int64_t>>{{0}, {1, 2}, {-1, 0}, {}, {0, 1, 2}}) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout);
        Tensor out = flip(x, dims);
        std::vector<double> ref(xv.size());
        for (size_t p = 0; p < ref.size(); ++p) {
          auto c = unravel(int64_t(p), xs);
          for (int64_t d : dims) {
            const size_t w = size_t(d < 0 ? d + 3 : d);
            c[w] = xs[w] - 1 - c[w];
          }
          ref[p] = xv[size_t(ravel(c, xs))];
        }
        expect_close(out, ref, 0, 0, std::string("flip ") + layout);
      }
  EXPECT_EQ(flip(zeros({0, 3}), {0}).sizes(), (Shape{0, 3}));
  EXPECT_EQ(flip(scalar_tensor(2.0), {}).item<float>(), 2.0f);
}

TEST(Layout, FlipErrorsAndGrad) {
  EXPECT_THROW(flip(zeros({2, 3}), {2}), Error);
  EXPECT_THROW(flip(zeros({2, 3}), {0, -2}), Error);
  Tensor g = grad_input({3, 4});
  expect_gradcheck([](const TensorList& in) { return TensorList{flip(in[0], {0, 1})}; }, {g}, "flip");
  expect_gradcheck([](const TensorList& in) { return TensorList{flip(in[0].transpose(0, 1), {1})}; }, {g},
                   "flip transposed");
}

}  // namespace

// The metas compute shapes without touching data: fake (traced) inputs give fake outputs.
namespace {

Tensor fake_of(const Shape& s, DType dt = kFloat32) {
  TensorSpec spec;
  for (int64_t v : s) spec.sizes.push_back(SymInt(v));
  spec.dtype = dt;
  return make_fake(spec);
}

TEST(Layout, MetasOnFakeTensors) {
  Tensor x = fake_of({3, 4}), i = fake_of({2, 4}, kInt64), v = fake_of({4}, kInt64);
  EXPECT_EQ(cat({x, fake_of({2, 4}, kFloat64)}).sizes(), (Shape{5, 4}));
  EXPECT_EQ(cat({x, fake_of({2, 4}, kFloat64)}).dtype(), kFloat64);
  EXPECT_EQ(constant_pad(x, {1, -2}, 0).sizes(), (Shape{3, 3}));
  EXPECT_EQ(flip(x, {0}).sizes(), (Shape{3, 4}));
  EXPECT_EQ(gather(x, 0, i).sizes(), (Shape{2, 4}));
  EXPECT_EQ(scatter_add(x, 0, i, fake_of({2, 4})).sizes(), (Shape{3, 4}));
  EXPECT_EQ(index_select(x, 1, v).sizes(), (Shape{3, 4}));
  EXPECT_EQ(index_put(x, {Tensor(), v}, fake_of({3, 4})).sizes(), (Shape{3, 4}));
  EXPECT_EQ(index(x, {fake_of({5}, kInt64)}).sizes(), (Shape{5, 4}));
  EXPECT_EQ(kiln::pad(x, {1, 1}, "reflect").sizes(), (Shape{3, 6}));
  EXPECT_TRUE(gather(x, 0, i).is_fake());
  EXPECT_THROW(gather(x, 0, fake_of({2, 5}, kInt64)), Error);
  EXPECT_THROW(index(x, {fake_of({3, 4}, kBool)}), Error);  // boolean masks are data-dependent
}

}  // namespace
