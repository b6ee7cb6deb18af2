// scaled_dot_product_attention against a float64 loop written here: no mask, causal with
// Lq != Lk (top-left aligned), bool and additive masks, scale, grouped-query heads, dropout;
// error cases and gradchecks. Also the fast kernel against the decomposition.
#include <kiln/kiln.h>

#include <cmath>
#include <functional>

#include "ops/dispatch.h"
#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

double tol_of(DType dt) { return dt == kFloat64 ? 1e-11 : dt == kFloat32 ? 2e-5 : 3e-2; }

// q (B, Hq, L, D), k (B, Hk, S, D), v (B, Hk, S, Dv) row-major values; bias(b, h, i, j) is added
// to the scaled scores (-inf masks). Rows with every score -inf give zeros.
struct Sdpa {
  int64_t B, Hq, Hk, L, S, D, Dv;
  std::vector<double> run(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          double scale, bool causal,
                          const std::function<double(int64_t, int64_t, int64_t, int64_t)>& bias = {}) const {
    std::vector<double> out(size_t(B * Hq * L * Dv), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h) {
        const int64_t hk = h / (Hq / Hk);
        const double* qh = q.data() + (b * Hq + h) * L * D;
        const double* kh = k.data() + (b * Hk + hk) * S * D;
        const double* vh = v.data() + (b * Hk + hk) * S * Dv;
        for (int64_t i = 0; i < L; ++i) {
          std::vector<double> s(static_cast<size_t>(S));
          double m = -INFINITY;
          for (int64_t j = 0; j < S; ++j) {
            double d = 0;
            for (int64_t e = 0; e < D; ++e) d += qh[i * D + e] * kh[j * D + e];
            s[size_t(j)] = d * scale + (bias ? bias(b, h, i, j) : 0.0) + (causal && j > i ? -INFINITY : 0.0);
            m = std::max(m, s[size_t(j)]);
          }
          if (m == -INFINITY) continue;
          double z = 0;
          for (double& x : s) z += (x = std::exp(x - m));
          double* o = out.data() + ((b * Hq + h) * L + i) * Dv;
          for (int64_t j = 0; j < S; ++j)
            for (int64_t e = 0; e < Dv; ++e) o[e] += s[size_t(j)] / z * vh[j * Dv + e];
        }
      }
    return out;
  }
};

struct Inputs {
  Tensor q, k, v;
  std::vector<double> qv, kv, vv;
};
Inputs make_inputs(const Sdpa& p, DType dt, const std::string& layout = "contiguous") {
  Inputs in;
  in.q = random_tensor({p.B, p.Hq, p.L, p.D}, dt, &in.qv, layout);
  in.k = random_tensor({p.B, p.Hk, p.S, p.D}, dt, &in.kv, "transposed");
  in.v = random_tensor({p.B, p.Hk, p.S, p.Dv}, dt, &in.vv, layout);
  return in;
}

}  // namespace

TEST(Attention, NoMaskCausalAndScale) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (bool causal : {false, true})
      for (auto [L, S] : {std::pair<int64_t, int64_t>{5, 5}, {3, 6}, {6, 3}}) {
        const Sdpa p{2, 3, 3, L, S, 4, 5};
        Inputs in = make_inputs(p, dt, "strided");
        const std::string what = std::string(name(dt)) + (causal ? " causal " : " ") + std::to_string(L) + "x" +
                                 std::to_string(S);
        Tensor y = scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, causal);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_EQ(y.sizes(), (Shape{2, 3, L, 5}));
        expect_close(y, p.run(in.qv, in.kv, in.vv, 0.5, causal), tol_of(dt), tol_of(dt), what);
        Tensor ys = scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, causal, 0.8);
        expect_close(ys, p.run(in.qv, in.kv, in.vv, 0.8, causal), tol_of(dt), tol_of(dt), what + " scale 0.8");
      }
}

TEST(Attention, BoolAndAdditiveMasks) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    const Sdpa p{2, 2, 2, 4, 5, 3, 3};
    Inputs in = make_inputs(p, dt);
    // Bool mask (B, 1, L, S) broadcast over heads; row 2 of batch 1 fully masked -> zeros.
    std::vector<bool> mv;
    std::vector<double> mvals = random_values(2 * 4 * 5, 0, 1);
    std::vector<double> mb;
    for (size_t i = 0; i < mvals.size(); ++i) {
      const bool fully = i / 5 == 6;  // batch 1, row 2
      mv.push_back(!fully && (mvals[i] > 0.3 || i % 5 == 0));
      mb.push_back(mv.back() ? 1 : 0);
    }
    Tensor mask = tensor(mb, {2, 1, 4, 5}, kBool);
    auto bias = [&](int64_t b, int64_t, int64_t i, int64_t j) { return mv[size_t((b * 4 + i) * 5 + j)] ? 0.0 : -INFINITY; };
    expect_close(scaled_dot_product_attention(in.q, in.k, in.v, mask), p.run(in.qv, in.kv, in.vv, 1 / std::sqrt(3.0), false, bias),
                 tol_of(dt), tol_of(dt), std::string("bool mask ") + name(dt));
    // Additive float mask (L, S) broadcast over batch and heads, with a -inf entry.
    std::vector<double> fv;
    Tensor fm = random_tensor({4, 5}, dt, &fv);
    fv[3] = -INFINITY;
    fm = tensor(fv, {4, 5}, dt);
    auto fbias = [&](int64_t, int64_t, int64_t i, int64_t j) { return fv[size_t(i * 5 + j)]; };
    expect_close(scaled_dot_product_attention(in.q, in.k, in.v, fm, 0.0, false, 0.7),
                 p.run(in.qv, in.kv, in.vv, 0.7, false, fbias), tol_of(dt), tol_of(dt),
                 std::string("float mask ") + name(dt));
  }
}

TEST(Attention, GroupedQueryAndNoBatch) {
  for (DType dt : {kFloat32, kFloat64}) {
    const Sdpa p{2, 6, 2, 4, 7, 3, 2};
    Inputs in = make_inputs(p, dt);
    expect_close(scaled_dot_product_attention(in.q, in.k, in.v, {}, 0.0, true, std::nullopt, true),
                 p.run(in.qv, in.kv, in.vv, 1 / std::sqrt(3.0), true), tol_of(dt), tol_of(dt), "gqa");
    // Without enable_gqa, mismatched heads cannot broadcast.
    EXPECT_THROW(scaled_dot_product_attention(in.q, in.k, in.v), Error);
  }
  // 3-D inputs (H, L, D) and 2-D inputs (L, D).
  const Sdpa p{1, 1, 1, 3, 4, 2, 2};
  Inputs in = make_inputs(p, kFloat64);
  Tensor q2 = in.q.reshape({3, 2}), k2 = in.k.reshape({4, 2}), v2 = in.v.reshape({4, 2});
  expect_close(scaled_dot_product_attention(q2, k2, v2), p.run(in.qv, in.kv, in.vv, 1 / std::sqrt(2.0), false), 1e-12,
               1e-12, "2-D");
  // Empty key sequence: zeros of shape (L, Dv), as the softmax of nothing contributes nothing.
  Tensor e = scaled_dot_product_attention(q2, zeros({0, 2}, kFloat64), zeros({0, 2}, kFloat64));
  expect_close(e, std::vector<double>(6, 0.0), 0, 0, "empty keys");
}

TEST(Attention, DropoutDeterministicAndStatistical) {
  // q = 0 gives uniform weights 1/S; v = identity exposes each weight: out[i, j] is 0 (dropped)
  // or 1 / (S (1 - p)) (kept).
  const int64_t L = 64, S = 64;
  const double p = 0.3;
  Tensor q = zeros({2, L, 8}), k = random_tensor({2, S, 8}, kFloat32), v = eye(S).expand({2, S, S});
  manual_seed(7);
  Tensor a = scaled_dot_product_attention(q, k, v, {}, p);
  manual_seed(7);
  Tensor b = scaled_dot_product_attention(q, k, v, {}, p);
  Tensor c = scaled_dot_product_attention(q, k, v, {}, p);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  EXPECT_NE(a.to_vector<double>(), c.to_vector<double>());
  std::vector<double> av = a.to_vector<double>();
  const double kept = 1 / (double(S) * (1 - p));
  int64_t zeros_n = 0;
  for (double x : av) {
    if (x == 0) ++zeros_n;
    else EXPECT_NEAR(x, kept, 1e-6);
  }
  const double n = double(av.size()), frac = double(zeros_n) / n;
  EXPECT_NEAR(frac, p, 4 * std::sqrt(p * (1 - p) / n));
  // dropout_p = 1 drops everything.
  expect_close(scaled_dot_product_attention(q, k, v, {}, 1.0), std::vector<double>(av.size(), 0.0), 0, 0, "p = 1");
}

TEST(Attention, Errors) {
  Tensor q = zeros({1, 2, 3, 4}), k = zeros({1, 2, 5, 4}), v = zeros({1, 2, 5, 4});
  Tensor mask = ones({3, 5}, kBool);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v, mask, 0.0, true), Error);
  EXPECT_THROW(scaled_dot_product_attention(q, zeros({1, 2, 5, 3}), v), Error);  // head dims differ
  EXPECT_THROW(scaled_dot_product_attention(q, k, zeros({1, 2, 4, 4})), Error);  // key/value lengths differ
  EXPECT_THROW(scaled_dot_product_attention(q, k, v, {}, 1.5), Error);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v.to(kFloat64)), Error);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v, ones({4, 5}, kBool)), Error);  // mask can't broadcast
  EXPECT_THROW(scaled_dot_product_attention(zeros({1, 3, 3, 4}), k, v, {}, 0.0, false, std::nullopt, true), Error);
  EXPECT_THROW(scaled_dot_product_attention(zeros({3}), zeros({3}), zeros({3})), Error);
}

TEST(Attention, Gradcheck) {
  auto fn = [](bool causal, Tensor mask, std::optional<double> scale, bool gqa) {
    return [=](const TensorList& in) {
      return TensorList{scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, causal, scale, gqa)};
    };
  };
  expect_gradcheck(fn(false, {}, std::nullopt, false), {grad_input({1, 2, 3, 4}), grad_input({1, 2, 5, 4}), grad_input({1, 2, 5, 2})},
                   "no mask");
  expect_gradcheck(fn(true, {}, 0.7, false), {grad_input({2, 1, 5, 3}), grad_input({2, 1, 3, 3}), grad_input({2, 1, 3, 2})},
                   "causal L > S");
  Tensor fm = random_tensor({3, 4}, kFloat64);
  expect_gradcheck(fn(false, fm, std::nullopt, true), {grad_input({1, 4, 3, 2}), grad_input({1, 2, 4, 2}), grad_input({1, 2, 4, 3})},
                   "float mask gqa");
  // Non-contiguous q and v (transposes inside the function), broadcast batch of k.
  expect_gradcheck(
      [](const TensorList& in) {
        return TensorList{scaled_dot_product_attention(in[0].transpose(-1, -2), in[1], in[2].transpose(-1, -2), {}, 0.0, true)};
      },
      {grad_input({2, 2, 3, 4}), grad_input({1, 2, 4, 3}), grad_input({2, 2, 2, 4})}, "transposed + broadcast");
}

// The fast kernel on a problem large enough to thread, against the reference and the
// decomposition; then its derivative against the decomposition's gradients.
TEST(AttentionKernel, MatchesReferenceAndDecomposition) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (int variant : {0, 1, 2}) {  // causal, float mask (L, S), none with L != S
      const int64_t L = variant == 2 ? 100 : 128;
      const Sdpa p{2, 4, 4, L, 128, 32, 32};
      Inputs in = make_inputs(p, dt);
      std::vector<double> fv;
      Tensor fm = variant == 1 ? random_tensor({L, 128}, dt, &fv) : Tensor();
      auto bias = [&](int64_t, int64_t, int64_t i, int64_t j) { return fv[size_t(i * 128 + j)]; };
      Tensor y = scaled_dot_product_attention(in.q, in.k, in.v, fm, 0.0, variant == 0);
      ops::Args a{ops::OpId::scaled_dot_product_attention,
                  {in.q, in.k, in.v, fm, 0.0, variant == 0, ops::Arg(), false}};
      Tensor dec = ops::op_info(a.op).decomp(a).at(0);
      const std::string what = std::string("sdpa kernel ") + name(dt) + " variant " + std::to_string(variant);
      std::vector<double> ref = variant == 1 ? p.run(in.qv, in.kv, in.vv, 1 / std::sqrt(32.0), false, bias)
                                             : p.run(in.qv, in.kv, in.vv, 1 / std::sqrt(32.0), variant == 0);
      expect_close(y, ref, tol_of(dt), tol_of(dt), what);
      expect_close(y, dec.to_vector<double>(), tol_of(dt), tol_of(dt), what + " vs decomposition");
    }
}

TEST(AttentionKernel, GradMatchesDecomposition) {
  Tensor q = random_tensor({2, 4, 40, 8}, kFloat64), k = random_tensor({2, 2, 50, 8}, kFloat64),
         v = random_tensor({2, 2, 50, 6}, kFloat64), m = random_tensor({40, 50}, kFloat64);
  for (Tensor* t : {&q, &k, &v, &m}) t->requires_grad_();
  Tensor y = scaled_dot_product_attention(q, k, v, m, 0.0, false, 0.4, true);
  Tensor gy = random_tensor(y.sizes(), kFloat64);
  TensorList gk = grad({y}, {q, k, v, m}, {gy});
  ops::Args a{ops::OpId::scaled_dot_product_attention, {q, k, v, m, 0.0, false, 0.4, true}};
  TensorList gd = grad({ops::op_info(a.op).decomp(a).at(0)}, {q, k, v, m}, {gy});
  for (size_t i = 0; i < 4; ++i) expect_close(gk[i], gd[i].to_vector<double>(), 1e-10, 1e-12, "grad " + std::to_string(i));
}

TEST(AttentionKernel, NanPropagates) {
  Tensor q = zeros({1, 70, 4}), k = zeros({1, 90, 4}), v = ones({1, 90, 4});
  q.select(1, 3).slice(1, 1, 2).fill_(NAN);
  std::vector<double> y = scaled_dot_product_attention(q, k, v).to_vector<double>();
  for (size_t i = 0; i < y.size(); ++i) {
    if (i / 4 == 3) EXPECT_TRUE(std::isnan(y[i])) << i;
    else EXPECT_NEAR(y[i], 1.0, 1e-6) << i;
  }
}
