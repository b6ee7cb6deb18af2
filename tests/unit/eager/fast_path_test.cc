// The per-call fast paths (relu's eager kernel, in-place ops copying without dispatch, loops
// with many dims) give the same results as the general paths, checked against float64 loops.
#include <limits>
#include <optional>

#include "core/tensor_impl.h"
#include "support/test_util.h"

namespace kiln {
namespace {

using test::make;

TEST(FastPath, ReluKernelMatchesDefinitionAcrossDtypes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> vals = test::random_values(37);
  vals.push_back(nan);
  vals.push_back(-0.0);
  vals.push_back(0.0);
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kUInt8}) {
    std::vector<double> in;
    Tensor x = make(vals, {int64_t(vals.size())}).to(dt);
    in = x.to_vector<double>();
    Tensor y = relu(x);
    EXPECT_EQ(y.dtype(), dt);
    std::vector<double> got = y.to_vector<double>();
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name(dt) << " NaN stays NaN";
        continue;
      }
      const double want = in[i] > 0 ? in[i] : 0.0;
      EXPECT_EQ(got[i], want) << name(dt) << " at " << i;
      if (in[i] == 0) {
        EXPECT_FALSE(std::signbit(got[i])) << name(dt) << ": relu(-0.0) is +0.0";
      }
    }
  }
}

TEST(FastPath, ReluOfBoolIsAnError) {
  EXPECT_THROW(relu(make({1, 0}, {2}, kBool)), Error);
}

TEST(FastPath, ReluNonContiguousInput) {
  std::vector<double> vals;
  Tensor x = test::random_tensor({5, 7}, kFloat32, &vals, "transposed");
  std::vector<double> got = relu(x).to_vector<double>();
  for (size_t i = 0; i < vals.size(); ++i) EXPECT_EQ(got[i], vals[i] > 0 ? vals[i] : 0.0);
}

TEST(FastPath, InplaceAddWritesThroughAndBumpsVersion) {
  std::vector<double> a = test::random_values(12), b = test::random_values(12);
  Tensor x = make(a, {3, 4}), y = make(b, {3, 4});
  Tensor row = x.select(0, 1);  // a view: sees the write
  const uint64_t before = x.impl()->storage->version;
  x.add_(y);
  EXPECT_GT(x.impl()->storage->version, before);
  std::vector<double> got = x.to_vector<double>(), rv = row.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(got[i], a[i] + b[i]);
  for (size_t j = 0; j < 4; ++j) EXPECT_EQ(rv[j], a[4 + j] + b[4 + j]);
}

TEST(FastPath, InplaceAddWithItselfAndOverlappingView) {
  std::vector<double> a = test::random_values(8);
  Tensor x = make(a, {8});
  x.add_(x);
  std::vector<double> got = x.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(got[i], 2 * a[i]);
  // x[1:] += x[:-1] reads the old values (the result is computed before it is written), with
  // grad mode on (views carry autograd state: the dispatching path) and off (the direct copy).
  for (bool grad : {true, false}) {
    std::optional<NoGradGuard> no_grad;
    if (!grad) no_grad.emplace();
    Tensor z = make(a, {8});
    Tensor tail = z.slice(0, 1, 8), head = z.slice(0, 0, 7);
    tail.add_(head);
    got = z.to_vector<double>();
    EXPECT_EQ(got[0], a[0]);
    for (size_t i = 1; i < a.size(); ++i) EXPECT_EQ(got[i], a[i] + a[i - 1]) << "grad " << grad;
  }
}

TEST(FastPath, InplaceKeepsAutogradErrors) {
  // A leaf that requires grad still refuses in-place writes (the slow path's checks run).
  Tensor w = make({1, 2, 3}, {3}).requires_grad_();
  EXPECT_THROW(w.add_(make({1, 1, 1}, {3})), Error);
}

TEST(FastPath, BroadcastLoopBeyondInlineDims) {
  // 8 dims (more than StridedLoop keeps inline), broadcast and non-contiguous.
  const Shape sx = {2, 1, 3, 1, 2, 2, 1, 3}, sy = {3, 2, 1, 2, 1, 3};
  std::vector<double> vx, vy;
  Tensor x = test::random_tensor(sx, kFloat64, &vx, "strided");
  Tensor y = test::random_tensor(sy, kFloat64, &vy, "transposed");
  Tensor z = add(x, y);
  const Shape so = {2, 1, 3, 2, 2, 2, 1, 3};
  ASSERT_EQ(z.sizes(), so);
  std::vector<double> got = z.to_vector<double>();
  // Independent broadcast: index each operand by the output's multi-index.
  auto index_of = [](const Shape& s, const Shape& out, int64_t lin) {
    std::vector<int64_t> idx(out.size());
    for (size_t d = out.size(); d-- > 0;) idx[d] = lin % out[d], lin /= out[d];
    int64_t k = 0;
    const size_t lead = out.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d) k = k * s[d] + (s[d] == 1 ? 0 : idx[lead + d]);
    return size_t(k);
  };
  for (int64_t i = 0; i < int64_t(got.size()); ++i)
    EXPECT_EQ(got[size_t(i)], vx[index_of(sx, so, i)] + vy[index_of(sy, so, i)]) << i;
}

TEST(FastPath, SmallAndLargeSumsAgree) {
  for (int64_t n : {1, 16, 1000, 70000}) {
    std::vector<double> v = test::random_values(n);
    double want = 0;
    for (double e : v) want += e;
    EXPECT_NEAR(make(v, {n}).sum().item<double>(), want, 1e-9 * double(n)) << n;
    // Several short rows (the per-output serial path).
    Tensor rows = make(v, {n}).view({1, n}).expand({3, n}).sum(1);
    for (double r : rows.to_vector<double>()) EXPECT_NEAR(r, want, 1e-9 * double(n));
  }
}

}  // namespace
}  // namespace kiln
