// convolution prim: N-d, strided/padded/dilated/grouped/transposed, against direct float64 loops.
#include "support/conv_ref.h"
#include "support/test_util.h"

namespace kiln::test {
namespace {

Tensor run_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  std::vector<int64_t> op = c.out_pad.empty() ? std::vector<int64_t>{0} : c.out_pad;
  return convolution(x, w, b, c.stride, c.pad, c.dil, c.transposed, op, c.groups);
}

const std::vector<ConvCase> kCases = {
    {{2, 3, 9}, {4, 3, 3}, {1}, {0}, {1}},
    {{2, 4, 11}, {6, 2, 3}, {2}, {1}, {2}, 2},
    {{1, 3, 7, 8}, {5, 3, 3, 2}, {1, 1}, {1, 0}, {1, 1}},
    {{2, 4, 9, 10}, {4, 1, 3, 3}, {2, 3}, {1, 2}, {2, 1}, 4},  // depthwise
    {{2, 2, 5, 6, 5}, {3, 2, 2, 3, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 2}},
    {{2, 6, 4, 4}, {6, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 2, false, {}, false},  // 1x1 fast path
    {{2, 3, 5}, {3, 4, 3}, {2}, {1}, {1}, 1, true, {1}},
    {{1, 4, 4, 5}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2, true, {1, 0}},
    {{1, 2, 3, 3, 2}, {2, 2, 2, 2, 2}, {2, 1, 2}, {0, 1, 0}, {1, 1, 1}, 1, true, {1, 0, 0}},
    {{2, 2, 6}, {2, 2, 3}, {3}, {2}, {2}, 1, true, {2}},
    {{1, 2, 4}, {2, 2, 3}, {1}, {0}, {3}, 1, true, {2}},  // output_padding >= stride (< dilation)
    {{2, 2, 26, 25}, {3, 2, 3, 3}, {1, 1}, {1, 0}, {1, 1}},  // many output positions: one gemm per image
};

TEST(Convolution, MatchesDirectLoops) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16})
    for (const ConvCase& c : kCases)
      for (const char* layout : {"contiguous", "transposed"}) {
        std::vector<double> xv, wv, bv;
        Tensor x = random_tensor(c.x, dt, &xv, layout), w = random_tensor(c.w, dt, &wv);
        const int64_t cout = c.transposed ? c.w[1] * c.groups : c.w[0];
        Tensor b = c.bias ? random_tensor({cout}, dt, &bv) : Tensor();
        Shape os;
        std::vector<double> ref = ref_conv(c, xv, wv, bv, &os);
        Tensor r = run_conv(c, x, w, b);
        const std::string what = shape_str(c.x) + " * " + shape_str(c.w) + (c.transposed ? " T " : " ") + name(dt);
        ASSERT_EQ(r.sizes(), os) << what;
        ASSERT_EQ(r.dtype(), dt);
        const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : tolerance(dt) * 8;
        expect_close(r, ref, tol, tol * 4, what);
      }
}

TEST(Convolution, ZeroSize) {
  Tensor r = convolution(zeros({0, 3, 5}), zeros({2, 3, 3}), Tensor(), {1}, {0}, {1}, false, {0}, 1);
  EXPECT_EQ(r.sizes(), (Shape{0, 2, 3}));
  Tensor b = tensor<float>({1, 2});
  r = convolution(zeros({1, 0, 5}), zeros({2, 0, 3}), b, {1}, {0}, {1}, false, {0}, 1);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1, 1, 1, 2, 2, 2}));
}

TEST(Convolution, Errors) {
  auto conv = [](Shape xs, Shape ws, int64_t g = 1, std::vector<int64_t> stride = {1}, bool tr = false,
                 std::vector<int64_t> op = {0}) {
    return convolution(zeros(xs), zeros(ws), Tensor(), stride, {0}, {1}, tr, op, g);
  };
  EXPECT_THROW(conv({2, 3, 5}, {4, 2, 3}), Error);        // channel mismatch
  EXPECT_THROW(conv({2, 4, 5}, {3, 2, 3}, 2), Error);     // out channels not divisible by groups
  EXPECT_THROW(conv({2, 3, 2}, {4, 3, 3}), Error);        // kernel larger than input
  EXPECT_THROW(conv({3, 5}, {4, 3, 3}), Error);           // rank mismatch
  EXPECT_THROW(conv({2, 3, 5}, {4, 3, 3}, 1, {0}), Error);  // stride 0
  EXPECT_THROW(conv({2, 3, 5}, {3, 2, 3}, 1, {2}, true, {2}), Error);  // output_padding too big
  EXPECT_THROW(conv({2, 3, 5}, {4, 3, 3}, 1, {1}, false, {1}), Error);
  EXPECT_THROW(convolution(zeros({2, 3, 5}), zeros({4, 3, 3}, kFloat64), Tensor(), {1}, {0}, {1}, false, {0}, 1), Error);
  EXPECT_THROW(convolution(zeros({2, 3, 5}, kInt64), zeros({4, 3, 3}, kInt64), Tensor(), {1}, {0}, {1}, false, {0}, 1),
               Error);
  EXPECT_THROW(convolution(zeros({2, 3, 5}), zeros({4, 3, 3}), zeros({3}), {1}, {0}, {1}, false, {0}, 1), Error);
}

TEST(Convolution, Gradcheck) {
  for (const ConvCase& c : kCases) {
    const int64_t cout = c.transposed ? c.w[1] * c.groups : c.w[0];
    if (numel(c.x) > 200) continue;  // keep finite differences cheap
    TensorList in{grad_input(c.x), grad_input(c.w)};
    if (c.bias) in.push_back(grad_input({cout}));
    expect_gradcheck([&](const TensorList& t) { return TensorList{run_conv(c, t[0], t[1], t.size() > 2 ? t[2] : Tensor())}; },
                     in, shape_str(c.x) + " * " + shape_str(c.w) + (c.transposed ? " transposed" : ""));
  }
  // Non-contiguous input and weight (transposed inside the function).
  ConvCase c{{2, 2, 6, 5}, {3, 2, 2, 3}, {2, 1}, {1, 1}, {1, 2}};
  expect_gradcheck(
      [&](const TensorList& t) { return TensorList{run_conv(c, t[0].transpose(-1, -2), t[1].transpose(-1, -2), t[2])}; },
      {grad_input({2, 2, 5, 6}), grad_input({3, 2, 3, 2}), grad_input({3})}, "non-contiguous");
  // Second order through the formula.
  ConvCase c2{{1, 2, 5}, {2, 1, 2}, {2}, {1}, {1}, 2};
  expect_gradcheck(
      [&](const TensorList& t) {
        EnableGradGuard enable;  // the numerical pass runs without grad
        Tensor y = run_conv(c2, t[0], t[1], Tensor());
        TensorList gr = grad({sum(mul(y, y))}, {t[0], t[1]}, {}, true, true);
        return TensorList{gr[0], gr[1]};
      },
      {grad_input({1, 2, 5}), grad_input({2, 1, 2})}, "double backward");
}

}  // namespace
}  // namespace kiln::test
