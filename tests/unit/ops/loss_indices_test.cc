// nll_loss, cross_entropy, embedding and embedding_bag: values against float64 loops written
// here (weights, ignore_index, label smoothing, reductions, K-dim inputs, probability targets),
// error cases and gradchecks. Also the fast cross_entropy kernel against its decomposition.
#include <kiln/kiln.h>

#include <cmath>

#include "ops/dispatch.h"
#include "support/ref_util.h"
#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Tensor as1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }
double tol_of(DType dt) { return dt == kFloat64 ? 1e-11 : dt == kFloat32 ? 2e-5 : 3e-2; }

// A classification problem viewed as rows: input (N, C, R...) flattened; element (n, c, r) at
// (n * C + c) * R + r. Row i = n * R + r.
struct Cls {
  int64_t N, C, R;
  double x(const std::vector<double>& v, int64_t row, int64_t c) const {
    return v[size_t((row / R * C + c) * R + row % R)];
  }
  std::vector<double> log_softmax_row(const std::vector<double>& v, int64_t row) const {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, x(v, row, c));
    for (int64_t c = 0; c < C; ++c) s += std::exp(x(v, row, c) - m);
    std::vector<double> lp(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) lp[size_t(c)] = x(v, row, c) - m - std::log(s);
    return lp;
  }
};

// Per-row losses and the weight of each row's target (0 where ignored), class-index targets.
// `log_probs` = false applies log_softmax first (cross_entropy); eps = label smoothing.
std::vector<double> ref_class_loss(const Cls& p, const std::vector<double>& xv, const std::vector<int64_t>& t,
                                   const std::vector<double>& w, int64_t ignore, bool log_probs, double eps,
                                   const std::string& reduction) {
  std::vector<double> loss(size_t(p.N * p.R));
  double lsum = 0, wsum = 0;
  for (int64_t i = 0; i < p.N * p.R; ++i) {
    if (t[size_t(i)] == ignore) continue;
    std::vector<double> lp(size_t(p.C));
    if (log_probs) for (int64_t c = 0; c < p.C; ++c) lp[size_t(c)] = p.x(xv, i, c);
    else lp = p.log_softmax_row(xv, i);
    auto wc = [&](int64_t c) { return w.empty() ? 1.0 : w[size_t(c)]; };
    const int64_t y = t[size_t(i)];
    double l = -(1 - eps) * wc(y) * lp[size_t(y)];
    for (int64_t c = 0; c < p.C; ++c) l -= eps / double(p.C) * wc(c) * lp[size_t(c)];
    loss[size_t(i)] = l;
    lsum += l;
    wsum += wc(y);
  }
  if (reduction == "none") return loss;
  if (reduction == "sum") return {lsum};
  return {lsum / wsum};  // 0 / 0 = nan when every target is ignored, as PyTorch
}

// Random class targets in [0, C) with about a quarter set to `ignore`.
Tensor class_targets(const Shape& shape, int64_t C, int64_t ignore, std::vector<int64_t>* tv) {
  random_index(shape, 0, C - 1, tv);
  for (size_t i = 0; i < tv->size(); i += 4) (*tv)[i] = ignore;
  return tensor(*tv, shape, kInt64);
}

}  // namespace

TEST(NllLoss, MatchesReference) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const char* r : {"none", "sum", "mean"})
      for (bool weighted : {false, true}) {
        const Cls p{6, 5, 1};
        std::vector<double> xv, wv;
        std::vector<int64_t> tv;
        Tensor x = random_tensor({6, 5}, dt, &xv, "transposed", -3, 0);
        Tensor t = class_targets({6}, 5, 2, &tv);  // ignore_index = 2, a valid class
        Tensor w = weighted ? random_tensor({5}, dt, &wv, "contiguous", 0.5, 2) : Tensor();
        Tensor y = nll_loss(x, t, w, r, 2);
        EXPECT_EQ(y.dtype(), dt);
        const std::string what = std::string("nll ") + name(dt) + " " + r + (weighted ? " weighted" : "");
        expect_close(y, ref_class_loss(p, xv, tv, wv, 2, true, 0, r), tol_of(dt), tol_of(dt), what);
      }
}

TEST(NllLoss, KDimAllIgnoredAndUnbatched) {
  const Cls p{2, 3, 4};
  std::vector<double> xv;
  std::vector<int64_t> tv;
  Tensor x = random_tensor({2, 3, 2, 2}, kFloat64, &xv, "contiguous", -3, 0);
  Tensor t = class_targets({2, 2, 2}, 3, -100, &tv);
  expect_close(nll_loss(x, t, {}, "none").reshape({-1}), ref_class_loss(p, xv, tv, {}, -100, true, 0, "none"), 1e-12,
               1e-12, "K-dim none");
  expect_close(nll_loss(x, t), ref_class_loss(p, xv, tv, {}, -100, true, 0, "mean"), 1e-12, 1e-12, "K-dim mean");
  // Every target ignored: mean is 0 / 0 = nan; sum is 0.
  Tensor all_ignored = full({2, 2, 2}, -100, kInt64);
  EXPECT_TRUE(std::isnan(nll_loss(x, all_ignored).item<double>()));
  EXPECT_EQ(nll_loss(x, all_ignored, {}, "sum").item<double>(), 0.0);
  // Unbatched (C) input with a 0-d target.
  Tensor xu = tensor<double>({-1, -2, -3});
  EXPECT_DOUBLE_EQ(nll_loss(xu, scalar_tensor(1, kInt64)).item<double>(), 2.0);
}

TEST(NllLoss, Errors) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW(nll_loss(x, tensor<int64_t>({0, 4, 1})), Error);          // class out of range
  EXPECT_THROW(nll_loss(x, tensor<int64_t>({0, -1, 1})), Error);         // negative, not ignore_index
  EXPECT_THROW(nll_loss(x, tensor<int64_t>({0, 1})), Error);             // wrong target shape
  EXPECT_THROW(nll_loss(x, tensor<float>({0, 1, 2})), Error);            // float target
  EXPECT_THROW(nll_loss(x, tensor<int64_t>({0, 1, 2}), ones({3})), Error);  // weight size
  EXPECT_THROW(nll_loss(x, tensor<int64_t>({0, 1, 2}), {}, "avg"), Error);  // bad reduction
  EXPECT_NO_THROW(nll_loss(x, tensor<int64_t>({0, -1, 1}), {}, "mean", -1));
}

TEST(NllLoss, Gradcheck) {
  Tensor t = tensor<int64_t>({1, 0, 4, 3}, {4});
  for (const char* r : {"none", "sum", "mean"})
    expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(nll_loss(in[0], t, in[1], r, 0))}; },
                     {grad_input({4, 5}), grad_input({5}, 0.5, 2)}, std::string("nll_loss ") + r);
  // Non-contiguous input: the transpose of a (5, 4) leaf.
  expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(nll_loss(in[0].transpose(0, 1), t))}; },
                   {grad_input({5, 4})}, "nll_loss transposed");
}

TEST(CrossEntropy, ClassIndicesMatchReference) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const char* r : {"none", "sum", "mean"})
      for (bool weighted : {false, true})
        for (double eps : {0.0, 0.2}) {
          const Cls p{7, 6, 1};
          std::vector<double> xv, wv;
          std::vector<int64_t> tv;
          Tensor x = random_tensor({7, 6}, dt, &xv, "strided", -4, 4);
          Tensor t = class_targets({7}, 6, -100, &tv);
          Tensor w = weighted ? random_tensor({6}, dt, &wv, "contiguous", 0.5, 2) : Tensor();
          Tensor y = cross_entropy(x, t, w, r, -100, eps);
          EXPECT_EQ(y.dtype(), dt);
          const std::string what = std::string("ce ") + name(dt) + " " + r + (weighted ? " weighted" : "") +
                                   " eps " + std::to_string(eps);
          expect_close(y, ref_class_loss(p, xv, tv, wv, -100, false, eps, r), tol_of(dt), tol_of(dt), what);
        }
}

TEST(CrossEntropy, KDimInputs) {
  for (double eps : {0.0, 0.1})
    for (const char* r : {"none", "mean"}) {
      const Cls p{2, 4, 6};  // input (N=2, C=4, d1=2, d2=3)
      std::vector<double> xv, wv;
      std::vector<int64_t> tv;
      Tensor x = random_tensor({2, 4, 2, 3}, kFloat64, &xv, "transposed");
      Tensor t = class_targets({2, 2, 3}, 4, 1, &tv);
      Tensor w = random_tensor({4}, kFloat64, &wv, "contiguous", 0.5, 2);
      Tensor y = cross_entropy(x, t, w, r, 1, eps);
      expect_close(y.reshape({-1}), ref_class_loss(p, xv, tv, wv, 1, false, eps, r), 1e-11, 1e-11,
                   std::string("K-dim ") + r);
    }
  // All ignored with label smoothing: mean is nan.
  Tensor x = random_tensor({3, 4}, kFloat32);
  EXPECT_TRUE(std::isnan(cross_entropy(x, full({3}, -100, kInt64), {}, "mean", -100, 0.1).item<double>()));
}

TEST(CrossEntropy, ProbabilityTargets) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const char* r : {"none", "sum", "mean"})
      for (double eps : {0.0, 0.3})
        for (bool weighted : {false, true}) {
          const int64_t N = 5, C = 4;
          const Cls p{N, C, 1};
          std::vector<double> xv, tv, wv;
          Tensor x = random_tensor({N, C}, dt, &xv, "transposed");
          Tensor t = random_tensor({N, C}, dt, &tv, "contiguous", 0, 1);
          Tensor w = weighted ? random_tensor({C}, dt, &wv, "contiguous", 0.5, 2) : Tensor();
          std::vector<double> loss(static_cast<size_t>(N));
          double total = 0;
          for (int64_t i = 0; i < N; ++i) {
            std::vector<double> lp = p.log_softmax_row(xv, i);
            for (int64_t c = 0; c < C; ++c) {
              const double tt = tv[size_t(i * C + c)] * (1 - eps) + eps / double(C);
              loss[size_t(i)] -= (weighted ? wv[size_t(c)] : 1.0) * tt * lp[size_t(c)];
            }
            total += loss[size_t(i)];
          }
          std::vector<double> ref = std::string(r) == "none" ? loss
                                    : std::string(r) == "sum" ? std::vector<double>{total}
                                                              : std::vector<double>{total / double(N)};
          expect_close(cross_entropy(x, t, w, r, -100, eps), ref, tol_of(dt), tol_of(dt),
                       std::string("prob ") + name(dt) + " " + r);
        }
}

TEST(CrossEntropy, Errors) {
  Tensor x = zeros({3, 4});
  EXPECT_THROW(cross_entropy(x, tensor<int64_t>({0, 4, 1})), Error);
  EXPECT_THROW(cross_entropy(x, tensor<int64_t>({0, 1, 2, 3})), Error);
  EXPECT_THROW(cross_entropy(x, zeros({3, 5})), Error);  // probability target of the wrong shape
  EXPECT_THROW(cross_entropy(x, tensor<int64_t>({0, 1, 2}), {}, "mean", -100, 1.5), Error);
  EXPECT_THROW(cross_entropy(x, tensor<int64_t>({0, 1, 2}), ones({3})), Error);
  EXPECT_THROW(cross_entropy(zeros({3, 4}, kInt64), tensor<int64_t>({0, 1, 2})), Error);
  EXPECT_THROW(cross_entropy(x, tensor<int64_t>({0, 1, 2}), {}, "avg"), Error);
}

TEST(CrossEntropy, Gradcheck) {
  Tensor t = tensor<int64_t>({1, 0, 4, -100}, {4});
  for (const char* r : {"none", "sum", "mean"})
    for (double eps : {0.0, 0.2})
      expect_gradcheck(
          [&](const TensorList& in) { return TensorList{as1d(cross_entropy(in[0], t, in[1], r, -100, eps))}; },
          {grad_input({4, 5}), grad_input({5}, 0.5, 2)}, std::string("ce ") + r);
  expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(cross_entropy(in[0].transpose(0, 1), t))}; },
                   {grad_input({5, 4})}, "ce transposed");
  Tensor tk = tensor<int64_t>({1, 0, 2, 2, 1, 0}, {2, 3});
  expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(cross_entropy(in[0], tk, {}, "mean", 0, 0.1))}; },
                   {grad_input({2, 3, 3})}, "ce K-dim");
  expect_gradcheck(
      [&](const TensorList& in) { return TensorList{as1d(cross_entropy(in[0], in[1], in[2], "mean", -100, 0.2))}; },
      {grad_input({3, 4}), grad_input({3, 4}, 0, 1), grad_input({4}, 0.5, 2)}, "ce probabilities");
}

TEST(Embedding, ValuesPaddingAndErrors) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    std::vector<double> wv;
    std::vector<int64_t> iv;
    Tensor w = random_tensor({6, 3}, dt, &wv, "transposed");
    Tensor idx = random_index({2, 4}, 0, 5, &iv);
    Tensor y = embedding(idx, w);
    ASSERT_EQ(y.sizes(), (Shape{2, 4, 3}));
    std::vector<double> ref;
    for (int64_t i : iv)
      for (int64_t d = 0; d < 3; ++d) ref.push_back(wv[size_t(i * 3 + d)]);
    expect_close(y, ref, 0, 0, std::string("embedding ") + name(dt));
    expect_close(embedding(convert_element_type(idx, kInt32), w), ref, 0, 0, "int32 indices");
  }
  // padding_idx: same values, but its row gets no gradient; other rows get the count of lookups.
  for (int64_t pad : {2, -4}) {
    Tensor w = random_tensor({6, 3}, kFloat64);
    w.requires_grad_();
    std::vector<int64_t> iv = {2, 0, 2, 5, 0, 1};
    Tensor y = embedding(tensor(iv, {6}), w, pad);
    expect_close(y, embedding(tensor(iv, {6}), w.detach()).to_vector<double>(), 0, 0, "padding values");
    y.sum().backward();
    std::vector<double> ref(18, 0.0);
    for (int64_t i : iv)
      if (i != 2)
        for (int64_t d = 0; d < 3; ++d) ref[size_t(i * 3 + d)] += 1;
    expect_close(w.grad(), ref, 0, 0, "padding grad");
  }
  Tensor w = zeros({4, 2});
  EXPECT_THROW(embedding(tensor<int64_t>({0, 4}), w), Error);
  EXPECT_THROW(embedding(tensor<int64_t>({-1}), w), Error);
  EXPECT_THROW(embedding(tensor<float>({0, 1}), w), Error);
  EXPECT_THROW(embedding(tensor<int64_t>({0}), zeros({4})), Error);
  EXPECT_THROW(embedding(tensor<int64_t>({0}), w, 4), Error);
  Tensor empty_idx = embedding(zeros({0, 3}, kInt64), w);
  EXPECT_EQ(empty_idx.sizes(), (Shape{0, 3, 2}));
}

TEST(Embedding, Gradcheck) {
  Tensor idx = tensor<int64_t>({4, 0, 4, 2, 1, 1}, {2, 3});
  expect_gradcheck([&](const TensorList& in) { return TensorList{embedding(idx, in[0], 3)}; }, {grad_input({5, 3})},
                   "embedding, padding_idx unused");  // a used padding row has zero grad by design
  expect_gradcheck([&](const TensorList& in) { return TensorList{embedding(idx, in[0].transpose(0, 1))}; },
                   {grad_input({3, 5})}, "embedding transposed weight");
}

TEST(EmbeddingBag, SumMeanAndEmptyBags) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const char* mode : {"sum", "mean"}) {
      std::vector<double> wv;
      Tensor w = random_tensor({7, 4}, dt, &wv, "strided");
      const std::vector<int64_t> iv = {3, 0, 6, 6, 1, 2, 5};
      const std::vector<int64_t> ov = {0, 2, 2, 5, 7};  // bags [0,2) [] [2,5) [5,7) []
      Tensor y = embedding_bag(tensor(iv, {7}), w, tensor(ov, {5}), mode);
      ASSERT_EQ(y.sizes(), (Shape{5, 4}));
      std::vector<double> ref(20, 0.0);
      for (size_t b = 0; b < ov.size(); ++b) {
        const int64_t lo = ov[b], hi = b + 1 < ov.size() ? ov[b + 1] : 7;
        for (int64_t j = lo; j < hi; ++j)
          for (int64_t d = 0; d < 4; ++d)
            ref[b * 4 + size_t(d)] += wv[size_t(iv[size_t(j)] * 4 + d)] / (std::string(mode) == "mean" ? double(hi - lo) : 1.0);
      }
      expect_close(y, ref, tol_of(dt), tol_of(dt), std::string("embedding_bag ") + mode + " " + name(dt));
    }
  Tensor w = zeros({4, 2});
  EXPECT_THROW(embedding_bag(tensor<int64_t>({0, 1}), w, tensor<int64_t>({1})), Error);  // offsets[0] != 0
  EXPECT_THROW(embedding_bag(tensor<int64_t>({0, 4}), w, tensor<int64_t>({0})), Error);  // index out of range
  EXPECT_THROW(embedding_bag(tensor<int64_t>({0, 1}), w, tensor<int64_t>({0}), "min"), Error);  // sum, mean, max only
  EXPECT_THROW(embedding_bag(tensor<int64_t>({0, 1}, {1, 2}), w, tensor<int64_t>({0})), Error);
}

TEST(EmbeddingBag, Gradcheck) {
  Tensor idx = tensor<int64_t>({4, 0, 4, 2, 1}), off = tensor<int64_t>({0, 2, 2});
  for (const char* mode : {"sum", "mean"})
    expect_gradcheck([&](const TensorList& in) { return TensorList{embedding_bag(idx, in[0], off, mode)}; },
                     {grad_input({5, 3})}, std::string("embedding_bag ") + mode);
  expect_gradcheck([&](const TensorList& in) { return TensorList{embedding_bag(idx, in[0].transpose(0, 1), off)}; },
                   {grad_input({3, 5})}, "embedding_bag transposed");
}

// The fast kernel (class-index targets) on a problem large enough to thread, against the
// reference and the decomposition.
TEST(CrossEntropyKernel, MatchesReferenceAndDecomposition) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const char* r : {"none", "mean"}) {
      const Cls p{256, 1000, 1};
      std::vector<double> xv, wv;
      std::vector<int64_t> tv;
      Tensor x = random_tensor({256, 1000}, dt, &xv, "contiguous", -8, 8);
      Tensor t = class_targets({256}, 1000, -100, &tv);
      Tensor w = random_tensor({1000}, dt, &wv, "contiguous", 0.5, 2);
      Tensor y = cross_entropy(x, t, w, r, -100, 0.1);
      ops::Args a{ops::OpId::cross_entropy, {x, t, w, std::string(r), int64_t(-100), 0.1}};
      Tensor dec = ops::op_info(a.op).decomp(a).at(0);
      const std::string what = std::string("ce kernel ") + name(dt) + " " + r;
      expect_close(y, ref_class_loss(p, xv, tv, wv, -100, false, 0.1, r), tol_of(dt), tol_of(dt), what);
      expect_close(y, dec.to_vector<double>(), tol_of(dt), tol_of(dt), what + " vs decomposition");
    }
}

TEST(CrossEntropyKernel, GradMatchesDecomposition) {
  // Gradients of the kernel's derivative against those of the decomposition's graph.
  Tensor x = random_tensor({64, 300}, kFloat64), w = random_tensor({300}, kFloat64, nullptr, "contiguous", 0.5, 2);
  Tensor t = random_index({64}, 0, 299);
  x.requires_grad_();
  w.requires_grad_();
  TensorList gk = grad({cross_entropy(x, t, w, "mean", 5, 0.2)}, {x, w});
  ops::Args a{ops::OpId::cross_entropy, {x, t, w, std::string("mean"), int64_t(5), 0.2}};
  TensorList gd = grad({ops::op_info(a.op).decomp(a).at(0)}, {x, w});
  expect_close(gk[0], gd[0].to_vector<double>(), 1e-10, 1e-12, "grad x");
  expect_close(gk[1], gd[1].to_vector<double>(), 1e-10, 1e-12, "grad weight");
}

TEST(CrossEntropyKernel, NanLogitGivesNan) {
  Tensor x = zeros({3, 600});
  x.select(0, 1).slice(0, 400, 401).fill_(NAN);
  std::vector<double> y = cross_entropy(x, tensor<int64_t>({0, 0, 0}), {}, "none").to_vector<double>();
  EXPECT_NEAR(y[0], std::log(600.0), 1e-5);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_NEAR(y[2], std::log(600.0), 1e-5);
}
