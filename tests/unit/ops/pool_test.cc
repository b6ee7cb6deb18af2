// Convolution/pooling composites (conv1d/2d/3d, conv_transpose2d, unfold, fold, max/avg pooling,
// adaptive_avg_pool2d, interpolate, pixel_shuffle) against float64 loops.
#include <limits>

#include "support/conv_ref.h"
#include "support/test_util.h"

namespace kiln::test {
namespace {

double tol(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : tolerance(dt) * 8; }

TEST(ConvOps, ConvNdAndTransposed) {
  for (DType dt : {kFloat32, kFloat64}) {
    std::vector<double> xv, wv, bv;
    // conv2d batched, conv1d unbatched, conv3d, conv_transpose2d.
    ConvCase c2{{2, 4, 7, 6}, {6, 2, 3, 2}, {2, 1}, {1, 1}, {1, 2}, 2};
    Tensor x = random_tensor(c2.x, dt, &xv, "transposed"), w = random_tensor(c2.w, dt, &wv), b = random_tensor({6}, dt, &bv);
    Shape os;
    std::vector<double> ref = ref_conv(c2, xv, wv, bv, &os);
    Tensor r = conv2d(x, w, b, {2, 1}, {1, 1}, {1, 2}, 2);
    EXPECT_EQ(r.sizes(), os);
    expect_close(r, ref, tol(dt), tol(dt), "conv2d");

    ConvCase c1{{1, 3, 9}, {2, 3, 3}, {2}, {1}, {1}, 1, false, {}, false};
    x = random_tensor({3, 9}, dt, &xv);
    w = random_tensor(c1.w, dt, &wv);
    ref = ref_conv(c1, xv, wv, {}, &os);
    r = conv1d(x, w, Tensor(), {2}, {1});
    EXPECT_EQ(r.sizes(), (Shape{2, os[2]}));
    expect_close(r, ref, tol(dt), tol(dt), "conv1d unbatched");

    ConvCase c3{{1, 2, 4, 5, 3}, {2, 2, 2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, false, {}, false};
    x = random_tensor(c3.x, dt, &xv);
    w = random_tensor(c3.w, dt, &wv);
    ref = ref_conv(c3, xv, wv, {}, &os);
    r = conv3d(x, w, Tensor(), {1}, {1});
    EXPECT_EQ(r.sizes(), os);
    expect_close(r, ref, tol(dt), tol(dt), "conv3d");

    ConvCase ct{{2, 4, 3, 4}, {4, 3, 3, 2}, {2, 1}, {1, 0}, {1, 2}, 2, true, {1, 0}};
    x = random_tensor(ct.x, dt, &xv);
    w = random_tensor(ct.w, dt, &wv);
    b = random_tensor({6}, dt, &bv);
    ref = ref_conv(ct, xv, wv, bv, &os);
    r = conv_transpose2d(x, w, b, {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
    EXPECT_EQ(r.sizes(), os);
    expect_close(r, ref, tol(dt), tol(dt), "conv_transpose2d");
  }
  EXPECT_THROW(conv2d(zeros({2, 3, 5}), zeros({4, 3, 3})), Error);
  EXPECT_THROW(conv1d(zeros({2, 3, 5, 5}), zeros({4, 3, 3})), Error);
  EXPECT_THROW(conv2d(zeros({1, 3, 5, 5}), zeros({4, 3, 3, 3}), Tensor(), {1, 1, 1}), Error);
  expect_gradcheck([](const TensorList& t) { return TensorList{conv2d(t[0].transpose(2, 3), t[1], t[2], {2, 1}, {1, 0})}; },
                   {grad_input({1, 2, 4, 5}), grad_input({3, 2, 2, 2}), grad_input({3})}, "conv2d");
  expect_gradcheck([](const TensorList& t) { return TensorList{conv_transpose2d(t[0], t[1], Tensor(), {2}, {1}, {1})}; },
                   {grad_input({1, 2, 3, 3}), grad_input({2, 2, 3, 2})}, "conv_transpose2d");
}

// im2col on [N, C, H, W]: [N, C*kh*kw, L].
std::vector<double> ref_unfold(const std::vector<double>& x, const Shape& s, Shape k, Shape dil, Shape pad, Shape str,
                               Shape* out) {
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  const int64_t oh = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) / str[0] + 1;
  const int64_t ow = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) / str[1] + 1;
  *out = {n, c * k[0] * k[1], oh * ow};
  std::vector<double> r;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t ki = 0; ki < k[0]; ++ki)
        for (int64_t kj = 0; kj < k[1]; ++kj)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t y = i * str[0] - pad[0] + ki * dil[0], xx = j * str[1] - pad[1] + kj * dil[1];
              const bool in = y >= 0 && y < h && xx >= 0 && xx < w;
              r.push_back(in ? x[size_t(((b * c + ch) * h + y) * w + xx)] : 0.0);
            }
  return r;
}

TEST(ConvOps, UnfoldFold) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    std::vector<double> xv;
    Tensor x = random_tensor({2, 3, 5, 6}, dt, &xv, "transposed");
    Shape os;
    std::vector<double> ref = ref_unfold(xv, {2, 3, 5, 6}, {2, 3}, {1, 2}, {1, 0}, {2, 1}, &os);
    Tensor r = unfold(x, {2, 3}, {1, 2}, {1, 0}, {2, 1});
    EXPECT_EQ(r.sizes(), os);
    expect_close(r, ref, tol(dt), tol(dt), "unfold");
    // fold = scatter-add of the columns back into the image.
    std::vector<double> cv;
    Tensor cols = random_tensor(os, dt, &cv);
    std::vector<double> img(2 * 3 * 5 * 6, 0.0);
    const int64_t L = os[2], oh = 3, ow = L / oh;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t ch = 0; ch < 3; ++ch)
        for (int64_t ki = 0; ki < 2; ++ki)
          for (int64_t kj = 0; kj < 3; ++kj)
            for (int64_t l = 0; l < L; ++l) {
              const int64_t y = (l / ow) * 2 - 1 + ki, xx = (l % ow) - 0 + kj * 2;
              if (y < 0 || y >= 5 || xx < 0 || xx >= 6) continue;
              img[size_t(((b * 3 + ch) * 5 + y) * 6 + xx)] += cv[size_t(((b * 3 + ch) * 6 + ki * 3 + kj) * L + l)];
            }
    ASSERT_EQ(oh, (5 + 2 - 2) / 2 + 1);
    Tensor f = fold(cols, {5, 6}, {2, 3}, {1, 2}, {1, 0}, {2, 1});
    EXPECT_EQ(f.sizes(), (Shape{2, 3, 5, 6}));
    expect_close(f, img, tol(dt) * 2, tol(dt) * 2, "fold");
  }
  // Values are moved, not multiplied: nan and inf stay where they are.
  std::vector<double> sv = random_values(2 * 4 * 5);
  sv[7] = NAN;
  sv[12] = INFINITY;
  Shape sos;
  expect_close(unfold(tensor(sv, {1, 2, 4, 5}, kFloat32), {2, 3}, {1}, {1}, {1}),
               ref_unfold(sv, {1, 2, 4, 5}, {2, 3}, {1, 1}, {1, 1}, {1, 1}, &sos), 1e-6, 1e-6, "unfold nan/inf");
  EXPECT_EQ(unfold(zeros({3, 4, 4}), {2}).sizes(), (Shape{12, 9}));
  EXPECT_THROW(unfold(zeros({4, 4}), {2}), Error);
  EXPECT_THROW(fold(zeros({1, 7, 9}), {4, 4}, {2}), Error);   // 7 not divisible by 4
  EXPECT_THROW(fold(zeros({1, 8, 8}), {4, 4}, {2}), Error);   // 8 blocks, 9 expected
  expect_gradcheck([](const TensorList& t) { return TensorList{unfold(t[0].transpose(2, 3), {2}, {1}, {1}, {2})}; },
                   {grad_input({1, 2, 4, 3})}, "unfold");
  expect_gradcheck([](const TensorList& t) { return TensorList{fold(t[0], {4, 3}, {2}, {1}, {1}, {2})}; },
                   {grad_input({1, 8, 6})}, "fold");
  expect_gradcheck(
      [](const TensorList& t) {
        EnableGradGuard enable;  // the numerical pass runs without grad
        Tensor y = unfold(t[0], {2}, {1}, {1}, {2});
        return TensorList{grad({sum(mul(y, y))}, {t[0]}, {}, true, true)[0]};
      },
      {grad_input({1, 2, 3, 4})}, "unfold double backward");
}

struct PoolCase {
  Shape x;
  Shape k, s, p, d;
  bool ceil;
};

// One spatial dim of pooling: output size (PyTorch's formula).
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t o = num / s + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

// 2-d max or avg pooling on [N, C, H, W] values.
std::vector<double> ref_pool(const std::vector<double>& x, const PoolCase& c, bool is_max, bool include_pad,
                             Shape* out) {
  const int64_t nc = c.x[0] * c.x[1], h = c.x[2], w = c.x[3];
  const int64_t oh = pool_out(h, c.k[0], c.s[0], c.p[0], c.d[0], c.ceil), ow = pool_out(w, c.k[1], c.s[1], c.p[1], c.d[1], c.ceil);
  *out = {c.x[0], c.x[1], oh, ow};
  std::vector<double> r;
  for (int64_t b = 0; b < nc; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double m = -std::numeric_limits<double>::infinity(), s = 0;
        int64_t cnt = 0;
        for (int64_t ki = 0; ki < c.k[0]; ++ki)
          for (int64_t kj = 0; kj < c.k[1]; ++kj) {
            const int64_t y = i * c.s[0] - c.p[0] + ki * c.d[0], xx = j * c.s[1] - c.p[1] + kj * c.d[1];
            if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
            const double v = x[size_t((b * h + y) * w + xx)];
            m = std::max(m, v);
            s += v;
            ++cnt;
          }
        if (is_max) {
          r.push_back(m);
        } else {
          // count_include_pad counts the window clipped to the padded input.
          const int64_t y0 = i * c.s[0] - c.p[0], x0 = j * c.s[1] - c.p[1];
          const int64_t hs = std::min(y0 + c.k[0], h + c.p[0]) - y0, ws = std::min(x0 + c.k[1], w + c.p[1]) - x0;
          r.push_back(s / double(include_pad ? hs * ws : cnt));
        }
      }
  return r;
}

const std::vector<PoolCase> kPools = {
    {{2, 3, 6, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
    {{1, 2, 7, 6}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, true},
    {{2, 2, 8, 7}, {3, 3}, {3, 2}, {1, 0}, {2, 1}, false},
    {{1, 2, 5, 5}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, true},
    {{1, 1, 6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
};

TEST(PoolOps, MaxAvgPool2d) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const PoolCase& c : kPools) {
      std::vector<double> xv;
      Tensor x = random_tensor(c.x, dt, &xv, "transposed");
      Shape os;
      std::vector<double> ref = ref_pool(xv, c, true, false, &os);
      Tensor r = max_pool2d(x, c.k, c.s, c.p, c.d, c.ceil);
      EXPECT_EQ(r.sizes(), os);
      expect_close(r, ref, tol(dt), tol(dt), "max_pool2d " + shape_str(c.x));
      if (c.d[0] != 1 || c.d[1] != 1) continue;  // avg_pool has no dilation
      for (bool inc : {true, false}) {
        ref = ref_pool(xv, c, false, inc, &os);
        r = avg_pool2d(x, c.k, c.s, c.p, c.ceil, inc);
        EXPECT_EQ(r.sizes(), os);
        expect_close(r, ref, tol(dt) * 2, tol(dt) * 2, "avg_pool2d " + shape_str(c.x) + (inc ? " incl" : " excl"));
      }
    }
  // max pooling keeps infinities (no arithmetic on the values).
  const std::vector<double> iv{-INFINITY, 1, 2, INFINITY};
  Shape ios;
  expect_close(max_pool2d(tensor(iv, {1, 1, 2, 2}, kFloat32), {2}, {1}, {1}),
               ref_pool(iv, {{1, 1, 2, 2}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false}, true, false, &ios), 0, 0, "inf");
  EXPECT_THROW(max_pool2d(zeros({1, 1, 4, 4}), {2}, {2}, {2}), Error);  // pad > kernel/2
  EXPECT_THROW(max_pool2d(zeros({1, 1, 1, 1}), {2}), Error);
  EXPECT_THROW(max_pool2d(zeros({4, 4}), {2}), Error);
  EXPECT_THROW(avg_pool2d(zeros({1, 1, 4, 4}, kInt64), {2}), Error);
  EXPECT_THROW(max_pool2d(zeros({1, 1, 4, 4}), {2, 2, 2}), Error);
}

TEST(PoolOps, Pool1dUnbatched) {
  std::vector<double> xv;
  Tensor x = random_tensor({2, 3, 9}, kFloat64, &xv, "strided");
  PoolCase c{{2, 3, 1, 9}, {1, 3}, {1, 2}, {0, 1}, {1, 2}, true};
  Shape os;
  std::vector<double> ref = ref_pool(xv, c, true, false, &os);
  Tensor r = max_pool1d(x, {3}, {2}, {1}, {2}, true);
  EXPECT_EQ(r.sizes(), (Shape{2, 3, os[3]}));
  expect_close(r, ref, 1e-12, 1e-12, "max_pool1d");
  c.d = {1, 1};
  ref = ref_pool(xv, c, false, true, &os);
  r = avg_pool1d(x, {3}, {2}, {1}, true, true);
  expect_close(r, ref, 1e-12, 1e-12, "avg_pool1d");
  // Unbatched 2d: [C, H, W].
  Tensor u = random_tensor({2, 4, 4}, kFloat64, &xv);
  PoolCase cu{{1, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false};
  ref = ref_pool(xv, cu, false, true, &os);
  r = avg_pool2d(u, {2});
  EXPECT_EQ(r.sizes(), (Shape{2, 2, 2}));
  expect_close(r, ref, 1e-12, 1e-12, "avg_pool2d unbatched");
}

TEST(PoolOps, Gradcheck) {
  for (const PoolCase& c : kPools) {
    expect_gradcheck([&](const TensorList& t) { return TensorList{max_pool2d(t[0].transpose(2, 3), c.k, c.s, c.p, c.d, c.ceil)}; },
                     {grad_input({c.x[0], c.x[1], c.x[3], c.x[2]})}, "max_pool2d " + shape_str(c.x));
    if (c.d[0] == 1 && c.d[1] == 1)
      expect_gradcheck([&](const TensorList& t) { return TensorList{avg_pool2d(t[0], c.k, c.s, c.p, c.ceil, false)}; },
                       {grad_input(c.x)}, "avg_pool2d " + shape_str(c.x));
  }
  expect_gradcheck([](const TensorList& t) { return TensorList{max_pool1d(t[0], {2}, {1}, {1})}; }, {grad_input({2, 5})},
                   "max_pool1d");
  expect_gradcheck([](const TensorList& t) { return TensorList{avg_pool1d(t[0], {3}, {2}, {1}, true)}; },
                   {grad_input({1, 2, 6})}, "avg_pool1d");
}

TEST(PoolOps, AdaptiveAvgPool2d) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (Shape o : {Shape{3, 2}, Shape{5, 7}, Shape{1, 1}, Shape{4, 3}}) {
      std::vector<double> xv;
      Tensor x = random_tensor({2, 3, 5, 7}, dt, &xv, "strided");
      std::vector<double> ref;
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t i = 0; i < o[0]; ++i)
          for (int64_t j = 0; j < o[1]; ++j) {
            const int64_t y0 = i * 5 / o[0], y1 = ((i + 1) * 5 + o[0] - 1) / o[0];
            const int64_t x0 = j * 7 / o[1], x1 = ((j + 1) * 7 + o[1] - 1) / o[1];
            double s = 0;
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t xx = x0; xx < x1; ++xx) s += xv[size_t((b * 5 + y) * 7 + xx)];
            ref.push_back(s / double((y1 - y0) * (x1 - x0)));
          }
      Tensor r = adaptive_avg_pool2d(x, o);
      EXPECT_EQ(r.sizes(), (Shape{2, 3, o[0], o[1]}));
      EXPECT_EQ(r.dtype(), dt);
      expect_close(r, ref, tol(dt), tol(dt), "adaptive " + shape_str(o));
    }
  EXPECT_THROW(adaptive_avg_pool2d(zeros({5, 7}), {2}), Error);
  EXPECT_THROW(adaptive_avg_pool2d(zeros({1, 5, 7}), {0, 2}), Error);
  expect_gradcheck([](const TensorList& t) { return TensorList{adaptive_avg_pool2d(t[0].transpose(2, 3), {2, 3})}; },
                   {grad_input({1, 2, 5, 4})}, "adaptive_avg_pool2d");
  expect_gradcheck([](const TensorList& t) { return TensorList{adaptive_avg_pool2d(t[0], {2, 3})}; },
                   {grad_input({2, 4, 6})}, "adaptive_avg_pool2d equal windows, unbatched");
}

// One dim of interpolation: (index, weight) pairs per output.
std::vector<std::vector<std::pair<int64_t, double>>> ref_interp(int64_t in, int64_t out, double scale, bool linear,
                                                                bool align) {
  std::vector<std::vector<std::pair<int64_t, double>>> r(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    if (!linear) {
      r[size_t(o)] = {{std::min<int64_t>(int64_t(std::floor(float(o) * float(scale))), in - 1), 1.0}};
      continue;
    }
    double src = align ? (out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0) : (double(o) + 0.5) * scale - 0.5;
    if (src < 0) src = 0;
    int64_t i0 = int64_t(src);
    if (i0 > in - 1) i0 = in - 1;
    const int64_t i1 = i0 < in - 1 ? i0 + 1 : i0;
    const double l = src - double(i0);
    r[size_t(o)] = {{i0, 1 - l}, {i1, l}};
  }
  return r;
}

TEST(Interpolate, NearestBilinear) {
  struct Case {
    Shape out;
    std::optional<std::vector<double>> sf;
    std::string mode;
    std::optional<bool> align;
  };
  const std::vector<Case> cases = {
      {{8, 9}, std::nullopt, "nearest", std::nullopt},   {{2, 3}, std::nullopt, "nearest", std::nullopt},
      {{7, 5}, std::nullopt, "bilinear", false},        {{7, 5}, std::nullopt, "bilinear", true},
      {{2, 2}, std::nullopt, "bilinear", false},        {{1, 1}, std::nullopt, "bilinear", true},
      {{8, 6}, std::vector<double>{2.0, 2.0}, "bilinear", false},
      {{6, 4}, std::vector<double>{1.5}, "nearest", std::nullopt},
  };
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const Case& c : cases) {
      std::vector<double> xv;
      Tensor x = random_tensor({2, 2, 4, 3}, dt, &xv, "transposed");
      const bool lin = c.mode == "bilinear";
      const double sh = c.sf ? 1.0 / (*c.sf)[0] : 4.0 / double(c.out[0]);
      const double sw = c.sf ? 1.0 / c.sf->back() : 3.0 / double(c.out[1]);
      auto wh = ref_interp(4, c.out[0], sh, lin, c.align.value_or(false));
      auto ww = ref_interp(3, c.out[1], sw, lin, c.align.value_or(false));
      std::vector<double> ref;
      for (int64_t b = 0; b < 4; ++b)
        for (int64_t i = 0; i < c.out[0]; ++i)
          for (int64_t j = 0; j < c.out[1]; ++j) {
            double s = 0;
            for (auto [yi, yw] : wh[size_t(i)])
              for (auto [xi, xw] : ww[size_t(j)]) s += yw * xw * xv[size_t((b * 4 + yi) * 3 + xi)];
            ref.push_back(s);
          }
      Tensor r = c.sf ? interpolate(x, std::nullopt, c.sf, c.mode, c.align)
                      : interpolate(x, SymIntList(c.out), std::nullopt, c.mode, c.align);
      EXPECT_EQ(r.sizes(), (Shape{2, 2, c.out[0], c.out[1]})) << c.mode;
      expect_close(r, ref, tol(dt) * 2, tol(dt) * 2, c.mode + " " + shape_str(c.out));
    }
  // 1-d and 3-d nearest.
  std::vector<double> xv;
  Tensor x1 = random_tensor({1, 2, 3}, kFloat64, &xv);
  std::vector<double> ref;
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t o = 0; o < 6; ++o) ref.push_back(xv[size_t(c * 3 + o / 2)]);
  expect_close(interpolate(x1, SymIntList({6})), ref, 0, 0, "nearest 1d");
  // Integer up/down-scaling copies values: a nan stays in its own cells.
  std::vector<double> nv = random_values(12);
  nv[5] = NAN;
  std::vector<double> nref;
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 8; ++j) nref.push_back(nv[size_t((i / 2) * 4 + j / 2)]);
  expect_close(interpolate(tensor(nv, {1, 1, 3, 4}), SymIntList({6, 8})), nref, 0, 0, "nearest nan");
  std::vector<double> dref{nv[0], nv[2], nv[4], nv[6]};  // rows floor(o * 1.5) = 0, 1; cols floor(o * 2) = 0, 2
  expect_close(interpolate(tensor(nv, {1, 1, 3, 4}), SymIntList({2, 2})), dref, 0, 0, "nearest downscale");
  EXPECT_EQ(interpolate(zeros({1, 1, 2, 2, 2}), std::nullopt, std::vector<double>{2.0}).sizes(), (Shape{1, 1, 4, 4, 4}));
  EXPECT_THROW(interpolate(zeros({1, 1, 4}), SymIntList({8}), std::nullopt, "bilinear"), Error);
  EXPECT_THROW(interpolate(zeros({1, 1, 4, 4}), SymIntList({8}), std::nullopt, "nearest", true), Error);
  EXPECT_THROW(interpolate(zeros({1, 1, 4, 4}), SymIntList({8}), std::nullopt, "bicubic"), Error);
  EXPECT_THROW(interpolate(zeros({1, 1, 4, 4})), Error);
  EXPECT_THROW(interpolate(zeros({4, 4}), SymIntList({8})), Error);
  expect_gradcheck(
      [](const TensorList& t) { return TensorList{interpolate(t[0].transpose(2, 3), SymIntList({5, 7}), std::nullopt, "bilinear", false)}; },
      {grad_input({1, 2, 3, 4})}, "bilinear");
  expect_gradcheck([](const TensorList& t) { return TensorList{interpolate(t[0], SymIntList({5, 7}))}; },
                   {grad_input({1, 2, 3, 4})}, "nearest");
}

TEST(PixelShuffle, Matches) {
  for (DType dt : {kFloat32, kInt64}) {
    std::vector<double> xv;
    Tensor x = random_tensor({2, 8, 3, 2}, dt, &xv, "strided");
    std::vector<double> ref;
    const int64_t r = 2, c = 2;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < 6; ++y)
          for (int64_t xx = 0; xx < 4; ++xx) {
            const int64_t src_c = ch * r * r + (y % r) * r + (xx % r);
            ref.push_back(xv[size_t(((b * 8 + src_c) * 3 + y / r) * 2 + xx / r)]);
          }
    Tensor out = pixel_shuffle(x, 2);
    EXPECT_EQ(out.sizes(), (Shape{2, 2, 6, 4}));
    expect_close(out, ref, 0, 0, "pixel_shuffle");
  }
  EXPECT_EQ(pixel_shuffle(zeros({9, 1, 1}), 3).sizes(), (Shape{1, 3, 3}));
  EXPECT_THROW(pixel_shuffle(zeros({1, 6, 2, 2}), 2), Error);
  EXPECT_THROW(pixel_shuffle(zeros({4, 2}), 2), Error);
  expect_gradcheck([](const TensorList& t) { return TensorList{pixel_shuffle(t[0], 2)}; }, {grad_input({1, 4, 2, 3})},
                   "pixel_shuffle");
}

}  // namespace
}  // namespace kiln::test
