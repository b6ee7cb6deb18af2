// Loss functions against float64 reference loops, gradchecks and error cases.
#include <kiln/kiln.h>

#include <cmath>
#include <functional>

#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};
const std::vector<std::string> kReductions = {"none", "mean", "sum"};

std::vector<double> reduce(const std::vector<double>& v, const std::string& r) {
  if (r == "none") return v;
  double s = 0;
  for (double x : v) s += x;
  return {r == "sum" ? s : s / double(v.size())};
}

// gradcheck's output projection mishandles 0-d outputs (it builds a [1] gradient): view as [1].
Tensor as1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

double tol(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 3e-2; }

// Checks an elementwise loss(input, target) against f(x, t) for dtypes, layouts and reductions.
void check_pointwise_loss(const std::string& what, const std::function<Tensor(const Tensor&, const Tensor&, const std::string&)>& op,
                          const std::function<double(double, double)>& f, double lo = -2, double hi = 2) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const std::string& layout : kLayouts)
      for (const std::string& r : kReductions) {
        std::vector<double> xv, tv;
        Tensor x = random_tensor({3, 4}, dt, &xv, layout, lo, hi);
        Tensor t = random_tensor({3, 4}, dt, &tv, "contiguous", lo, hi);
        std::vector<double> ref(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) ref[i] = f(xv[i], tv[i]);
        Tensor y = op(x, t, r);
        EXPECT_EQ(y.dtype(), dt) << what;
        EXPECT_EQ(y.dim(), r == "none" ? 2 : 0) << what;
        expect_close(y, reduce(ref, r), tol(dt), tol(dt), what + " " + name(dt) + " " + layout + " " + r);
      }
}

void gradcheck_loss(const std::string& what, const std::function<Tensor(const Tensor&, const Tensor&, const std::string&)>& op,
                    double lo = -2, double hi = 2) {
  for (const std::string& r : kReductions)
    expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(op(in[0], in[1], r))}; },
                     {grad_input({3, 4}, lo, hi), grad_input({3, 4}, lo, hi)}, what + " " + r);
  expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(op(in[0].transpose(0, 1), in[1], "mean"))}; },
                   {grad_input({4, 3}, lo, hi), grad_input({3, 4}, lo, hi)}, what + " transposed");
}

}  // namespace

TEST(Loss, Mse) {
  auto op = [](const Tensor& x, const Tensor& t, const std::string& r) { return mse_loss(x, t, r); };
  check_pointwise_loss("mse", op, [](double x, double t) { return (x - t) * (x - t); });
  gradcheck_loss("mse", op);
  // Broadcast target and its gradient.
  std::vector<double> xv, tv;
  Tensor x = random_tensor({2, 3}, kFloat64, &xv), t = random_tensor({3}, kFloat64, &tv);
  double s = 0;
  for (size_t i = 0; i < 6; ++i) s += std::pow(xv[i] - tv[i % 3], 2);
  expect_close(mse_loss(x, t, "sum"), {s}, 1e-12, 1e-12, "broadcast");
  expect_gradcheck([](const TensorList& in) { return TensorList{as1d(mse_loss(in[0], in[1]))}; },
                   {grad_input({2, 3}), grad_input({3})}, "mse broadcast");
  EXPECT_THROW(mse_loss(zeros({2}), zeros({2}), "avg"), Error);
  EXPECT_THROW(mse_loss(zeros({2}), zeros({3})), Error);
  EXPECT_THROW(mse_loss(zeros({2}, kInt64), zeros({2}, kInt64)), Error);
  // Empty input: mean is nan, sum is 0 (as PyTorch).
  EXPECT_TRUE(std::isnan(mse_loss(zeros({0}), zeros({0})).item<float>()));
  EXPECT_EQ(mse_loss(zeros({0}), zeros({0}), "sum").item<float>(), 0.0f);
}

TEST(Loss, L1SmoothL1Huber) {
  check_pointwise_loss("l1", [](const Tensor& x, const Tensor& t, const std::string& r) { return l1_loss(x, t, r); },
                       [](double x, double t) { return std::abs(x - t); });
  for (double beta : {0.0, 0.5, 1.0}) {
    auto op = [beta](const Tensor& x, const Tensor& t, const std::string& r) { return smooth_l1_loss(x, t, r, beta); };
    check_pointwise_loss("smooth_l1", op, [beta](double x, double t) {
      const double d = std::abs(x - t);
      return d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
    });
    gradcheck_loss("smooth_l1", op);
  }
  for (double delta : {0.5, 1.0, 2.0}) {
    auto op = [delta](const Tensor& x, const Tensor& t, const std::string& r) { return huber_loss(x, t, r, delta); };
    check_pointwise_loss("huber", op, [delta](double x, double t) {
      const double d = std::abs(x - t);
      return d < delta ? 0.5 * d * d : delta * (d - 0.5 * delta);
    });
    gradcheck_loss("huber", op);
  }
  gradcheck_loss("l1", [](const Tensor& x, const Tensor& t, const std::string& r) { return l1_loss(x, t, r); });
  EXPECT_THROW(smooth_l1_loss(zeros({2}), zeros({2}), "mean", -1), Error);
  EXPECT_THROW(huber_loss(zeros({2}), zeros({2}), "mean", 0), Error);
  EXPECT_THROW(l1_loss(zeros({2}), zeros({2}), "max"), Error);
}

TEST(Loss, BinaryCrossEntropy) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const std::string& layout : kLayouts)
      for (const std::string& r : kReductions)
        for (bool weighted : {false, true}) {
          std::vector<double> xv, tv, wv;
          Tensor x = random_tensor({3, 4}, dt, &xv, layout, 0.02, 0.98);
          Tensor t = random_tensor({3, 4}, dt, &tv, "contiguous", 0, 1);
          Tensor w = random_tensor({4}, dt, &wv, "contiguous", 0, 2);  // broadcast weight
          std::vector<double> ref(xv.size());
          for (size_t i = 0; i < ref.size(); ++i)
            ref[i] = -(weighted ? wv[i % 4] : 1) * (tv[i] * std::log(xv[i]) + (1 - tv[i]) * std::log(1 - xv[i]));
          Tensor y = binary_cross_entropy(x, t, weighted ? w : Tensor(), r);
          EXPECT_EQ(y.dtype(), dt);
          expect_close(y, reduce(ref, r), tol(dt), tol(dt), std::string("bce ") + name(dt) + " " + layout + " " + r);
        }
  // log is clamped at -100: inputs of exactly 0 and 1 give finite losses and gradients.
  Tensor x = tensor<double>({0, 1, 0, 1});
  Tensor t = tensor<double>({1, 0, 0, 1});
  expect_close(binary_cross_entropy(x, t, {}, "none"), {100, 100, 0, 0}, 1e-12, 1e-12, "clamped");
  Tensor xg = x.clone().requires_grad_();
  binary_cross_entropy(xg, t, {}, "sum").backward();
  for (double g : xg.grad().to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
  EXPECT_THROW(binary_cross_entropy(tensor<float>({1.5f}), tensor<float>({1.0f})), Error);
  EXPECT_THROW(binary_cross_entropy(tensor<float>({-0.5f}), tensor<float>({1.0f})), Error);
  EXPECT_THROW(binary_cross_entropy(ones({2, 1}) / 2.0, ones({2})), Error);
  for (const std::string& r : kReductions)
    expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(binary_cross_entropy(in[0], in[1], in[2], r))}; },
                     {grad_input({3, 4}, 0.05, 0.95), grad_input({3, 4}, 0, 1), grad_input({4}, 0, 2)}, "bce " + r);
  expect_gradcheck([](const TensorList& in) { return TensorList{as1d(binary_cross_entropy(in[0].transpose(0, 1), in[1]))}; },
                   {grad_input({4, 3}, 0.05, 0.95), grad_input({3, 4}, 0, 1)}, "bce transposed");
}

TEST(Loss, BinaryCrossEntropyWithLogits) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const std::string& layout : kLayouts)
      for (const std::string& r : kReductions)
        for (int variant = 0; variant < 3; ++variant) {  // plain, weight, weight + pos_weight
          std::vector<double> xv, tv, wv, pv;
          Tensor x = random_tensor({3, 4}, dt, &xv, layout, -5, 5);
          Tensor t = random_tensor({3, 4}, dt, &tv, "contiguous", 0, 1);
          Tensor w = random_tensor({3, 1}, dt, &wv, "contiguous", 0, 2);
          Tensor pw = random_tensor({4}, dt, &pv, "contiguous", 0.5, 3);
          std::vector<double> ref(xv.size());
          for (size_t i = 0; i < ref.size(); ++i) {
            const double sig = 1 / (1 + std::exp(-xv[i]));
            const double p = variant == 2 ? pv[i % 4] : 1, wt = variant >= 1 ? wv[i / 4] : 1;
            ref[i] = -wt * (p * tv[i] * std::log(sig) + (1 - tv[i]) * std::log(1 - sig));
          }
          Tensor y = binary_cross_entropy_with_logits(x, t, variant >= 1 ? w : Tensor(), variant == 2 ? pw : Tensor(), r);
          EXPECT_EQ(y.dtype(), dt);
          expect_close(y, reduce(ref, r), tol(dt), tol(dt), std::string("bce logits ") + name(dt) + " " + layout + " " + r);
        }
  // Large logits stay finite.
  Tensor y = binary_cross_entropy_with_logits(tensor<float>({100, -100}), tensor<float>({0, 1}), {}, {}, "none");
  expect_close(y, {100, 100}, 1e-5, 1e-5, "large logits");
  EXPECT_THROW(binary_cross_entropy_with_logits(zeros({2, 3}), zeros({3})), Error);
  for (const std::string& r : kReductions)
    expect_gradcheck([&](const TensorList& in) {
      return TensorList{as1d(binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3], r))};
    }, {grad_input({3, 4}), grad_input({3, 4}, 0, 1), grad_input({3, 1}, 0, 2), grad_input({4}, 0.5, 2)}, "bce logits " + r);
  expect_gradcheck([](const TensorList& in) { return TensorList{as1d(binary_cross_entropy_with_logits(in[0].transpose(0, 1), in[1]))}; },
                   {grad_input({4, 3}), grad_input({3, 4}, 0, 1)}, "bce logits transposed");
}

TEST(Loss, KlDiv) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const std::string& layout : kLayouts)
      for (bool log_target : {false, true})
        for (const std::string r : {"none", "mean", "sum", "batchmean"}) {
          std::vector<double> xv, tv;
          Tensor x = random_tensor({3, 4}, dt, &xv, layout, -3, 0);
          Tensor t = random_tensor({3, 4}, dt, &tv, "contiguous", log_target ? -3 : 0, log_target ? 0 : 1);
          std::vector<double> ref(xv.size());
          for (size_t i = 0; i < ref.size(); ++i)
            ref[i] = log_target ? std::exp(tv[i]) * (tv[i] - xv[i]) : (tv[i] == 0 ? 0 : tv[i] * std::log(tv[i])) - tv[i] * xv[i];
          std::vector<double> expect;
          if (std::string(r) == "batchmean") expect = {reduce(ref, "sum")[0] / 3};
          else expect = reduce(ref, r);
          Tensor y = kl_div(x, t, r, log_target);
          EXPECT_EQ(y.dtype(), dt);
          expect_close(y, expect, tol(dt), tol(dt), std::string("kl_div ") + name(dt) + " " + layout + " " + r);
        }
  // target 0 contributes 0 (not nan).
  expect_close(kl_div(tensor<double>({-1, -2}), tensor<double>({0, 1}), "none"), {0, 2}, 1e-12, 1e-12, "zero target");
  EXPECT_THROW(kl_div(zeros({2}), zeros({2}), "avg"), Error);
  for (bool log_target : {false, true})
    expect_gradcheck([&](const TensorList& in) { return TensorList{as1d(kl_div(in[0], in[1], "batchmean", log_target))}; },
                     {grad_input({3, 4}, -3, 0), grad_input({3, 4}, log_target ? -3 : 0.1, log_target ? 0 : 1)},
                     "kl_div");
  expect_gradcheck([](const TensorList& in) { return TensorList{as1d(kl_div(in[0].transpose(0, 1), in[1].expand({3, 4}), "sum"))}; },
                   {grad_input({4, 3}, -3, 0), grad_input({1, 4}, 0.1, 1)}, "kl_div transposed broadcast");
}
