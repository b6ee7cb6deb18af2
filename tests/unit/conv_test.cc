// convolution prim: N-d, strided/padded/dilated/grouped/transposed, against direct float64 loops.
#include "test_util.h"

namespace kiln::test {
namespace {

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> stride, pad, dil;
  int64_t groups = 1;
  bool transposed = false;
  std::vector<int64_t> out_pad = {};
  bool bias = true;
};

// Linear index of a multi-index over `sizes` (row-major).
int64_t lin(const Shape& sizes, const std::vector<int64_t>& idx) {
  int64_t r = 0;
  for (size_t d = 0; d < sizes.size(); ++d) r = r * sizes[d] + idx[d];
  return r;
}
std::vector<int64_t> unlin(const Shape& sizes, int64_t i) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = i % sizes[d];
    i /= sizes[d];
  }
  return idx;
}

// Direct convolution (scatter form: each input x kernel pair adds to one output).
std::vector<double> ref_conv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b, Shape* out_shape) {
  const size_t nd = c.x.size() - 2;
  const int64_t n = c.x[0], cin = c.x[1], G = c.groups;
  const int64_t cout = c.transposed ? c.w[1] * G : c.w[0];
  const int64_t cig = cin / G, cog = cout / G;
  Shape in_sp(c.x.begin() + 2, c.x.end()), k_sp(c.w.begin() + 2, c.w.end()), out_sp;
  for (size_t d = 0; d < nd; ++d) {
    if (!c.transposed)
      out_sp.push_back((in_sp[d] + 2 * c.pad[d] - c.dil[d] * (k_sp[d] - 1) - 1) / c.stride[d] + 1);
    else
      out_sp.push_back((in_sp[d] - 1) * c.stride[d] - 2 * c.pad[d] + c.dil[d] * (k_sp[d] - 1) + c.out_pad[d] + 1);
  }
  *out_shape = {n, cout};
  out_shape->insert(out_shape->end(), out_sp.begin(), out_sp.end());
  const int64_t osz = numel(out_sp), isz = numel(in_sp), ksz = numel(k_sp);
  std::vector<double> out(size_t(n * cout * osz), 0.0);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t co = 0; co < cout; ++co)
      for (int64_t o = 0; o < osz; ++o) out[size_t((bi * cout + co) * osz + o)] = b.empty() ? 0 : b[size_t(co)];
  // For the forward conv the "big" side is the input (positions o*s - p + k*d of it are read);
  // for the transposed one it is the output (written at i*s - p + k*d).
  const Shape& grid = c.transposed ? in_sp : out_sp;
  const Shape& image = c.transposed ? out_sp : in_sp;
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t gi = 0; gi < G; ++gi)
      for (int64_t ci = 0; ci < cig; ++ci)
        for (int64_t co = 0; co < cog; ++co)
          for (int64_t kk = 0; kk < ksz; ++kk) {
            std::vector<int64_t> k = unlin(k_sp, kk);
            const double wv = c.transposed ? w[size_t(((gi * cig + ci) * cog + co) * ksz + kk)]
                                           : w[size_t(((gi * cog + co) * cig + ci) * ksz + kk)];
            for (int64_t q = 0; q < numel(grid); ++q) {
              std::vector<int64_t> gp = unlin(grid, q), ip(nd);
              bool ok = true;
              for (size_t d = 0; d < nd; ++d) {
                ip[d] = gp[d] * c.stride[d] - c.pad[d] + k[d] * c.dil[d];
                ok = ok && ip[d] >= 0 && ip[d] < image[d];
              }
              if (!ok) continue;
              const int64_t xi = c.transposed ? q : lin(image, ip), oi = c.transposed ? lin(image, ip) : q;
              out[size_t((bi * cout + gi * cog + co) * osz + oi)] += wv * x[size_t((bi * cin + gi * cig + ci) * isz + xi)];
            }
          }
  return out;
}

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
    {{2, 2, 6}, {2, 2, 3}, {3}, {2}, {2}, 1, true, {2}},  // output_padding < dilation
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
