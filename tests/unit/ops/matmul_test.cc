// matmul: torch.matmul semantics against a float64 loop reference, every layout and dtype.
#include "support/test_util.h"

namespace kiln::test {
namespace {

// torch.matmul on logical (row-major) values, in float64.
std::vector<double> ref_matmul(const Shape& xs, const std::vector<double>& x, const Shape& ys,
                               const std::vector<double>& y, Shape* out_shape, std::vector<double>* abs_out) {
  Shape a = xs, b = ys;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const size_t nd = std::max(ab.size(), bb.size());
  while (ab.size() < nd) ab.insert(ab.begin(), 1);
  while (bb.size() < nd) bb.insert(bb.begin(), 1);
  Shape batch(nd);
  for (size_t d = 0; d < nd; ++d) batch[d] = ab[d] == 1 ? bb[d] : ab[d];
  const int64_t nb = numel(batch);
  std::vector<double> out(size_t(nb * m * n)), absv(out.size());
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, xo = 0, yo = 0, xm = 1, ym = 1;
    for (size_t d = nd; d-- > 0;) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      xo += (ab[d] == 1 ? 0 : i) * xm;
      yo += (bb[d] == 1 ? 0 : i) * ym;
      xm *= ab[d];
      ym *= bb[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, sa = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double t = x[size_t(xo * m * k + i * k + p)] * y[size_t(yo * k * n + p * n + j)];
          s += t;
          sa += std::abs(t);
        }
        out[size_t(bi * m * n + i * n + j)] = s;
        absv[size_t(bi * m * n + i * n + j)] = sa;
      }
  }
  *out_shape = batch;
  if (xs.size() > 1) out_shape->push_back(m);
  if (ys.size() > 1) out_shape->push_back(n);
  *abs_out = absv;
  return out;
}

void check_matmul(const Shape& xs, const Shape& ys, DType dt, const std::string& lx, const std::string& ly) {
  std::vector<double> xv, yv, absv;
  Tensor x = random_tensor(xs, dt, &xv, lx), y = random_tensor(ys, dt, &yv, ly);
  Shape os;
  std::vector<double> ref = ref_matmul(xs, xv, ys, yv, &os, &absv);
  Tensor r = matmul(x, y);
  const std::string what = shape_str(xs) + " @ " + shape_str(ys) + " " + name(dt) + " " + lx + "/" + ly;
  ASSERT_EQ(r.sizes(), os) << what;
  ASSERT_EQ(r.dtype(), dt) << what;
  std::vector<double> got = r.to_vector<double>();
  // Error scale: the sum of |terms| (cancellation), times the dtype's rounding.
  const double tol = is_floating(dt) ? tolerance(dt) * 4 : 0;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - ref[i]), tol * (absv[i] + std::abs(ref[i]))) << what << " element " << i;
}

const std::vector<std::pair<Shape, Shape>> kShapes = {
    {{3}, {3}},           {{2, 3}, {3}},          {{3}, {3, 4}},          {{2, 3}, {3, 4}},
    {{5, 2, 3}, {3, 4}},  {{2, 3}, {5, 3, 4}},    {{2, 1, 2, 3}, {3, 3, 4}}, {{4, 2, 3}, {3}},
    {{3}, {4, 3, 2}},     {{2, 5, 3}, {2, 3, 4}}, {{4, 1, 6}, {6, 7}},    {{1, 3}, {3, 1}},
    {{0, 3}, {3, 4}},     {{2, 0}, {0, 4}},       {{0}, {0}},             {{3, 0, 2, 3}, {3, 5}},
};

TEST(Matmul, ShapesDtypesLayouts) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt8})
    for (const auto& [xs, ys] : kShapes)
      for (const char* lx : {"contiguous", "transposed", "strided"})
        for (const char* ly : {"contiguous", "transposed", "strided"}) check_matmul(xs, ys, dt, lx, ly);
}

TEST(Matmul, LargeAndBatchedPaths) {
  for (const char* lx : {"contiguous", "transposed", "strided"})
    for (const char* ly : {"contiguous", "transposed", "strided"}) {
      check_matmul({70, 130}, {130, 90}, kFloat32, lx, ly);
      check_matmul({300, 4, 5}, {300, 5, 6}, kFloat64, lx, ly);  // many small: parallel batches
      check_matmul({3, 40, 50}, {50, 30}, kFloat32, lx, ly);     // batches stacked onto rows
      check_matmul({2, 3, 70, 80}, {3, 80, 60}, kFloat64, lx, ly);
    }
  check_matmul({33, 17}, {17, 29}, kInt64, "transposed", "strided");
}

TEST(Matmul, ExpandedAndSlicedOperands) {
  // Stride-0 matrices (expand) and non-unit inner strides need a contiguous copy.
  std::vector<double> xv, yv, absv;
  Tensor x = random_tensor({1, 5}, kFloat32, &xv).expand({4, 5});
  Tensor y = random_tensor({5, 3}, kFloat32, &yv);
  std::vector<double> xe;
  for (int i = 0; i < 4; ++i) xe.insert(xe.end(), xv.begin(), xv.end());
  Shape os;
  std::vector<double> ref = ref_matmul({4, 5}, xe, {5, 3}, yv, &os, &absv);
  expect_close(matmul(x, y), ref, 1e-5, 1e-5, "expanded");
  Tensor big = random_tensor({6, 9}, kFloat64, &xv);
  Tensor xs = big.slice(0, 0, std::nullopt, 2).slice(1, 0, std::nullopt, 3);  // 3x3, strides (18, 3)
  std::vector<double> xsv = xs.to_vector<double>();
  ref = ref_matmul({3, 3}, xsv, {3, 3}, xsv, &os, &absv);
  expect_close(matmul(xs, xs), ref, 1e-12, 1e-12, "sliced");
}

TEST(Matmul, Errors) {
  Tensor a = zeros({2, 3}), b = zeros({3, 4});
  EXPECT_THROW(matmul(a, b.to(kFloat64)), Error);
  EXPECT_THROW(matmul(a, zeros({4, 3})), Error);
  EXPECT_THROW(matmul(zeros({}), b), Error);
  EXPECT_THROW(matmul(zeros({2, 2, 3}), zeros({3, 3, 4})), Error);
  EXPECT_THROW(matmul(zeros({3}), zeros({4})), Error);
  EXPECT_THROW(matmul(zeros({2, 2}, kBool), zeros({2, 2}, kBool)), Error);
}

TEST(Matmul, Gradcheck) {
  for (const auto& [xs, ys] : kShapes) {
    if (numel(xs) == 0 || numel(ys) == 0) continue;
    Tensor x = grad_input(xs), y = grad_input(ys);
    // (0-d outputs are given a dim: gradcheck builds its output gradients with tensor(values, sizes).)
    expect_gradcheck([](const TensorList& t) { return TensorList{matmul(t[0], t[1]).reshape({-1})}; }, {x, y},
                     shape_str(xs) + " @ " + shape_str(ys));
  }
  // Transposed operands (non-contiguous inside the function) with broadcast batch dims.
  Tensor x = grad_input({3, 1, 4, 2}), y = grad_input({2, 5, 4});
  expect_gradcheck([](const TensorList& t) { return TensorList{matmul(t[0].transpose(-1, -2), t[1].transpose(-1, -2))}; },
                   {x, y}, "transposed");
  Tensor z = grad_input({2, 6, 3});
  expect_gradcheck([](const TensorList& t) { return TensorList{matmul(t[0].slice(1, 0, std::nullopt, 2), t[1])}; },
                   {z, grad_input({3, 2})}, "strided");
  // Second order.
  expect_gradcheck(
      [](const TensorList& t) {
        EnableGradGuard enable;  // the numerical pass runs without grad
        Tensor out = matmul(t[0], t[1]);
        TensorList gr = grad({sum(mul(out, out))}, {t[0], t[1]}, {}, true, true);
        return TensorList{gr[0], gr[1]};
      },
      {grad_input({2, 3, 4}), grad_input({4, 2})}, "double backward");
}

}  // namespace
}  // namespace kiln::test
