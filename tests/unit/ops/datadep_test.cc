// The data-dependent prims nonzero and unique: values against loop references, and a clear
// error when traced (fake tensors).
#include <algorithm>
#include <cmath>
#include <map>

#include "core/tensor_impl.h"
#include "support/ref_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

TEST(DataDep, NonzeroMatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32, kBool, kUInt8})
    for (const char* layout : {"contiguous", "transposed", "strided"})
      for (const Shape& xs : std::vector<Shape>{{3, 4, 5}, {7}, {2, 0, 3}, {4, 1}}) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout, -1.5, 1.5);
        if (dt != kBool) {  // make about half the elements exact zeros
          std::vector<double> z = xv;
          for (size_t i = 0; i < z.size(); ++i) z[i] = i % 2 ? 0 : z[i];
          x = tensor(z, xs, kFloat64).to(dt);
          xv = x.to_vector<double>();
        }
        Tensor nz = nonzero(x);
        EXPECT_EQ(nz.dtype(), kInt64);
        std::vector<double> ref;
        int64_t count = 0;
        for (int64_t p = 0; p < numel(xs); ++p)
          if (xv[size_t(p)] != 0) {
            for (int64_t c : unravel(p, xs)) ref.push_back(double(c));
            ++count;
          }
        ASSERT_EQ(nz.sizes(), (Shape{count, int64_t(xs.size())})) << layout;
        expect_close(nz, ref, 0, 0, std::string("nonzero ") + name(dt));
      }
  // 0-d, NaN counts as nonzero.
  EXPECT_EQ(nonzero(scalar_tensor(2.0)).sizes(), (Shape{1, 0}));
  EXPECT_EQ(nonzero(scalar_tensor(0.0)).sizes(), (Shape{0, 0}));
  EXPECT_EQ(nonzero(tensor<double>({0, std::nan(""), 0})).to_vector<int64_t>(), (std::vector<int64_t>{1}));
}

TEST(DataDep, UniqueMatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt64, kInt8, kBool})
    for (const char* layout : {"contiguous", "transposed"})
      for (const Shape& xs : std::vector<Shape>{{6, 5}, {1, 9}, {0, 3}}) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout, -4, 4);
        if (is_floating(dt)) {  // repeated values
          for (double& v : xv) v = std::round(v * 2) / 2;
          x = tensor(xv, xs, kFloat64).to(dt);
          if (std::string(layout) == "transposed") x = x.transpose(0, 1).contiguous().transpose(0, 1);
        }
        std::map<double, int64_t> counts;
        for (double v : xv) ++counts[v];
        std::vector<double> uref, cref;
        for (auto& [v, c] : counts) {
          uref.push_back(v);
          cref.push_back(double(c));
        }
        std::vector<double> iref;
        for (double v : xv) iref.push_back(double(std::distance(counts.begin(), counts.find(v))));
        auto [u, inv, cnt] = unique(x, true, true, true);
        EXPECT_EQ(u.dtype(), dt);
        expect_close(u, uref, 0, 0, std::string("unique values ") + name(dt));
        EXPECT_EQ(inv.sizes(), xs);
        expect_close(inv, iref, 0, 0, "unique inverse");
        expect_close(cnt, cref, 0, 0, "unique counts");
        // Outputs not requested are empty.
        auto [u2, inv2, cnt2] = unique(x);
        expect_close(u2, uref, 0, 0, "unique values only");
        EXPECT_EQ(inv2.numel(), 0);
        EXPECT_EQ(cnt2.numel(), 0);
        auto [u3, inv3, cnt3] = unique(x, false, false, true);
        expect_close(cnt3, cref, 0, 0, "counts only");
        EXPECT_EQ(inv3.numel(), 0);
      }
  // NaNs are never equal: each one is its own entry, after the numbers.
  auto [u, inv, cnt] = unique(tensor<double>({std::nan(""), 1.0, std::nan(""), 1.0}), true, true, true);
  std::vector<double> uv = u.to_vector<double>();
  ASSERT_EQ(uv.size(), 3u);
  EXPECT_EQ(uv[0], 1.0);
  EXPECT_TRUE(std::isnan(uv[1]) && std::isnan(uv[2]));
  EXPECT_EQ(cnt.to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(std::get<0>(unique(scalar_tensor(3.0))).sizes(), (Shape{1}));
}

TEST(DataDep, ErrorsOnFakeTensorsAndDim) {
  TensorSpec spec;
  spec.sizes = {SymInt(3), SymInt(4)};
  spec.dtype = kFloat32;
  Tensor fake = make_fake(spec);
  EXPECT_THROW(nonzero(fake), Error);
  EXPECT_THROW(unique(fake), Error);
  try {
    nonzero(fake);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data-dependent"), std::string::npos) << e.what();
  }
  EXPECT_THROW(unique(zeros({3}), true, false, false, 1), Error);             // dim out of range
  EXPECT_THROW(unique(scalar_tensor(1.0), true, false, false, 0), Error);    // 0-d has no dim
}

// unique(dim): distinct slices sorted lexicographically, inverse per slice, counts.
TEST(DataDep, UniqueAlongDim) {
  Tensor x = tensor<double>({1, 2, 3, 0, 0, 1, 1, 2, 3, 0, 0, 0}, {4, 3});
  auto [u, inv, cnt] = unique(x, true, true, true, 0);
  EXPECT_EQ(u.sizes(), (Shape{3, 3}));
  EXPECT_EQ(u.to_vector<double>(), (std::vector<double>{0, 0, 0, 0, 0, 1, 1, 2, 3}));
  EXPECT_EQ(inv.to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 2, 0}));
  EXPECT_EQ(cnt.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 2}));
  // Columns (dim -1) of a non-contiguous view: the transposed rows above.
  auto [ut, invt, cntt] = unique(x.transpose(0, 1), true, true, true, -1);
  EXPECT_EQ(ut.sizes(), (Shape{3, 3}));
  EXPECT_EQ(ut.to_vector<double>(), (std::vector<double>{0, 0, 1, 0, 0, 2, 0, 1, 3}));
  EXPECT_EQ(invt.to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 2, 0}));
  // A slice holding a NaN equals no other.
  Tensor n = tensor<double>({std::nan(""), 1, std::nan(""), 1}, {2, 2});
  EXPECT_EQ(std::get<0>(unique(n, true, false, false, 0)).size(0), 2);
}

}  // namespace
