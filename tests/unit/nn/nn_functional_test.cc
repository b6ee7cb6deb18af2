// NN functional ops (softmax, norms, normalize, glu, distances) against float64 reference loops.
#include <kiln/kiln.h>

#include <cmath>
#include <functional>

#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<DType> kFloatTypes = {kFloat32, kFloat64, kBFloat16, kFloat16};
const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};

// Calls f(indices of one row along dim) for every position of the other dims (row-major values).
void for_each_row(const Shape& shape, int64_t dim, const std::function<void(const std::vector<size_t>&)>& f) {
  int64_t outer = 1, inner = 1, n = shape.empty() ? 1 : shape[size_t(dim)];
  for (int64_t i = 0; i < dim; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(dim) + 1; i < shape.size(); ++i) inner *= shape[i];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      std::vector<size_t> idx;
      for (int64_t k = 0; k < n; ++k) idx.push_back(size_t((o * n + k) * inner + in));
      f(idx);
    }
}

std::vector<double> ref_softmax(const std::vector<double>& x, const Shape& shape, int64_t dim, bool log_) {
  std::vector<double> out(x.size());
  for_each_row(shape, dim, [&](const std::vector<size_t>& idx) {
    double m = -INFINITY, s = 0;
    for (size_t i : idx) m = std::max(m, x[i]);
    for (size_t i : idx) s += std::exp(x[i] - m);
    for (size_t i : idx) out[i] = log_ ? x[i] - m - std::log(s) : std::exp(x[i] - m) / s;
  });
  return out;
}

// Standardizes groups of consecutive `group` values: (x - mean) / sqrt(var + eps).
std::vector<double> ref_standardize(const std::vector<double>& x, int64_t group, double eps) {
  std::vector<double> out(x.size());
  for (size_t g0 = 0; g0 < x.size(); g0 += size_t(group)) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < group; ++i) m += x[g0 + size_t(i)];
    m /= double(group);
    for (int64_t i = 0; i < group; ++i) v += (x[g0 + size_t(i)] - m) * (x[g0 + size_t(i)] - m);
    v /= double(group);
    for (int64_t i = 0; i < group; ++i) out[g0 + size_t(i)] = (x[g0 + size_t(i)] - m) / std::sqrt(v + eps);
  }
  return out;
}

double tol(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : tolerance(dt) * 2; }

}  // namespace

// ------------------------------------------------------------------ softmax / log_softmax
TEST(NNSoftmax, MatchesReference) {
  for (bool log_ : {false, true})
    for (DType dt : kFloatTypes)
      for (const std::string& layout : kLayouts)
        for (Shape shape : {Shape{3, 5}, Shape{2, 3, 4}})
          for (int64_t dim = -1; dim < int64_t(shape.size()); ++dim) {
            std::vector<double> xv;
            Tensor x = random_tensor(shape, dt, &xv, layout, -4, 4);
            Tensor y = log_ ? log_softmax(x, dim) : softmax(x, dim);
            EXPECT_EQ(y.dtype(), dt);
            EXPECT_EQ(y.sizes(), shape);
            const int64_t d = dim < 0 ? dim + int64_t(shape.size()) : dim;
            expect_close(y, ref_softmax(xv, shape, d, log_), tol(dt), tol(dt),
                         std::string(log_ ? "log_softmax " : "softmax ") + name(dt) + " " + layout);
          }
}

TEST(NNSoftmax, DtypeArgStableAndEdgeCases) {
  std::vector<double> xv;
  Tensor x = random_tensor({4, 6}, kBFloat16, &xv);
  Tensor y = softmax(x, 1, kFloat32);
  EXPECT_EQ(y.dtype(), kFloat32);
  expect_close(y, ref_softmax(xv, {4, 6}, 1, false), 1e-6, 1e-6, "softmax dtype=float32");
  Tensor ints = tensor<int64_t>({1, 2, 3});
  Tensor yi = log_softmax(ints, 0, kFloat64);
  EXPECT_EQ(yi.dtype(), kFloat64);
  expect_close(yi, ref_softmax({1, 2, 3}, {3}, 0, true), 1e-12, 1e-12, "log_softmax of ints, dtype=float64");
  // Large logits do not overflow.
  Tensor big = tensor<float>({1000, 1001, 999, -1000});
  expect_close(softmax(big, 0), ref_softmax({1000, 1001, 999, -1000}, {4}, 0, false), 1e-6, 1e-6, "large");
  expect_close(log_softmax(big, 0), ref_softmax({1000, 1001, 999, -1000}, {4}, 0, true), 1e-5, 1e-5, "large log");
  // 0-d and empty inputs.
  expect_close(softmax(scalar_tensor(2.5, kFloat64), 0), {1.0}, 0, 0, "0-d");
  expect_close(log_softmax(scalar_tensor(2.5, kFloat64), -1), {0.0}, 0, 0, "0-d log");
  EXPECT_EQ(softmax(zeros({0, 3}), 1).sizes(), (Shape{0, 3}));
  EXPECT_EQ(softmax(zeros({2, 0}), 1).sizes(), (Shape{2, 0}));
  EXPECT_EQ(log_softmax(zeros({2, 0}), 0).sizes(), (Shape{2, 0}));
}

TEST(NNSoftmax, Errors) {
  EXPECT_THROW(softmax(tensor<int64_t>({1, 2}), 0), Error);
  EXPECT_THROW(softmax(zeros({2, 3}), 2), Error);
  EXPECT_THROW(log_softmax(zeros({2, 3}), -3), Error);
}

TEST(NNSoftmax, Gradcheck) {
  for (bool log_ : {false, true}) {
    auto f = [log_](int64_t dim) {
      return [log_, dim](const TensorList& in) {
        return TensorList{log_ ? log_softmax(in[0], dim) : softmax(in[0], dim)};
      };
    };
    expect_gradcheck(f(1), {grad_input({3, 4})}, "dim 1");
    expect_gradcheck(f(0), {grad_input({3, 4})}, "dim 0");
    expect_gradcheck(f(-1), {grad_input({2, 3, 4})}, "3-d");
    expect_gradcheck([log_](const TensorList& in) {
      Tensor x = in[0].transpose(0, 1);  // non-contiguous
      return TensorList{log_ ? log_softmax(x, 1) : softmax(x, 1)};
    }, {grad_input({4, 3})}, "transposed");
    expect_gradcheck([log_](const TensorList& in) {
      Tensor x = in[0].expand({3, 5});  // broadcast input
      return TensorList{log_ ? log_softmax(x, 0) : softmax(x, 0)};
    }, {grad_input({1, 5})}, "expanded");
  }
}

// ------------------------------------------------------------------ layer_norm / rms_norm
TEST(NNLayerNorm, MatchesReference) {
  for (DType dt : kFloatTypes)
    for (const std::string& layout : kLayouts)
      for (int k : {1, 2}) {
        const Shape shape{3, 4, 5};
        const Shape ns(shape.end() - k, shape.end());
        const int64_t group = numel(ns);
        std::vector<double> xv, wv, bv;
        Tensor x = random_tensor(shape, dt, &xv, layout);
        Tensor w = random_tensor(ns, dt, &wv), b = random_tensor(ns, dt, &bv);
        std::vector<double> ref = ref_standardize(xv, group, 1e-5), ref_affine(ref);
        for (size_t i = 0; i < ref.size(); ++i) ref_affine[i] = ref[i] * wv[i % size_t(group)] + bv[i % size_t(group)];
        SymIntList nsl(ns);
        Tensor y = layer_norm(x, nsl);
        EXPECT_EQ(y.dtype(), dt);
        expect_close(y, ref, tol(dt), tol(dt), std::string("layer_norm ") + name(dt) + " " + layout);
        expect_close(layer_norm(x, nsl, w, b), ref_affine, tol(dt), tol(dt) * 4,
                     std::string("layer_norm affine ") + name(dt) + " " + layout);
      }
  // Mixed: bfloat16 input with float32 parameters gives bfloat16.
  std::vector<double> xv;
  Tensor x = random_tensor({2, 8}, kBFloat16, &xv);
  Tensor y = layer_norm(x, {8}, ones({8}), zeros({8}), 1e-3);
  EXPECT_EQ(y.dtype(), kBFloat16);
  expect_close(y, ref_standardize(xv, 8, 1e-3), 2e-2, 2e-2, "mixed");
  EXPECT_EQ(layer_norm(zeros({0, 4}), {4}).sizes(), (Shape{0, 4}));
}

TEST(NNRmsNorm, MatchesReference) {
  for (DType dt : kFloatTypes)
    for (const std::string& layout : kLayouts)
      for (std::optional<double> eps : {std::optional<double>(), std::optional<double>(1e-3)}) {
        const Shape shape{3, 4, 6};
        std::vector<double> xv, wv;
        Tensor x = random_tensor(shape, dt, &xv, layout);
        Tensor w = random_tensor({6}, dt, &wv);
        // eps None: the epsilon of the type PyTorch computes in (float32 for 16-bit inputs).
        const double e = eps ? *eps : dt == kFloat64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
        std::vector<double> ref(xv.size()), refw(xv.size());
        for (size_t r = 0; r < xv.size(); r += 6) {
          double ms = 0;
          for (size_t i = 0; i < 6; ++i) ms += xv[r + i] * xv[r + i];
          for (size_t i = 0; i < 6; ++i) {
            ref[r + i] = xv[r + i] / std::sqrt(ms / 6 + e);
            refw[r + i] = ref[r + i] * wv[i];
          }
        }
        expect_close(rms_norm(x, {6}, {}, eps), ref, tol(dt), tol(dt), std::string("rms_norm ") + name(dt));
        Tensor yw = rms_norm(x, {6}, w, eps);
        EXPECT_EQ(yw.dtype(), dt);
        expect_close(yw, refw, tol(dt) * 2, tol(dt) * 4, std::string("rms_norm weight ") + name(dt) + " " + layout);
      }
  // A float32 weight on a bfloat16 input promotes the result (PyTorch scales after rounding).
  EXPECT_EQ(rms_norm(ones({2, 4}, kBFloat16), {4}, ones({4})).dtype(), kFloat32);
}

TEST(NNNorm, LayerAndRmsErrors) {
  EXPECT_THROW(layer_norm(zeros({2, 3}), {4}), Error);
  EXPECT_THROW(layer_norm(zeros({2, 3}), {2, 3, 1}), Error);
  EXPECT_THROW(layer_norm(zeros({2, 3}), {3}, zeros({4})), Error);
  EXPECT_THROW(layer_norm(zeros({2, 3}), {3}, {}, zeros({2})), Error);
  EXPECT_THROW(layer_norm(zeros({2, 3}, kInt64), {3}), Error);
  EXPECT_THROW(rms_norm(zeros({2, 3}), {2}), Error);
  EXPECT_THROW(rms_norm(zeros({2, 3}), {3}, zeros({3, 1})), Error);
}

TEST(NNLayerNorm, Gradcheck) {
  expect_gradcheck([](const TensorList& in) { return TensorList{layer_norm(in[0], {4}, in[1], in[2])}; },
                   {grad_input({3, 4}), grad_input({4}), grad_input({4})}, "layer_norm");
  expect_gradcheck([](const TensorList& in) { return TensorList{layer_norm(in[0].transpose(0, 2), {3, 2}, in[1], in[2])}; },
                   {grad_input({2, 3, 4}), grad_input({3, 2}), grad_input({3, 2})}, "layer_norm transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{layer_norm(in[0].expand({3, 5}), {5}, in[1])}; },
                   {grad_input({1, 5}), grad_input({5})}, "layer_norm expanded");
  expect_gradcheck([](const TensorList& in) { return TensorList{rms_norm(in[0], {4}, in[1])}; },
                   {grad_input({3, 4}), grad_input({4})}, "rms_norm");
  expect_gradcheck([](const TensorList& in) { return TensorList{rms_norm(in[0].transpose(0, 1), {2}, in[1], 1e-2)}; },
                   {grad_input({2, 3}), grad_input({2})}, "rms_norm transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{rms_norm(in[0].expand({3, 4}), {4})}; },
                   {grad_input({1, 4})}, "rms_norm expanded");
}

// ------------------------------------------------------------------ group / instance / batch norm
namespace {
// Reference (N, C, S) with per-channel affine.
std::vector<double> ref_affine_channels(std::vector<double> y, int64_t c, int64_t s, const std::vector<double>& w,
                                        const std::vector<double>& b) {
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t ch = (i / size_t(s)) % size_t(c);
    y[i] = y[i] * (w.empty() ? 1 : w[ch]) + (b.empty() ? 0 : b[ch]);
  }
  return y;
}
}  // namespace

TEST(NNGroupNorm, MatchesReferenceAndInstanceNorm) {
  for (DType dt : kFloatTypes)
    for (const std::string& layout : kLayouts) {
      const Shape shape{2, 6, 3, 2};  // N C H W
      std::vector<double> xv, wv, bv;
      Tensor x = random_tensor(shape, dt, &xv, layout);
      Tensor w = random_tensor({6}, dt, &wv), b = random_tensor({6}, dt, &bv);
      for (int64_t g : {1, 2, 3, 6}) {
        std::vector<double> ref = ref_affine_channels(ref_standardize(xv, 6 / g * 6, 1e-5), 6, 6, wv, bv);
        Tensor y = group_norm(x, g, w, b);
        EXPECT_EQ(y.dtype(), dt);
        expect_close(y, ref, tol(dt) * 2, tol(dt) * 4, std::string("group_norm ") + name(dt) + " " + layout);
      }
      std::vector<double> ref = ref_affine_channels(ref_standardize(xv, 6, 1e-4), 6, 6, wv, bv);
      expect_close(instance_norm(x, w, b, 1e-4), ref, tol(dt) * 2, tol(dt) * 4, std::string("instance_norm ") + name(dt));
      expect_close(instance_norm(x), ref_standardize(xv, 6, 1e-5), tol(dt), tol(dt), "instance_norm plain");
    }
  EXPECT_EQ(group_norm(zeros({0, 4, 2}), 2).sizes(), (Shape{0, 4, 2}));
  EXPECT_THROW(group_norm(zeros({2, 6, 3}), 4), Error);
  EXPECT_THROW(group_norm(zeros({2, 6, 3}), 3, zeros({5})), Error);
  EXPECT_THROW(group_norm(zeros({6}), 3), Error);
  EXPECT_THROW(instance_norm(zeros({2, 3})), Error);
  EXPECT_THROW(instance_norm(zeros({2, 3, 1})), Error);
  EXPECT_THROW(instance_norm(zeros({2, 3, 4}), zeros({4})), Error);
}

TEST(NNGroupNorm, Gradcheck) {
  expect_gradcheck([](const TensorList& in) { return TensorList{group_norm(in[0], 2, in[1], in[2])}; },
                   {grad_input({2, 4, 3}), grad_input({4}), grad_input({4})}, "group_norm");
  expect_gradcheck([](const TensorList& in) { return TensorList{group_norm(in[0].transpose(1, 2), 3, in[1])}; },
                   {grad_input({2, 2, 3}), grad_input({3})}, "group_norm transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{instance_norm(in[0].expand({2, 2, 4}), in[1], in[2])}; },
                   {grad_input({1, 2, 4}), grad_input({2}), grad_input({2})}, "instance_norm expanded");
}

TEST(NNBatchNorm, TrainingUpdatesRunningStats) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const std::string& layout : kLayouts) {
      const int64_t n = 4, c = 3, s = 5;
      std::vector<double> xv, wv, bv;
      Tensor x = random_tensor({n, c, s}, dt, &xv, layout);
      Tensor w = random_tensor({c}, dt, &wv), b = random_tensor({c}, dt, &bv);
      const DType stat_dt = dt == kFloat64 ? kFloat64 : kFloat32;
      std::vector<double> rm0 = random_values(c), rv0 = random_values(c, 0.5, 2);
      Tensor rm = tensor(rm0, {c}, stat_dt), rv = tensor(rv0, {c}, stat_dt);
      const double momentum = 0.3;
      Tensor y = batch_norm(x, rm, rv, w, b, true, momentum, 1e-5);
      EXPECT_EQ(y.dtype(), dt);
      std::vector<double> ref(xv.size()), new_rm(static_cast<size_t>(c)), new_rv(static_cast<size_t>(c));
      for (int64_t ch = 0; ch < c; ++ch) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < s; ++j) m += xv[size_t((i * c + ch) * s + j)];
        m /= double(n * s);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < s; ++j) v += std::pow(xv[size_t((i * c + ch) * s + j)] - m, 2);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < s; ++j) {
            const size_t k = size_t((i * c + ch) * s + j);
            ref[k] = (xv[k] - m) / std::sqrt(v / double(n * s) + 1e-5) * wv[size_t(ch)] + bv[size_t(ch)];
          }
        new_rm[size_t(ch)] = (1 - momentum) * rm0[size_t(ch)] + momentum * m;
        new_rv[size_t(ch)] = (1 - momentum) * rv0[size_t(ch)] + momentum * v / double(n * s - 1);
      }
      expect_close(y, ref, tol(dt) * 2, tol(dt) * 4, std::string("batch_norm train ") + name(dt) + " " + layout);
      expect_close(rm, new_rm, 1e-6, 1e-6, "running_mean");
      expect_close(rv, new_rv, 1e-6, 1e-6, "running_var");
    }
}

TEST(NNBatchNorm, EvalUsesRunningStats) {
  std::vector<double> xv, rmv = random_values(3), rvv = random_values(3, 0.5, 2), wv, bv;
  Tensor x = random_tensor({2, 3, 2, 2}, kFloat32, &xv, "transposed");
  Tensor rm = tensor(rmv, {3}, kFloat32), rv = tensor(rvv, {3}, kFloat32);
  Tensor w = random_tensor({3}, kFloat32, &wv), b = random_tensor({3}, kFloat32, &bv);
  Tensor y = batch_norm(x, rm, rv, w, b, false, 0.1, 1e-3);
  std::vector<double> ref(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t ch = (i / 4) % 3;
    ref[i] = (xv[i] - rmv[ch]) / std::sqrt(rvv[ch] + 1e-3) * wv[ch] + bv[ch];
  }
  expect_close(y, ref, 1e-5, 1e-5, "batch_norm eval");
  expect_close(rm, rmv, 1e-6, 0, "running_mean unchanged");
  // 2-D input (N, C) and training without running stats.
  std::vector<double> x2v;
  Tensor x2 = random_tensor({5, 2}, kFloat64, &x2v);
  std::vector<double> ref2(x2v.size());
  for (size_t ch = 0; ch < 2; ++ch) {
    double m = 0, v = 0;
    for (size_t i = 0; i < 5; ++i) m += x2v[i * 2 + ch] / 5;
    for (size_t i = 0; i < 5; ++i) v += std::pow(x2v[i * 2 + ch] - m, 2) / 5;
    for (size_t i = 0; i < 5; ++i) ref2[i * 2 + ch] = (x2v[i * 2 + ch] - m) / std::sqrt(v + 1e-5);
  }
  expect_close(batch_norm(x2, {}, {}, {}, {}, true), ref2, 1e-12, 1e-12, "batch_norm 2-d no stats");
}

TEST(NNBatchNorm, ErrorsAndGradcheck) {
  EXPECT_THROW(batch_norm(zeros({2, 3}), {}, {}, {}, {}, false), Error);
  EXPECT_THROW(batch_norm(zeros({1, 3}), zeros({3}), ones({3}), {}, {}, true), Error);
  EXPECT_THROW(batch_norm(zeros({2, 3}), zeros({4}), ones({3}), {}, {}, true), Error);
  EXPECT_THROW(batch_norm(zeros({3}), zeros({3}), ones({3})), Error);
  Tensor rm = zeros({2}, kFloat64), rv = ones({2}, kFloat64);
  expect_gradcheck([&](const TensorList& in) { return TensorList{batch_norm(in[0], rm, rv, in[1], in[2], true)}; },
                   {grad_input({3, 2, 2}), grad_input({2}), grad_input({2})}, "batch_norm train");
  expect_gradcheck([&](const TensorList& in) { return TensorList{batch_norm(in[0].transpose(1, 2), rm, rv, in[1], {}, false)}; },
                   {grad_input({3, 2, 2}), grad_input({2})}, "batch_norm eval transposed");
  expect_gradcheck([&](const TensorList& in) { return TensorList{batch_norm(in[0].expand({3, 2}), {}, {}, {}, {}, true)}; },
                   {grad_input({3, 1})}, "batch_norm expanded");
}

// ------------------------------------------------------------------ normalize / glu
TEST(NNNormalize, MatchesReference) {
  for (DType dt : {kFloat32, kFloat64})
    for (const std::string& layout : kLayouts)
      for (double p : {1.0, 2.0, 3.0, double(INFINITY)}) {
        std::vector<double> xv;
        Tensor x = random_tensor({3, 4}, dt, &xv, layout);
        for (int64_t dim : {0, 1, -1}) {
          const int64_t d = dim < 0 ? 1 : dim;
          std::vector<double> ref(xv.size());
          for_each_row({3, 4}, d, [&](const std::vector<size_t>& idx) {
            double n = 0;
            for (size_t i : idx) n = std::isinf(p) ? std::max(n, std::abs(xv[i])) : n + std::pow(std::abs(xv[i]), p);
            if (!std::isinf(p)) n = std::pow(n, 1 / p);
            for (size_t i : idx) ref[i] = xv[i] / std::max(n, 1e-12);
          });
          expect_close(normalize(x, p, dim), ref, tol(dt) * 5, tol(dt) * 5, "normalize p=" + std::to_string(p));
        }
      }
  // Zero rows stay zero (the norm is clamped at eps).
  expect_close(normalize(zeros({2, 3}, kFloat64), 2, 1), std::vector<double>(6, 0.0), 0, 0, "zeros");
  EXPECT_THROW(normalize(zeros({2, 3}), 2, 2), Error);
  expect_gradcheck([](const TensorList& in) { return TensorList{normalize(in[0], 2, 1)}; }, {grad_input({3, 4})}, "p=2");
  expect_gradcheck([](const TensorList& in) { return TensorList{normalize(in[0].transpose(0, 1), 3, 0)}; },
                   {grad_input({3, 4}, 0.2, 2)}, "p=3 transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{normalize(in[0].expand({2, 3}), 1, 0)}; },
                   {grad_input({1, 3}, 0.2, 2)}, "p=1 expanded");
}

TEST(NNGlu, MatchesReference) {
  for (DType dt : kFloatTypes)
    for (const std::string& layout : kLayouts) {
      std::vector<double> xv;
      Tensor x = random_tensor({4, 6}, dt, &xv, layout);
      for (int64_t dim : {0, -1}) {
        Tensor y = glu(x, dim);
        std::vector<double> ref;
        if (dim == 0) {
          for (size_t i = 0; i < 2; ++i)
            for (size_t j = 0; j < 6; ++j) ref.push_back(xv[i * 6 + j] / (1 + std::exp(-xv[(i + 2) * 6 + j])));
        } else {
          for (size_t i = 0; i < 4; ++i)
            for (size_t j = 0; j < 3; ++j) ref.push_back(xv[i * 6 + j] / (1 + std::exp(-xv[i * 6 + j + 3])));
        }
        expect_close(y, ref, tol(dt) * 2, tol(dt) * 2, std::string("glu ") + name(dt) + " " + layout);
      }
    }
  EXPECT_THROW(glu(zeros({3, 5})), Error);
  EXPECT_THROW(glu(scalar_tensor(1.0, kFloat64)), Error);
  EXPECT_THROW(glu(zeros({4}, kInt64)), Error);
  expect_gradcheck([](const TensorList& in) { return TensorList{glu(in[0], 1)}; }, {grad_input({3, 4})}, "glu");
  expect_gradcheck([](const TensorList& in) { return TensorList{glu(in[0].transpose(0, 1), 0)}; }, {grad_input({3, 4})},
                   "glu transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{glu(in[0].expand({3, 4}), 1)}; }, {grad_input({1, 4})},
                   "glu expanded");
}

// ------------------------------------------------------------------ cosine_similarity / pairwise_distance
TEST(NNDistance, CosineSimilarity) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const std::string& layout : kLayouts) {
      std::vector<double> av, bv;
      Tensor a = random_tensor({3, 5}, dt, &av, layout);
      Tensor b = random_tensor({1, 5}, dt, &bv);  // broadcast
      std::vector<double> ref;
      for (size_t i = 0; i < 3; ++i) {
        double dot = 0, na = 0, nb = 0;
        for (size_t j = 0; j < 5; ++j) {
          dot += av[i * 5 + j] * bv[j];
          na += av[i * 5 + j] * av[i * 5 + j];
          nb += bv[j] * bv[j];
        }
        ref.push_back(dot / std::max(std::sqrt(na), 1e-8) / std::max(std::sqrt(nb), 1e-8));
      }
      Tensor y = cosine_similarity(a, b, 1);
      EXPECT_EQ(y.sizes(), (Shape{3}));
      expect_close(y, ref, tol(dt) * 4, tol(dt) * 4, std::string("cosine ") + name(dt) + " " + layout);
    }
  // A zero vector gives 0 (norms clamped at eps), ints are promoted only with a float partner.
  expect_close(cosine_similarity(zeros({2, 3}, kFloat64), ones({2, 3}, kFloat64)), {0, 0}, 0, 0, "zero");
  EXPECT_THROW(cosine_similarity(ones({2, 3}, kInt64), ones({2, 3}, kInt64)), Error);
  EXPECT_THROW(cosine_similarity(ones({2, 3}), ones({4, 3})), Error);
  expect_gradcheck([](const TensorList& in) { return TensorList{cosine_similarity(in[0], in[1], 1)}; },
                   {grad_input({3, 4}), grad_input({1, 4})}, "cosine broadcast");
  expect_gradcheck([](const TensorList& in) { return TensorList{cosine_similarity(in[0].transpose(0, 1), in[1], 0)}; },
                   {grad_input({3, 4}), grad_input({4, 3})}, "cosine transposed");
}

TEST(NNDistance, PairwiseDistance) {
  for (DType dt : {kFloat32, kFloat64})
    for (const std::string& layout : kLayouts)
      for (double p : {1.0, 2.0, 3.0, double(INFINITY)})
        for (bool keepdim : {false, true}) {
          std::vector<double> av, bv;
          Tensor a = random_tensor({3, 4}, dt, &av, layout);
          Tensor b = random_tensor({4}, dt, &bv);
          std::vector<double> ref;
          for (size_t i = 0; i < 3; ++i) {
            double n = 0;
            for (size_t j = 0; j < 4; ++j) {
              const double d = std::abs(av[i * 4 + j] - bv[j] + 1e-6);
              n = std::isinf(p) ? std::max(n, d) : n + std::pow(d, p);
            }
            ref.push_back(std::isinf(p) ? n : std::pow(n, 1 / p));
          }
          Tensor y = pairwise_distance(a, b, p, 1e-6, keepdim);
          EXPECT_EQ(y.sizes(), keepdim ? Shape({3, 1}) : Shape({3}));
          expect_close(y, ref, tol(dt) * 5, tol(dt) * 5, "pairwise p=" + std::to_string(p));
        }
  EXPECT_THROW(pairwise_distance(ones({2, 3}), ones({2, 4})), Error);
  expect_gradcheck([](const TensorList& in) { return TensorList{pairwise_distance(in[0], in[1])}; },
                   {grad_input({3, 4}), grad_input({4})}, "pairwise broadcast");
  expect_gradcheck([](const TensorList& in) { return TensorList{pairwise_distance(in[0].transpose(0, 1), in[1], 1.5)}; },
                   {grad_input({4, 3}), grad_input({3, 4})}, "pairwise transposed p=1.5");
}
