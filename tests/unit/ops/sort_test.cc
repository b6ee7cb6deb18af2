// sort and topk prims, and the sorting composites, against float64 references.
#include "ops/dispatch.h"
#include "support/reduce_ref.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};

// Reference order: NaN is the largest value; ties keep their original order (stable).
std::vector<size_t> ref_order(const std::vector<double>& l, bool descending) {
  std::vector<size_t> idx(l.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  auto key_less = [](double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t p, size_t q) {
    return descending ? key_less(l[q], l[p]) : key_less(l[p], l[q]);
  });
  return idx;
}

void sort_ref(const std::vector<double>& v, const Shape& shape, int64_t dim, bool descending,
              std::vector<double>* values, std::vector<double>* indices) {
  auto ls = lines(v, shape, dim), is = ls;
  for (size_t r = 0; r < ls.size(); ++r) {
    std::vector<size_t> o = ref_order(ls[r], descending);
    std::vector<double> line = ls[r];
    for (size_t k = 0; k < o.size(); ++k) {
      ls[r][k] = line[o[k]];
      is[r][k] = double(o[k]);
    }
  }
  const int64_t n = shape.empty() ? 1 : shape[size_t(wrap(dim, int64_t(shape.size())))];
  *values = unlines(ls, shape, dim, n);
  *indices = unlines(is, shape, dim, n);
}

TEST(Sort, ValuesAndStableIndices) {
  const Shape shape{4, 5, 6};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kInt8})
    for (const auto& layout : kLayouts)
      for (int64_t dim : {0, 1, 2, -1})
        for (bool desc : {false, true}) {
          std::vector<double> v, rv, ri;
          // Few distinct values, so stability matters.
          Tensor x = random_tensor(shape, dt, &v, layout, -3, 3);
          if (is_floating(dt) && dt != kFloat64) {
            x = round(x);
            v = x.to_vector<double>();
          }
          sort_ref(v, shape, dim, desc, &rv, &ri);
          auto [sv, si] = sort(x, dim, desc);
          const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim) +
                                   (desc ? " desc" : "");
          EXPECT_EQ(sv.dtype(), dt);
          EXPECT_EQ(si.dtype(), kInt64);
          EXPECT_EQ(sv.sizes(), shape);
          expect_close(sv, rv, 0, 0, "values " + what);
          expect_close(si, ri, 0, 0, "indices " + what);
        }
}

TEST(Sort, NanIsLargest) {
  const double nan = std::nan("");
  std::vector<double> v = {3, nan, -1, 2, nan, -1, 0, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (bool desc : {false, true}) {
      std::vector<double> rv, ri;
      sort_ref(v, {8}, 0, desc, &rv, &ri);
      auto [sv, si] = make(v, {8}).to(dt).sort(0, desc);
      expect_close(sv, rv, 0, 0, std::string("nan values ") + name(dt));
      expect_close(si, ri, 0, 0, std::string("nan indices ") + name(dt));
    }
  // Ascending puts NaNs last, descending first, each in their original order.
  auto [a, ai] = sort(make(v, {8}));
  EXPECT_EQ(ai.to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 6, 3, 0, 7, 1, 4}));
  auto [d, di] = sort(make(v, {8}), 0, true);
  EXPECT_EQ(di.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7, 0, 3, 6, 2, 5}));
  // Infinities sort among the numbers, below NaN.
  auto [iv, ii] = sort(make({INFINITY, nan, -INFINITY, 1}, {4}));
  EXPECT_EQ(ii.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 0, 1}));
}

TEST(Sort, BoolZeroSizeZeroDimErrors) {
  auto [bv, bi] = sort(tensor<bool>({true, false, true, false}));
  EXPECT_EQ(bv.to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(bi.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2}));
  for (const Shape& s : {Shape{0}, Shape{3, 0}, Shape{0, 4}}) {
    auto [v, i] = sort(zeros(s), 0);
    EXPECT_EQ(v.sizes(), s);
    EXPECT_EQ(i.sizes(), s);
    auto [tv, ti] = topk(zeros(s), 0, 0);
    Shape want = s;
    want[0] = 0;
    EXPECT_EQ(tv.sizes(), want);
    EXPECT_EQ(ti.dtype(), kInt64);
  }
  auto [zv, zi] = sort(scalar_tensor(2.0));
  EXPECT_EQ(zv.dim(), 0);
  EXPECT_EQ(zi.item<int64_t>(), 0);
  EXPECT_THROW(sort(zeros({2, 3}), 2), kiln::Error);
  EXPECT_THROW(sort(zeros({2, 3}), -3), kiln::Error);
}

// The k largest (or smallest) of each line, sorted; indices must point at those values.
TEST(Topk, ValuesAndIndices) {
  const Shape shape{4, 7, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32})
    for (const auto& layout : kLayouts)
      for (int64_t dim : {0, 1, -1})
        for (bool largest : {true, false})
          for (int64_t k : {int64_t(0), int64_t(1), int64_t(3)}) {
            std::vector<double> v;
            Tensor x = random_tensor(shape, dt, &v, layout, -3, 3);
            const int64_t dd = wrap(dim, 3);
            if (k > shape[size_t(dd)]) continue;
            auto [tv, ti] = topk(x, k, dim, largest, true);
            Shape os = shape;
            os[size_t(dd)] = k;
            EXPECT_EQ(tv.sizes(), os);
            EXPECT_EQ(ti.dtype(), kInt64);
            std::vector<std::vector<double>> want;
            for (const auto& l : lines(v, shape, dim)) {
              std::vector<size_t> o = ref_order(l, largest);
              std::vector<double> top;
              for (int64_t j = 0; j < k; ++j) top.push_back(l[o[size_t(j)]]);
              want.push_back(top);
            }
            const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim) +
                                     " k " + std::to_string(k) + (largest ? " largest" : " smallest");
            expect_close(tv, unlines(want, os, dim, k), 0, 0, "topk values " + what);
            // Each index names an element of its line holding the returned value, no index twice.
            auto ls = lines(v, shape, dim);
            auto idx = lines(ti.to_vector<double>(), os, dim), got = lines(tv.to_vector<double>(), os, dim);
            for (size_t r = 0; r < ls.size(); ++r) {
              std::vector<double> seen;
              for (int64_t j = 0; j < k; ++j) {
                const double at = idx[r][size_t(j)];
                ASSERT_GE(at, 0);
                ASSERT_LT(at, double(ls[r].size()));
                EXPECT_EQ(ls[r][size_t(at)], got[r][size_t(j)]) << what;
                EXPECT_EQ(std::count(seen.begin(), seen.end(), at), 0) << what;
                seen.push_back(at);
              }
            }
          }
}

TEST(Topk, NanAndErrors) {
  const double nan = std::nan("");
  Tensor x = make({1, nan, 3, 2}, {4});
  auto [v, i] = topk(x, 2);
  std::vector<double> got = v.to_vector<double>();
  EXPECT_TRUE(std::isnan(got[0]));  // NaN counts as the largest
  EXPECT_EQ(got[1], 3);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  auto [sv, si] = topk(x, 2, 0, false);
  EXPECT_EQ(sv.to_vector<double>(), (std::vector<double>{1, 2}));
  EXPECT_EQ(si.to_vector<int64_t>(), (std::vector<int64_t>{0, 3}));
  EXPECT_THROW(topk(x, 5), kiln::Error);
  EXPECT_THROW(topk(x, -1), kiln::Error);
  EXPECT_THROW(topk(x, 1, 1), kiln::Error);
  auto [zv, zi] = topk(scalar_tensor(2.0), 1);
  EXPECT_EQ(zv.dim(), 0);
  EXPECT_EQ(zi.item<int64_t>(), 0);
  // A long line (partial sort path) against the reference.
  std::vector<double> big;
  Tensor b = random_tensor({100000}, kFloat32, &big);
  std::vector<size_t> o = ref_order(big, true);
  auto [bv, bi] = topk(b, 10);
  std::vector<double> want;
  for (int j = 0; j < 10; ++j) want.push_back(big[o[size_t(j)]]);
  expect_close(bv, want, 0, 0, "topk large");
}

TEST(SortGrad, SortAndTopk) {
  Tensor x = grad_input({3, 4, 5});
  for (int64_t dim : {0, 1, -1})
    for (bool desc : {false, true}) {
      expect_gradcheck([&](const TensorList& in) { return TensorList{std::get<0>(sort(in[0], dim, desc))}; }, {x}, "sort");
      expect_gradcheck([&](const TensorList& in) { return TensorList{std::get<0>(topk(in[0], 2, dim, desc))}; }, {x},
                       "topk");
    }
  Tensor y = grad_input({4, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(sort(in[0].t(), 1))}; }, {y}, "sort transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(topk(in[0].t(), 2, 0))}; }, {y},
                   "topk transposed");
  Tensor b = grad_input({1, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(sort(in[0].expand({4, 3}) * in[0], 1))}; },
                   {b}, "sort broadcast");
  Tensor s = scalar_tensor(1.5, kFloat64);
  s.requires_grad_();
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(sort(in[0]))}; }, {s}, "sort 0-d");
}

// ---------------------------------------------------------------- sorting composites

TEST(SortOps, Argsort) {
  const Shape shape{3, 6};
  for (bool desc : {false, true})
    for (int64_t dim : {0, 1, -1}) {
      std::vector<double> v, rv, ri;
      Tensor x = round(random_tensor(shape, kFloat32, &v, "transposed", -2, 2));
      v = x.to_vector<double>();
      sort_ref(v, shape, dim, desc, &rv, &ri);
      Tensor i = argsort(x, dim, desc);
      EXPECT_EQ(i.dtype(), kInt64);
      expect_close(i, ri, 0, 0, "argsort");
    }
}

TEST(SortOps, KthvalueAndMedian) {
  const Shape shape{4, 7, 6};
  for (DType dt : {kFloat32, kFloat64, kInt32})
    for (const auto& layout : kLayouts)
      for (int64_t dim : {0, 1, -1})
        for (bool keepdim : {false, true}) {
          std::vector<double> v;
          Tensor x = random_tensor(shape, dt, &v, layout, -3, 3);
          const int64_t n = shape[size_t(wrap(dim, 3))];
          const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim);
          for (int64_t k : {int64_t(1), n / 2 + 1, n}) {
            auto [kv, ki] = kthvalue(x, k, dim, keepdim);
            EXPECT_EQ(kv.sizes(), reduced(shape, {dim}, keepdim));
            std::vector<double> rv;
            auto ls = lines(v, shape, dim);
            for (auto l : ls) {
              std::sort(l.begin(), l.end());
              rv.push_back(l[size_t(k - 1)]);
            }
            expect_close(kv, rv, 0, 0, "kthvalue " + what);
            // The index names an element holding that value.
            std::vector<double> idx = ki.to_vector<double>();
            for (size_t r = 0; r < ls.size(); ++r) EXPECT_EQ(ls[r][size_t(idx[r])], rv[r]) << what;
          }
          // Lower median: element (n - 1) / 2 of the sorted line.
          auto [mv, mi] = median(x, dim, keepdim);
          std::vector<double> rm;
          auto ls = lines(v, shape, dim);
          for (auto l : ls) {
            std::sort(l.begin(), l.end());
            rm.push_back(l[size_t((n - 1) / 2)]);
          }
          expect_close(mv, rm, 0, 0, "median.dim " + what);
          std::vector<double> idx = mi.to_vector<double>();
          for (size_t r = 0; r < ls.size(); ++r) EXPECT_EQ(ls[r][size_t(idx[r])], rm[r]) << what;
          std::vector<double> all = v;
          std::sort(all.begin(), all.end());
          expect_close(median(x), {all[(all.size() - 1) / 2]}, 0, 0, "median " + what);
        }
  // Even count: the lower of the two middle values.
  EXPECT_EQ(median(make({4, 1, 3, 2}, {4})).item<double>(), 2);
  // NaN propagates (PyTorch's median, unlike nanmedian) with the index of the first NaN.
  const double nan = std::nan("");
  Tensor xn = make({1, nan, 3, nan, 5, 6, 7, 8}, {2, 4});
  auto [nv, ni] = median(xn, 1);
  std::vector<double> nvv = nv.to_vector<double>();
  EXPECT_TRUE(std::isnan(nvv[0]));
  EXPECT_EQ(nvv[1], 6);
  EXPECT_EQ(ni.to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(std::isnan(median(xn).item<double>()));
  // kthvalue treats NaN as the largest.
  EXPECT_TRUE(std::isnan(std::get<0>(kthvalue(make({nan, 1, 2}, {3}), 3)).item<double>()));
  // 0-d and errors.
  EXPECT_EQ(std::get<0>(kthvalue(scalar_tensor(2.0), 1)).item<float>(), 2.0f);
  EXPECT_THROW(kthvalue(make({1, 2}, {2}), 3), kiln::Error);
  EXPECT_THROW(kthvalue(make({1, 2}, {2}), 0), kiln::Error);
  EXPECT_THROW(median(zeros({0})), kiln::Error);
  EXPECT_THROW(median(zeros({2, 0}), 1), kiln::Error);
  EXPECT_THROW(median(zeros({2, 3}), 2), kiln::Error);
}

// Reference insertion point: count of elements below v (right: at or below).
int64_t ref_insert(const std::vector<double>& seq, double v, bool right) {
  int64_t c = 0;
  for (double s : seq) c += right ? (s <= v) : (s < v);
  return c;
}

TEST(SortOps, SearchsortedAndBucketize) {
  std::vector<double> seq = {-1, 0, 0, 1.5, 3, 3, 3, 7};
  Tensor s = make(seq, {8});
  std::vector<double> v;
  Tensor vals = round(random_tensor({3, 5}, kFloat64, &v, "transposed", -3, 9));
  v = vals.to_vector<double>();
  for (bool right : {false, true})
    for (bool i32 : {false, true})
      for (DType dt : {kFloat64, kFloat32, kInt64}) {
        Tensor r = searchsorted(s.to(dt), vals.to(dt), right, i32);
        EXPECT_EQ(r.dtype(), i32 ? kInt32 : kInt64);
        EXPECT_EQ(r.sizes(), (Shape{3, 5}));
        std::vector<double> want, seq_dt = s.to(dt).to_vector<double>();  // 1.5 -> 1 for int64
        for (double e : v) want.push_back(double(ref_insert(seq_dt, e, right)));
        expect_close(r, want, 0, 0, std::string("searchsorted ") + name(dt));
        expect_close(bucketize(vals.to(dt), s.to(dt), right, i32), want, 0, 0, "bucketize");
      }
  // Batched sequence: each row searched with its own values.
  std::vector<double> bs = {0, 1, 2, 3, 10, 20, 30, 40}, bv = {1, 2.5, 50, 15, 10, -1};
  Tensor r = searchsorted(make(bs, {2, 4}), make(bv, {2, 3}), true);
  std::vector<double> want;
  for (int row = 0; row < 2; ++row)
    for (int j = 0; j < 3; ++j)
      want.push_back(double(ref_insert({bs.begin() + row * 4, bs.begin() + row * 4 + 4}, bv[size_t(row * 3 + j)], true)));
  expect_close(r, want, 0, 0, "batched searchsorted");
  // A scalar value, and empty inputs.
  EXPECT_EQ(searchsorted(s, scalar_tensor(2.0, kFloat64)).item<int64_t>(), 4);
  EXPECT_EQ(searchsorted(s, zeros({0}, kFloat64)).sizes(), (Shape{0}));
  EXPECT_EQ(searchsorted(zeros({0}, kFloat64), make({1, 2}, {2})).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  // Errors: mismatched batch dims, non-1-d boundaries, 0-d sequence.
  EXPECT_THROW(searchsorted(zeros({2, 4}), zeros({3, 3})), kiln::Error);
  EXPECT_THROW(searchsorted(zeros({2, 4}), zeros({6})), kiln::Error);
  EXPECT_THROW(bucketize(zeros({3}), zeros({2, 2})), kiln::Error);
  EXPECT_THROW(searchsorted(scalar_tensor(1.0), zeros({3})), kiln::Error);
}

TEST(SortOpsGrad, KthvalueMedian) {
  Tensor x = grad_input({4, 5});
  for (int64_t dim : {0, 1})
    for (bool keepdim : {false, true}) {
      expect_gradcheck([&](const TensorList& in) { return TensorList{std::get<0>(kthvalue(in[0], 2, dim, keepdim))}; },
                       {x}, "kthvalue");
      expect_gradcheck([&](const TensorList& in) { return TensorList{std::get<0>(median(in[0].t(), dim, keepdim))}; },
                       {x}, "median.dim transposed");
    }
  expect_gradcheck([](const TensorList& in) { return TensorList{median(in[0])}; }, {x}, "median");
  Tensor b = grad_input({1, 5});
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(median(in[0].expand({3, 5}) * in[0], 1, false))}; },
                   {b}, "median broadcast");
}

}  // namespace
