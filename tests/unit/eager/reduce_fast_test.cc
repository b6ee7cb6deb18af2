// The vectorized reduction paths (contiguous inner runs, outer dims accumulated row by row,
// long reductions split across threads): sums, amax/amin with NaNs in every lane position and in
// the tails, against float64 loops over the input values.
#include "support/test_util.h"

namespace kiln::test {
namespace {

// Reference over a [rows, cols] row-major vector along dim d (0 or 1) with op on doubles.
template <class Op>
std::vector<double> ref_2d(const std::vector<double>& v, int64_t rows, int64_t cols, int d, double init, Op op) {
  std::vector<double> out(size_t(d == 0 ? cols : rows), init);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double& o = out[size_t(d == 0 ? c : r)];
      o = op(o, v[size_t(r * cols + c)]);
    }
  return out;
}

double nan_max(double s, double v) { return std::isnan(s) || std::isnan(v) ? NAN : std::max(s, v); }
double nan_min(double s, double v) { return std::isnan(s) || std::isnan(v) ? NAN : std::min(s, v); }

void expect_same_nan(const Tensor& t, const std::vector<double>& want, const std::string& what) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << what << " at " << i;
    else EXPECT_EQ(got[i], want[i]) << what << " at " << i;
  }
}

TEST(ReduceFast, SumShapesAndSplits) {
  // Shapes hitting: short rows, rows with lane tails, few long rows (split across threads), tall
  // matrices summed over dim 0 (rows split across threads), wide ones (several column blocks).
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{3, 5}, {7, 33}, {2, 70001}, {40000, 20}, {9, 9000}, {1, 100000}};
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    for (auto [rows, cols] : shapes) {
      std::vector<double> v;
      Tensor x = random_tensor({rows, cols}, dt, &v);
      const double tol = tolerance(dt) * 4;
      for (int d : {0, 1}) {
        std::vector<double> want = ref_2d(v, rows, cols, d, 0.0, [](double a, double b) { return a + b; });
        std::vector<double> scale = ref_2d(v, rows, cols, d, 0.0, [](double a, double b) { return a + std::abs(b); });
        std::vector<double> got = sum(x, {d}, false, kFloat64).to_vector<double>();
        Tensor s = sum(x, {d});  // in the input dtype
        std::vector<double> got_dt = s.to_vector<double>();
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_NEAR(got[i], want[i], 1e-12 * scale[i] + 1e-12) << rows << "x" << cols << " dim " << d;
          EXPECT_NEAR(got_dt[i], want[i], tol * scale[i] + tol) << name(dt) << " " << rows << "x" << cols << " dim " << d;
        }
      }
    }
  }
}

TEST(ReduceFast, AmaxAminNanInEveryPosition) {
  // A NaN at each position of a 2x37 row (lanes and tail) and of a column; both dims.
  const int64_t rows = 6, cols = 37;
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    for (int64_t at = 0; at < rows * cols; at += 5) {
      std::vector<double> v = random_values(rows * cols);
      v[size_t(at)] = NAN;
      Tensor x = make(v, {rows, cols}, dt);
      v = x.to_vector<double>();
      for (int d : {0, 1}) {
        expect_same_nan(amax(x, {d}), ref_2d(v, rows, cols, d, -INFINITY, nan_max), "amax " + std::string(name(dt)));
        expect_same_nan(amin(x, {d}), ref_2d(v, rows, cols, d, INFINITY, nan_min), "amin " + std::string(name(dt)));
      }
    }
  }
}

TEST(ReduceFast, AmaxLongAndInts) {
  for (DType dt : {kFloat32, kInt32, kInt8, kUInt8, kBool}) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{2, 50000}, {50000, 17}, {5, 41}}) {
      std::vector<double> v;
      Tensor x = random_tensor({rows, cols}, dt, &v, "contiguous", dt == kUInt8 ? 0 : -100, 100);
      for (int d : {0, 1}) {
        expect_same_nan(amax(x, {d}), ref_2d(v, rows, cols, d, -INFINITY, nan_max), "amax " + std::string(name(dt)));
        expect_same_nan(amin(x, {d}), ref_2d(v, rows, cols, d, INFINITY, nan_min), "amin " + std::string(name(dt)));
      }
      expect_same_nan(amax(x), {*std::max_element(v.begin(), v.end())}, "amax all");
    }
  }
  // A NaN far into a long row that is split across threads.
  std::vector<double> v = random_values(100000);
  v[77777] = NAN;
  EXPECT_TRUE(std::isnan(amax(make(v, {100000}, kFloat32)).item<double>()));
  EXPECT_TRUE(std::isnan(amin(make(v, {1, 100000}, kFloat32), {-1}).item<double>()));
}

TEST(ReduceFast, NonContiguousAndMiddleDims) {
  // Transposed / strided inputs and a reduction over a middle dim (outer path with groups).
  for (const std::string layout : {"transposed", "strided"}) {
    std::vector<double> v;
    Tensor x = random_tensor({4, 30, 50}, kFloat32, &v, layout);
    std::vector<double> want(4 * 50, 0.0), wmax(4 * 50, -INFINITY);
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = 0; b < 30; ++b)
        for (int64_t c = 0; c < 50; ++c) {
          const double e = v[size_t((a * 30 + b) * 50 + c)];
          want[size_t(a * 50 + c)] += e;
          wmax[size_t(a * 50 + c)] = std::max(wmax[size_t(a * 50 + c)], e);
        }
    expect_close(sum(x, {1}, false, kFloat64), want, 1e-12, 1e-12, layout);
    expect_close(sum(x, {-2}), want, 1e-5, 1e-5, layout);
    expect_same_nan(amax(x, {1}), wmax, layout);
  }
}

}  // namespace
}  // namespace kiln::test
