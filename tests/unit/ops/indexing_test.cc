// Indexing prims (gather, scatter family, index_select, index_put) and the advanced-indexing
// composites, against float64 loop references.
#include <cmath>
#include <limits>

#include "support/ref_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const char* kLayouts[] = {"contiguous", "transposed", "strided"};

// ------------------------------------------------------------------------------ gather
TEST(Indexing, GatherMatchesReference) {
  const Shape xs = {3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt64})
    for (const char* layout : kLayouts)
      for (int64_t dim : {0, 1, 2, -1}) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout, -5, 5);
        const int64_t d = dim < 0 ? dim + 3 : dim;
        Shape is = {2, 3, 4};
        is[size_t(d)] = 6;  // longer than the input along dim: repeats
        std::vector<int64_t> iv;
        Tensor idx = random_index(is, 0, xs[size_t(d)] - 1, &iv);
        Tensor out = gather(x, dim, idx);
        ASSERT_EQ(out.sizes(), is);
        EXPECT_EQ(out.dtype(), dt);
        std::vector<double> ref(iv.size());
        for (size_t p = 0; p < iv.size(); ++p) {
          auto c = unravel(int64_t(p), is);
          c[size_t(d)] = iv[p];
          ref[p] = xv[size_t(ravel(c, xs))];
        }
        expect_close(out, ref, 0, 0, std::string("gather ") + layout);
      }
}

TEST(Indexing, GatherEdgeCases) {
  // 0-d input and index; empty index.
  Tensor s = scalar_tensor(3.5, kFloat64);
  Tensor g0 = gather(s, 0, scalar_tensor(int64_t(0), kInt64));
  EXPECT_EQ(g0.dim(), 0);
  EXPECT_EQ(g0.item<double>(), 3.5);
  Tensor x = random_tensor({3, 4}, kFloat32);
  EXPECT_EQ(gather(x, 1, zeros({3, 0}, kInt64)).sizes(), (Shape{3, 0}));
  // Transposed index.
  std::vector<double> xv;
  x = random_tensor({4, 4}, kFloat64, &xv);
  std::vector<int64_t> iv;
  Tensor idx = random_index({4, 4}, 0, 3, &iv).transpose(0, 1);
  Tensor out = gather(x, 0, idx);
  std::vector<double> ref(16);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j) ref[size_t(i * 4 + j)] = xv[size_t(iv[size_t(j * 4 + i)] * 4 + j)];
  expect_close(out, ref, 0, 0, "gather transposed index");
}

TEST(Indexing, GatherErrors) {
  Tensor x = random_tensor({3, 4}, kFloat32);
  EXPECT_THROW(gather(x, 0, tensor<int64_t>({3}, {1, 1})), Error);       // out of range
  EXPECT_THROW(gather(x, 0, tensor<int64_t>({-1}, {1, 1})), Error);      // negative
  EXPECT_THROW(gather(x, 0, tensor<int32_t>({0}, {1, 1})), Error);       // int32 index
  EXPECT_THROW(gather(x, 0, tensor<int64_t>({0}, {1})), Error);          // rank mismatch
  EXPECT_THROW(gather(x, 0, zeros({1, 5}, kInt64)), Error);              // too big in a non-dim dim
  EXPECT_THROW(gather(x, 2, zeros({1, 1}, kInt64)), Error);              // bad dim
}

TEST(Indexing, GatherGradcheck) {
  Tensor x = grad_input({4, 5});
  Tensor idx = random_index({6, 3}, 0, 3);  // duplicates: gradients accumulate
  expect_gradcheck([&](const TensorList& in) { return TensorList{gather(in[0], 0, idx)}; }, {x}, "gather dim 0");
  Tensor idx2 = random_index({3, 5}, 0, 3);
  expect_gradcheck([&](const TensorList& in) { return TensorList{gather(in[0].transpose(0, 1), 1, idx2)}; }, {x},
                   "gather transposed");
}

// ------------------------------------------------------------------------------ scatter family
// Reference scatter_reduce over float64 values.
std::vector<double> scatter_ref(const std::vector<double>& self, const Shape& xs, int64_t d,
                                const std::vector<int64_t>& iv, const Shape& is, const std::vector<double>& src,
                                const Shape& ss, const std::string& reduce, bool include_self, bool integral) {
  std::vector<double> out = self;
  std::vector<int64_t> cnt(self.size(), include_self ? 1 : 0);
  std::vector<bool> touched(self.size(), false);
  for (size_t p = 0; p < iv.size(); ++p) {
    auto c = unravel(int64_t(p), is);
    const double v = src[size_t(ravel(c, ss))];
    c[size_t(d)] = iv[p];
    const size_t o = size_t(ravel(c, xs));
    if (!touched[o] && !include_self) {
      out[o] = reduce == "prod" ? 1 : reduce == "amax" ? -INFINITY : reduce == "amin" ? INFINITY : 0;
    }
    touched[o] = true;
    ++cnt[o];
    if (reduce == "assign") out[o] = v;
    else if (reduce == "sum" || reduce == "mean") out[o] += v;
    else if (reduce == "prod") out[o] *= v;
    else if (reduce == "amax") out[o] = std::max(out[o], v);
    else out[o] = std::min(out[o], v);
  }
  if (reduce == "mean")
    for (size_t o = 0; o < out.size(); ++o)
      if (cnt[o] > 0) out[o] = integral ? std::floor(out[o] / double(cnt[o])) : out[o] / double(cnt[o]);
  return out;
}

TEST(Indexing, ScatterFamilyMatchesReference) {
  const Shape xs = {4, 5, 3};
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt64})
    for (int64_t dim : {0, 1, -1})
      for (const std::string reduce : {"assign", "add", "sum", "prod", "mean", "amax", "amin"})
        for (bool incl : {true, false}) {
          if ((reduce == "assign" || reduce == "add") && !incl) continue;
          const int64_t d = dim < 0 ? dim + 3 : dim;
          const char* layout = kLayouts[size_t(d)];
          std::vector<double> xv, sv;
          Tensor x = random_tensor(xs, dt, &xv, layout, -3, 3);
          Shape ss = {4, 5, 3};
          ss[size_t(d)] = 7;
          Tensor src = random_tensor(ss, dt, &sv, "contiguous", -3, 3);
          Shape is = {3, 4, 2};
          is[size_t(d)] = 6;  // many duplicates
          std::vector<int64_t> iv;
          Tensor idx = random_index(is, 0, xs[size_t(d)] - 1, &iv);
          Tensor out = reduce == "assign" ? scatter(x, dim, idx, src)
                       : reduce == "add"  ? scatter_add(x, dim, idx, src)
                                          : scatter_reduce(x, dim, idx, src, reduce, incl);
          ASSERT_EQ(out.sizes(), xs);
          std::string what = "scatter " + reduce + (incl ? " incl" : " excl") + " dim " + std::to_string(dim) + " " +
                             name(dt);
          std::vector<double> ref = scatter_ref(xv, xs, d, iv, is, sv, ss, reduce == "add" ? "sum" : reduce, incl,
                                                !is_floating(dt));
          if (reduce == "assign") {
            // Duplicates: any of the written values is acceptable; check only unique targets.
            std::vector<int> hits(xv.size(), 0);
            for (size_t p = 0; p < iv.size(); ++p) {
              auto c = unravel(int64_t(p), is);
              c[size_t(d)] = iv[p];
              ++hits[size_t(ravel(c, xs))];
            }
            std::vector<double> got = out.to_vector<double>();
            for (size_t o = 0; o < got.size(); ++o)
              if (hits[o] <= 1) {
                EXPECT_EQ(got[o], ref[o]) << what << " element " << o;
              }
            continue;
          }
          // 16-bit floats accumulate with a rounding per step.
          const double tol = dt == kBFloat16 ? 0.06 : tolerance(dt) * 10;
          expect_close(out, ref, tol, tol * 4, what);
        }
}

TEST(Indexing, ScatterEdgeCases) {
  // Empty index leaves self unchanged; 0-d tensors.
  std::vector<double> xv;
  Tensor x = random_tensor({3, 4}, kFloat32, &xv);
  expect_close(scatter_add(x, 0, zeros({0, 4}, kInt64), zeros({0, 4})), xv, 0, 0, "empty index");
  Tensor s = scalar_tensor(1.0, kFloat64);
  EXPECT_EQ(scatter_add(s, 0, scalar_tensor(int64_t(0), kInt64), scalar_tensor(2.0, kFloat64)).item<double>(), 3.0);
  // NaN propagates through amax.
  Tensor nan_src = tensor<double>({std::nan(""), 1.0});
  Tensor r = scatter_reduce(zeros({2}, kFloat64), 0, tensor<int64_t>({0, 0}), nan_src, "amax");
  EXPECT_TRUE(std::isnan(r.to_vector<double>()[0]));
}

TEST(Indexing, ScatterErrors) {
  Tensor x = zeros({3, 4});
  Tensor src = ones({3, 4});
  EXPECT_THROW(scatter(x, 0, tensor<int64_t>({3}, {1, 1}), src), Error);
  EXPECT_THROW(scatter_add(x, 1, tensor<int64_t>({-5}, {1, 1}), src), Error);
  EXPECT_THROW(scatter_add(x, 0, zeros({4, 4}, kInt64), src), Error);                   // index larger than src
  EXPECT_THROW(scatter_add(x, 0, zeros({1, 1}, kInt64), ones({3, 4}, kFloat64)), Error); // dtype mismatch
  EXPECT_THROW(scatter_reduce(x, 0, zeros({1, 1}, kInt64), src, "max"), Error);         // unknown reduce
  EXPECT_THROW(scatter(x, 0, zeros({1, 1}, kInt32), src), Error);
}

TEST(Indexing, ScatterGradchecks) {
  // Index with duplicates and shorter than src (unused src entries get zero gradient).
  Tensor idx = tensor<int64_t>({0, 2, 0, 1, 2, 2, 1, 0}, {2, 4});
  auto x = grad_input({3, 5});
  auto src = grad_input({3, 4});
  expect_gradcheck([&](const TensorList& in) { return TensorList{scatter_add(in[0], 0, idx, in[1])}; }, {x, src},
                   "scatter_add");
  // scatter: only unique targets (duplicates make it non-differentiable in the src).
  Tensor uidx = tensor<int64_t>({2, 0, 1, 1, 2, 0}, {2, 3});
  expect_gradcheck([&](const TensorList& in) { return TensorList{scatter(in[0], 0, uidx, in[1])}; }, {x, src},
                   "scatter");
  auto xt = grad_input({5, 3});
  expect_gradcheck(
      [&](const TensorList& in) { return TensorList{scatter_add(in[0].transpose(0, 1), 1, idx, in[1])}; }, {xt, src},
      "scatter_add transposed");
  for (const std::string reduce : {"sum", "prod", "mean", "amax", "amin"})
    for (bool incl : {true, false}) {
      // Values well apart so amax/amin are not near ties under the finite-difference step.
      Tensor sx = tensor<double>({0.5, -1.5, 2.5, 1.2, -0.7, 3.1, -2.2, 0.9, 1.7, -0.3, 2.2, -1.1, 0.4, 1.4, -2.6},
                                 {3, 5});
      Tensor ss = tensor<double>({1.1, -0.6, 2.8, -1.9, 0.3, 1.6, -2.4, 0.8, 2.1, -0.2, 1.3, -1.3}, {3, 4});
      sx.requires_grad_();
      ss.requires_grad_();
      expect_gradcheck(
          [&](const TensorList& in) { return TensorList{scatter_reduce(in[0], 0, idx, in[1], reduce, incl)}; },
          {sx, ss}, "scatter_reduce " + reduce + (incl ? " incl" : " excl"));
    }
  // prod with zeros: a single zero in a group and two zeros in a group.
  Tensor zx = tensor<double>({1.5, 0.0, 2.0, -1.0}, {4});
  Tensor zs = tensor<double>({0.0, 3.0, 0.0, 0.0, 2.0}, {5});
  Tensor zi = tensor<int64_t>({0, 0, 1, 1, 2});
  zx.requires_grad_();
  zs.requires_grad_();
  for (bool incl : {true, false})
    expect_gradcheck([&](const TensorList& in) { return TensorList{scatter_reduce(in[0], 0, zi, in[1], "prod", incl)}; },
                     {zx, zs}, std::string("scatter_reduce prod zeros") + (incl ? " incl" : " excl"));
}

// ------------------------------------------------------------------------------ index_select
TEST(Indexing, IndexSelectMatchesReference) {
  const Shape xs = {4, 3, 5};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt32, kBool})
    for (const char* layout : kLayouts)
      for (int64_t dim : {0, 1, 2, -2})
        for (DType idt : {kInt64, kInt32}) {
          std::vector<double> xv;
          Tensor x = random_tensor(xs, dt, &xv, layout, -4, 4);
          const int64_t d = dim < 0 ? dim + 3 : dim;
          std::vector<int64_t> iv;
          Tensor idx = random_index({7}, 0, xs[size_t(d)] - 1, &iv, idt);
          Tensor out = index_select(x, dim, idx);
          Shape os = xs;
          os[size_t(d)] = 7;
          ASSERT_EQ(out.sizes(), os);
          std::vector<double> ref(size_t(numel(os)));
          for (size_t p = 0; p < ref.size(); ++p) {
            auto c = unravel(int64_t(p), os);
            c[size_t(d)] = iv[size_t(c[size_t(d)])];
            ref[p] = xv[size_t(ravel(c, xs))];
          }
          expect_close(out, ref, 0, 0, std::string("index_select ") + layout);
        }
  // 0-d index, empty index, 0-d input, strided index.
  std::vector<double> xv;
  Tensor x = random_tensor({3, 2}, kFloat64, &xv);
  Tensor s0 = index_select(x, 0, scalar_tensor(int64_t(2), kInt64));
  EXPECT_EQ(s0.sizes(), (Shape{1, 2}));  // as PyTorch: the dim stays, with size 1
  expect_close(s0, {xv[4], xv[5]}, 0, 0, "0-d index");
  EXPECT_EQ(index_select(x, 1, zeros({0}, kInt64)).sizes(), (Shape{3, 0}));
  EXPECT_EQ(index_select(scalar_tensor(2.0), 0, tensor<int64_t>({0})).item<float>(), 2.0f);
  Tensor sidx = tensor<int64_t>({1, 9, 0, 9, 1, 9}).slice(0, 0, std::nullopt, 2);
  expect_close(index_select(x, 1, sidx), {xv[1], xv[0], xv[1], xv[3], xv[2], xv[3], xv[5], xv[4], xv[5]}, 0, 0,
               "strided index");
}

TEST(Indexing, IndexSelectErrorsAndGrad) {
  Tensor x = random_tensor({3, 4}, kFloat32);
  EXPECT_THROW(index_select(x, 0, tensor<int64_t>({3})), Error);
  EXPECT_THROW(index_select(x, 0, tensor<int64_t>({-1})), Error);
  EXPECT_THROW(index_select(x, 0, tensor<int64_t>({0, 1}, {1, 2})), Error);
  EXPECT_THROW(index_select(x, 0, tensor<float>({0})), Error);
  EXPECT_THROW(index_select(x, 2, tensor<int64_t>({0})), Error);
  Tensor g = grad_input({4, 5});
  Tensor idx = tensor<int64_t>({3, 0, 3, 3, 1});
  expect_gradcheck([&](const TensorList& in) { return TensorList{index_select(in[0], 1, idx)}; }, {g},
                   "index_select dups");
  expect_gradcheck([&](const TensorList& in) { return TensorList{index_select(in[0].transpose(0, 1), 0, idx)}; },
                   {g}, "index_select transposed");
}

// ------------------------------------------------------------------------------ index_put / index
// Reference for x[i0, :, i2]-style indexing: a list of (dim, values) int indices, all of the
// same broadcast shape bs (given already broadcast, row-major).
struct AdvIndex {
  Shape xs;
  std::vector<int> dims;                      // indexed dims
  std::vector<std::vector<int64_t>> values;   // per indexed dim, over bs
  Shape bs;
  // The result shape and, per result element, the source element (linear into xs).
  Shape result_shape() const {
    bool adj = dims.back() - dims.front() + 1 == int(dims.size());
    Shape r;
    if (adj) {
      for (int d = 0; d < dims.front(); ++d) r.push_back(xs[size_t(d)]);
      r.insert(r.end(), bs.begin(), bs.end());
      for (size_t d = size_t(dims.back()) + 1; d < xs.size(); ++d) r.push_back(xs[d]);
    } else {
      r = bs;
      for (size_t d = 0; d < xs.size(); ++d)
        if (std::find(dims.begin(), dims.end(), int(d)) == dims.end()) r.push_back(xs[d]);
    }
    return r;
  }
  std::vector<int64_t> sources() const {
    Shape rs = result_shape();
    bool adj = dims.back() - dims.front() + 1 == int(dims.size());
    const size_t nb = bs.size();
    std::vector<int64_t> out;
    for (int64_t p = 0; p < numel(rs); ++p) {
      auto c = unravel(p, rs);
      std::vector<int64_t> bc, rest;
      size_t b0 = adj ? size_t(dims.front()) : 0;
      for (size_t i = 0; i < c.size(); ++i) (i >= b0 && i < b0 + nb ? bc : rest).push_back(c[i]);
      const int64_t b = ravel(bc, bs);
      std::vector<int64_t> xc(xs.size());
      size_t ri = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        auto it = std::find(dims.begin(), dims.end(), int(d));
        if (it == dims.end()) {
          xc[d] = rest[ri++];
        } else {
          int64_t v = values[size_t(it - dims.begin())][size_t(b)];
          xc[d] = v < 0 ? v + xs[d] : v;
        }
      }
      out.push_back(ravel(xc, xs));
    }
    return out;
  }
};

TEST(Indexing, IndexAndIndexPutMatchReference) {
  const Shape xs = {4, 5, 6};
  struct Case {
    std::vector<int> dims;
    std::vector<Shape> ishapes;  // per index; broadcast to bs
    Shape bs;
  };
  std::vector<Case> cases = {
      {{0}, {{3}}, {3}},
      {{1}, {{2, 3}}, {2, 3}},
      {{2}, {{7}}, {7}},
      {{0, 1}, {{3, 1}, {1, 4}}, {3, 4}},   // adjacent, broadcast
      {{1, 2}, {{5}, {5}}, {5}},
      {{0, 2}, {{2, 1}, {3}}, {2, 3}},      // non-adjacent: broadcast dims go first
      {{0, 1, 2}, {{4}, {1}, {4}}, {4}},
  };
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt64})
    for (const auto& cs : cases)
      for (const char* layout : {"contiguous", "transposed"}) {
        std::vector<double> xv;
        Tensor x = random_tensor(xs, dt, &xv, layout, -5, 5);
        AdvIndex ai{xs, cs.dims, {}, cs.bs};
        TensorList idx(size_t(cs.dims.back() + 1));
        for (size_t k = 0; k < cs.dims.size(); ++k) {
          const int64_t n = xs[size_t(cs.dims[k])];
          std::vector<int64_t> v;
          Tensor t = random_index(cs.ishapes[k], -n, n - 1, &v);  // negatives wrap
          idx[size_t(cs.dims[k])] = t;
          ai.values.push_back(expand(t, cs.bs).to_vector<int64_t>());
        }
        const std::string what = std::string("case dims ") + std::to_string(cs.dims.size()) + "/" +
                                 std::to_string(cs.dims.front()) + " " + layout + " " + name(dt);
        // index
        Tensor got = index(x, idx);
        ASSERT_EQ(got.sizes(), ai.result_shape()) << what;
        std::vector<int64_t> srcs = ai.sources();
        std::vector<double> ref;
        for (int64_t s : srcs) ref.push_back(xv[size_t(s)]);
        expect_close(got, ref, 0, 0, "index " + what);
        // index_put with values of the full result shape, accumulate and not.
        std::vector<double> vv;
        Tensor vals = random_tensor(ai.result_shape(), dt, &vv, "contiguous", -5, 5);
        for (bool acc : {false, true}) {
          Tensor out = index_put(x, idx, vals, acc);
          std::vector<double> r = xv;
          std::vector<int> hits(xv.size(), 0);
          for (size_t p = 0; p < srcs.size(); ++p) {
            r[size_t(srcs[p])] = acc ? r[size_t(srcs[p])] + vv[p] : vv[p];
            ++hits[size_t(srcs[p])];
          }
          std::vector<double> o = out.to_vector<double>();
          const double tol = dt == kBFloat16 ? 0.1 : 1e-5;
          for (size_t i = 0; i < r.size(); ++i)
            if (acc || hits[i] <= 1) {
              EXPECT_NEAR(o[i], r[i], tol * (1 + std::abs(r[i]))) << what << " acc " << acc;
            }
        }
      }
}

TEST(Indexing, IndexPutBroadcastMasksAndDuplicates) {
  // Accumulate sums duplicates exactly.
  Tensor x = zeros({5}, kFloat64);
  Tensor out = index_put(x, {tensor<int64_t>({1, 3, 1, 1, -1})}, tensor<double>({1, 2, 3, 4, 5}), true);
  expect_close(out, {0, 8, 0, 2, 5}, 0, 0, "accumulate duplicates");
  // Values broadcast: a scalar and a row.
  std::vector<double> xv;
  x = random_tensor({3, 4}, kFloat64, &xv);
  out = index_put(x, {tensor<int64_t>({2, 0})}, tensor<double>({1, 2, 3, 4}));
  std::vector<double> ref = xv;
  for (int j = 0; j < 4; ++j) ref[size_t(8 + j)] = ref[size_t(j)] = j + 1;
  expect_close(out, ref, 0, 0, "row broadcast");
  out = index_put(x, {Tensor(), tensor<int64_t>({1})}, scalar_tensor(9.0, kFloat64));
  ref = xv;
  for (int i = 0; i < 3; ++i) ref[size_t(i * 4 + 1)] = 9;
  expect_close(out, ref, 0, 0, "None then index, scalar value");
  // Bool mask (via nonzero) and the self input is not modified.
  Tensor mask = gt(x, scalar_tensor(0.0, kFloat64));
  out = index_put(x, {mask}, scalar_tensor(0.0, kFloat64));
  ref = xv;
  for (double& v : ref) v = v > 0 ? 0 : v;
  expect_close(out, ref, 0, 0, "bool mask");
  expect_close(x, xv, 0, 0, "input unchanged");
  Tensor sel = index(x, {mask});
  std::vector<double> pos;
  for (double v : xv)
    if (v > 0) pos.push_back(v);
  expect_close(sel, pos, 0, 0, "index with a mask");
  // Row mask then an int index.
  Tensor rows = tensor<bool>(std::vector<bool>{true, false, true});
  sel = index(x, {rows, tensor<int64_t>({3, 0})});
  expect_close(sel, {xv[3], xv[8]}, 0, 0, "mask + index");
  // No indices: whole tensor.
  out = index_put(x, {}, scalar_tensor(1.0, kFloat64));
  expect_close(out, std::vector<double>(12, 1.0), 0, 0, "no indices");
  // Empty index.
  EXPECT_EQ(index(x, {zeros({0}, kInt64)}).sizes(), (Shape{0, 4}));
  expect_close(index_put(x, {zeros({0}, kInt64)}, scalar_tensor(1.0, kFloat64)), xv, 0, 0, "empty index_put");
}

TEST(Indexing, IndexPutErrors) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW(index_put(x, {tensor<int64_t>({3})}, scalar_tensor(1.0f, kFloat32)), Error);
  EXPECT_THROW(index_put(x, {tensor<int64_t>({-4})}, scalar_tensor(1.0f, kFloat32)), Error);
  EXPECT_THROW(index_put(x, {tensor<int64_t>({0, 1}), tensor<int64_t>({0, 1, 2})}, scalar_tensor(1.0f, kFloat32)),
               Error);  // index shapes do not broadcast
  EXPECT_THROW(index_put(x, {tensor<int64_t>({0})}, ones({3})), Error);  // values shape
  EXPECT_THROW(index_put(x, {tensor<int64_t>({0})}, ones({4}, kFloat64)), Error);  // values dtype
  EXPECT_THROW(index_put(x, {tensor<float>({0})}, ones({4})), Error);  // float index
  EXPECT_THROW(index_put(x, {Tensor(), Tensor(), tensor<int64_t>({0})}, ones({})), Error);  // too many
  EXPECT_THROW(index_put(x, {tensor<bool>(std::vector<bool>{true, false})}, ones({})), Error);  // mask shape
  EXPECT_THROW(index(x, {tensor<int64_t>({5})}), Error);
  EXPECT_THROW(index(x, {Tensor(), tensor<int64_t>({-5})}), Error);
}

TEST(Indexing, IndexPutAndIndexGradchecks) {
  Tensor idx = tensor<int64_t>({1, 3, 1, -1});
  Tensor x = grad_input({4, 3});
  Tensor v = grad_input({4, 3});
  expect_gradcheck([&](const TensorList& in) { return TensorList{index_put(in[0], {idx}, in[1], true)}; }, {x, v},
                   "index_put accumulate dups");
  Tensor uidx = tensor<int64_t>({2, 0});
  Tensor v2 = grad_input({2, 3});
  expect_gradcheck([&](const TensorList& in) { return TensorList{index_put(in[0], {uidx}, in[1], false)}; }, {x, v2},
                   "index_put");
  Tensor vb = grad_input({3});  // broadcast values
  expect_gradcheck([&](const TensorList& in) { return TensorList{index_put(in[0], {idx}, in[1], true)}; }, {x, vb},
                   "index_put broadcast values");
  Tensor xt = grad_input({3, 4});
  expect_gradcheck(
      [&](const TensorList& in) {
        return TensorList{index_put(in[0].transpose(0, 1), {Tensor(), tensor<int64_t>({2, 2})}, in[1], true)};
      },
      {xt, grad_input({4, 2})}, "index_put transposed");
  Tensor x3 = grad_input({3, 4, 5});
  TensorList ii = {tensor<int64_t>({0, 2, 2}), Tensor(), tensor<int64_t>({4, -1, 1})};
  expect_gradcheck([&](const TensorList& in) { return TensorList{index(in[0], ii)}; }, {x3}, "index non-adjacent");
  expect_gradcheck([&](const TensorList& in) { return TensorList{index(in[0], {Tensor(), tensor<int64_t>({3, 3})})}; },
                   {x3}, "index adjacent dups");
}

// ------------------------------------------------------------------------------ composites
TEST(Indexing, IndexAddMatchesReference) {
  const Shape xs = {4, 3, 5};
  for (DType dt : {kFloat32, kFloat64, kInt64})
    for (int64_t dim : {0, 1, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<double> xv, sv;
      Tensor x = random_tensor(xs, dt, &xv, kLayouts[size_t(d)]);
      std::vector<int64_t> iv;
      Tensor idx = random_index({6}, 0, xs[size_t(d)] - 1, &iv);  // duplicates accumulate
      Shape ss = xs;
      ss[size_t(d)] = 6;
      Tensor src = random_tensor(ss, dt, &sv, "transposed");
      const double alpha = dt == kInt64 ? 2 : 0.5;
      Tensor out = index_add(x, dim, idx, src, alpha);
      std::vector<double> ref = xv;
      for (int64_t p = 0; p < numel(ss); ++p) {
        auto c = unravel(p, ss);
        c[size_t(d)] = iv[size_t(c[size_t(d)])];
        ref[size_t(ravel(c, xs))] += alpha * sv[size_t(p)];
      }
      expect_close(out, ref, tolerance(dt) * 10, tolerance(dt) * 10, std::string("index_add ") + name(dt));
    }
  Tensor x = zeros({3, 2});
  EXPECT_THROW(index_add(x, 0, tensor<int64_t>({3}), ones({1, 2})), Error);
  EXPECT_THROW(index_add(x, 0, tensor<int64_t>({-1}), ones({1, 2})), Error);
  EXPECT_THROW(index_add(x, 0, tensor<int64_t>({0, 1}), ones({1, 2})), Error);  // source shape
  EXPECT_THROW(index_add(x, 0, tensor<int64_t>({0}), ones({1, 2}, kFloat64)), Error);  // dtype
  Tensor g = grad_input({4, 3}), s = grad_input({3, 5});
  Tensor idx = tensor<int64_t>({1, 1, 0, 2, 1});
  expect_gradcheck([&](const TensorList& in) { return TensorList{index_add(in[0].transpose(0, 1), 1, idx, in[1], 1.5)}; },
                   {g, s}, "index_add");
}

TEST(Indexing, MaskedSelectMatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kInt32})
    for (const char* layout : kLayouts) {
      std::vector<double> xv, mv;
      Tensor x = random_tensor({3, 4}, dt, &xv, layout);
      Tensor m = random_tensor({4}, kBool, &mv);  // broadcast over rows
      std::vector<double> ref;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
          if (mv[size_t(j)] != 0) ref.push_back(xv[size_t(i * 4 + j)]);
      Tensor out = masked_select(x, m);
      EXPECT_EQ(out.dim(), 1);
      expect_close(out, ref, 0, 0, std::string("masked_select ") + layout);
      // The mask can broadcast the input too.
      Tensor row = random_tensor({1, 4}, dt, &xv);
      Tensor mm = random_tensor({3, 4}, kBool, &mv, "transposed");
      ref.clear();
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
          if (mv[size_t(i * 4 + j)] != 0) ref.push_back(xv[size_t(j)]);
      expect_close(masked_select(row, mm), ref, 0, 0, "masked_select broadcast input");
    }
  EXPECT_EQ(masked_select(scalar_tensor(2.0), scalar_tensor(true)).sizes(), (Shape{1}));
  EXPECT_THROW(masked_select(zeros({3}), ones({3})), Error);
  EXPECT_THROW(masked_select(zeros({3}), zeros({2}, kBool)), Error);
  Tensor g = grad_input({3, 4});
  Tensor mask = gt(random_tensor({3, 4}, kFloat64), scalar_tensor(0.0, kFloat64));
  expect_gradcheck([&](const TensorList& in) { return TensorList{masked_select(in[0].transpose(0, 1), mask.transpose(0, 1))}; },
                   {g}, "masked_select");
}

TEST(Indexing, TakeAlongDim) {
  std::vector<double> xv;
  const Shape xs = {3, 4};
  Tensor x = random_tensor(xs, kFloat64, &xv, "transposed");
  // No dim: indices into the flattened input.
  std::vector<int64_t> iv;
  Tensor idx = random_index({2, 3}, 0, 11, &iv);
  Tensor out = take_along_dim(x, idx);
  std::vector<double> ref;
  for (int64_t i : iv) ref.push_back(xv[size_t(i)]);
  EXPECT_EQ(out.sizes(), (Shape{6}));
  expect_close(out, ref, 0, 0, "take_along_dim flat");
  // With dim, indices broadcasting against the input's other dims.
  Tensor ib = random_index({1, 5}, 0, 3, &iv);
  out = take_along_dim(x, ib, 1);
  ASSERT_EQ(out.sizes(), (Shape{3, 5}));
  ref.clear();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) ref.push_back(xv[size_t(i * 4 + iv[size_t(j)])]);
  expect_close(out, ref, 0, 0, "take_along_dim broadcast");
  Tensor ic = random_index({2, 1}, 0, 2, &iv);
  out = take_along_dim(x, ic, -2);
  ASSERT_EQ(out.sizes(), (Shape{2, 4}));
  ref.clear();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) ref.push_back(xv[size_t(iv[size_t(i)] * 4 + j)]);
  expect_close(out, ref, 0, 0, "take_along_dim dim -2");
  EXPECT_THROW(take_along_dim(x, tensor<int64_t>({0}), 0), Error);      // rank mismatch
  EXPECT_THROW(take_along_dim(x, zeros({1, 1}, kInt32), 0), Error);     // dtype
  EXPECT_THROW(take_along_dim(x, tensor<int64_t>({4}, {1, 1}), 1), Error);
  Tensor g = grad_input({3, 4});
  Tensor gi = tensor<int64_t>({0, 3, 3, 1, 2, 0}, {3, 2});
  expect_gradcheck([&](const TensorList& in) { return TensorList{take_along_dim(in[0], gi, 1)}; }, {g}, "take_along_dim");
}

TEST(Indexing, AdvancedIndexingMore) {
  // A mask over leading dims followed by a full slice; int32 indices; 0-d index tensors.
  std::vector<double> xv;
  Tensor x = random_tensor({2, 3, 4}, kFloat32, &xv, "strided");
  Tensor m = tensor<bool>(std::vector<bool>{true, false, true, false, false, true}, {2, 3});
  Tensor out = index(x, {m});
  ASSERT_EQ(out.sizes(), (Shape{3, 4}));
  std::vector<double> ref;
  for (int64_t r : {0, 2, 5})
    for (int64_t j = 0; j < 4; ++j) ref.push_back(xv[size_t(r * 4 + j)]);
  expect_close(out, ref, 0, 0, "2-d mask");
  out = index(x, {Tensor(), tensor<int32_t>({2, 0})});
  ASSERT_EQ(out.sizes(), (Shape{2, 2, 4}));
  ref.clear();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t r : {2, 0})
      for (int64_t j = 0; j < 4; ++j) ref.push_back(xv[size_t(i * 12 + r * 4 + j)]);
  expect_close(out, ref, 0, 0, "int32 index");
  out = index(x, {scalar_tensor(int64_t(1), kInt64), Tensor(), scalar_tensor(int64_t(-1), kInt64)});
  ASSERT_EQ(out.sizes(), (Shape{3}));
  expect_close(out, {xv[15], xv[19], xv[23]}, 0, 0, "0-d indices, non-adjacent");
  Tensor g = grad_input({2, 3, 4});
  expect_gradcheck([&](const TensorList& in) { return TensorList{index(in[0], {m})}; }, {g}, "index mask");
}

// Sizes above the kernels' parallel threshold: the threaded paths must keep duplicate
// reductions exact.
TEST(Indexing, LargeParallelPaths) {
  const Shape xs = {50, 400};
  std::vector<double> xv, sv;
  Tensor x = random_tensor(xs, kFloat64, &xv);
  for (int64_t d : {0, 1}) {
    Shape is = d == 0 ? Shape{120, 400} : Shape{50, 900};
    std::vector<int64_t> iv;
    Tensor idx = random_index(is, 0, xs[size_t(d)] - 1, &iv);
    Tensor src = random_tensor(is, kFloat64, &sv);
    std::vector<double> ref = scatter_ref(xv, xs, d, iv, is, sv, is, "sum", true, false);
    expect_close(scatter_add(x, d, idx, src), ref, 1e-12, 1e-12, "large scatter_add");
    ref = scatter_ref(xv, xs, d, iv, is, sv, is, "amax", false, false);
    expect_close(scatter_reduce(x, d, idx, src, "amax", false), ref, 0, 0, "large scatter_reduce amax");
    Tensor g = gather(x, d, idx);
    std::vector<double> gref(iv.size());
    for (size_t p = 0; p < iv.size(); ++p) {
      auto c = unravel(int64_t(p), is);
      c[size_t(d)] = iv[p];
      gref[p] = xv[size_t(ravel(c, xs))];
    }
    expect_close(g, gref, 0, 0, "large gather");
  }
  // index_put accumulate: many duplicate rows, long rows split across threads.
  std::vector<int64_t> rv;
  Tensor rows = random_index({300}, 0, 49, &rv);
  Tensor vals = random_tensor({300, 400}, kFloat64, &sv);
  std::vector<double> ref = xv;
  for (size_t i = 0; i < rv.size(); ++i)
    for (size_t j = 0; j < 400; ++j) ref[size_t(rv[i]) * 400 + j] += sv[i * 400 + j];
  expect_close(index_put(x, {rows}, vals, true), ref, 1e-12, 1e-12, "large index_put accumulate");
  EXPECT_THROW(gather(x, 1, random_index({50, 900}, 0, 400)), Error);  // one bad index among many
}

}  // namespace
