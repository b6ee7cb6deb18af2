// Optimizers, LR schedulers and gradient clipping vs float64 references written here from the
// update rules in PyTorch's documentation (plain loops, no kiln ops).
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/optim.h>

#include <cmath>
#include <cstdio>
#include <numbers>

#include "support/test_util.h"

using namespace kiln;
using namespace kiln::optim;
using kiln::test::expect_close;
using kiln::test::random_tensor;
using kiln::test::random_values;

namespace {

using Vec = std::vector<double>;

double rtol_for(DType dt) { return dt == kFloat64 ? 1e-11 : dt == kFloat32 ? 2e-5 : 3e-2; }
double atol_for(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 2e-6 : 3e-2; }

// A parameter (leaf, requires grad) with random values in the given layout; its values in *vals.
Tensor make_param(const Shape& shape, DType dt, Vec* vals, const std::string& layout = "contiguous") {
  Tensor p = random_tensor(shape, dt, vals, layout);
  p.requires_grad_();
  return p;
}

// Sets p's gradient to `g` (rounded to p's dtype) and returns the rounded values.
Vec give_grad(Tensor& p, const Vec& g) {
  Tensor t = tensor(g, p.sizes(), p.dtype());
  p.set_grad(t);
  return t.to_vector<double>();
}

// ------------------------------------------------------------------ references (PyTorch docs)
struct SgdRef {
  explicit SgdRef(const SGDOptions& o) : o(o) {}
  SGDOptions o;
  Vec buf;
  void step(Vec& theta, const Vec& grad) {
    if (buf.empty() && o.momentum != 0) buf.assign(theta.size(), 0), first = true;
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = o.maximize ? -grad[i] : grad[i];
      if (o.weight_decay != 0) g += o.weight_decay * theta[i];
      if (o.momentum != 0) {
        buf[i] = first ? g : o.momentum * buf[i] + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
      }
      theta[i] -= o.lr * g;
    }
    first = false;
  }
  bool first = false;
};

struct AdamRef {
  double lr, b1, b2, eps, wd;
  bool amsgrad, maximize, decoupled;
  Vec m, v, vmax;
  int t = 0;
  template <class O>
  static AdamRef from(const O& o, bool decoupled) {
    return {o.lr, o.betas[0], o.betas[1], o.eps, o.weight_decay, o.amsgrad, o.maximize, decoupled, {}, {}, {}, 0};
  }
  void step(Vec& theta, const Vec& grad) {
    if (m.empty()) m.assign(theta.size(), 0), v = m, vmax = m;
    ++t;
    for (size_t i = 0; i < theta.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (decoupled) theta[i] -= lr * wd * theta[i];
      else g += wd * theta[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double mhat = m[i] / (1 - std::pow(b1, t));
      double vhat = v[i] / (1 - std::pow(b2, t));
      if (amsgrad) {
        vmax[i] = std::max(vmax[i], v[i]);
        vhat = vmax[i] / (1 - std::pow(b2, t));
      }
      theta[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  }
};

// Gradients for `steps` steps whose size changes from step to step (so amsgrad's max matters).
std::vector<Vec> grad_sequence(int64_t n, int steps) {
  const double scale[] = {3.0, 0.5, 1.5, 0.1, 2.0};
  std::vector<Vec> out;
  for (int s = 0; s < steps; ++s) {
    Vec g = random_values(n);
    for (double& x : g) x *= scale[s % 5];
    out.push_back(g);
  }
  return out;
}

// Steps `opt` over one parameter with the given gradients and compares with `ref` after each step.
template <class Ref>
void check_steps(Optimizer& opt, Tensor& p, Vec theta, Ref ref, const std::vector<Vec>& grads,
                 const std::string& what) {
  const DType dt = p.dtype();
  for (size_t s = 0; s < grads.size(); ++s) {
    Vec g = give_grad(p, grads[s]);
    opt.step();
    ref.step(theta, g);
    expect_close(p, theta, rtol_for(dt), atol_for(dt), what + " step " + std::to_string(s + 1));
    if (dt != kFloat64) theta = p.to_vector<double>();  // follow the dtype's rounding
  }
}

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "kiln_optim_" + name + "_" + std::to_string(::getpid()) + ".safetensors";
}

}  // namespace

// ------------------------------------------------------------------------------------ SGD
TEST(OptimSGD, MatchesDocumentedUpdate) {
  const std::vector<std::pair<std::string, SGDOptions>> cases = {
      {"plain", {.lr = 0.1}},
      {"momentum", {.lr = 0.1, .momentum = 0.9}},
      {"dampening", {.lr = 0.05, .momentum = 0.8, .dampening = 0.3}},
      {"nesterov", {.lr = 0.1, .momentum = 0.9, .nesterov = true}},
      {"weight_decay", {.lr = 0.1, .weight_decay = 0.2}},
      {"momentum+wd", {.lr = 0.1, .momentum = 0.5, .weight_decay = 0.1}},
      {"maximize", {.lr = 0.1, .maximize = true}},
      {"maximize+nesterov+wd", {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.05, .nesterov = true, .maximize = true}},
  };
  for (DType dt : {kFloat64, kFloat32, kBFloat16})
    for (const auto& [name, o] : cases) {
      Vec theta;
      Tensor p = make_param({3, 4}, dt, &theta, dt == kFloat32 ? "transposed" : "contiguous");
      SGD opt({p}, o);
      check_steps(opt, p, theta, SgdRef{o}, grad_sequence(12, 5), "SGD " + name + " " + kiln::name(dt));
    }
}

TEST(OptimSGD, DefaultsAndStridedParam) {
  SGD opt({zeros({2}).requires_grad_()});
  EXPECT_EQ(opt.defaults().lr, 1e-3);
  EXPECT_EQ(opt.defaults().momentum, 0);
  Vec theta;
  Tensor p = make_param({6}, kFloat64, &theta, "strided");
  SGDOptions o{.lr = 0.3, .momentum = 0.7};
  SGD opt2({p}, o);
  check_steps(opt2, p, theta, SgdRef{o}, grad_sequence(6, 3), "SGD strided");
}

// ----------------------------------------------------------------------------- Adam / AdamW
TEST(OptimAdam, MatchesDocumentedUpdate) {
  const std::vector<std::pair<std::string, AdamOptions>> cases = {
      {"default", {.lr = 0.1}},
      {"betas", {.lr = 0.05, .betas = {0.8, 0.95}, .eps = 1e-6}},
      {"weight_decay", {.lr = 0.1, .weight_decay = 0.3}},
      {"amsgrad", {.lr = 0.1, .amsgrad = true}},
      {"amsgrad_fast_beta2", {.lr = 0.1, .betas = {0.9, 0.9}, .amsgrad = true}},
      {"maximize", {.lr = 0.1, .maximize = true}},
      {"all", {.lr = 0.1, .betas = {0.5, 0.9}, .weight_decay = 0.1, .amsgrad = true, .maximize = true}},
  };
  for (DType dt : {kFloat64, kFloat32, kFloat16})
    for (const auto& [name, o] : cases) {
      Vec theta;
      Tensor p = make_param({2, 5}, dt, &theta, dt == kFloat32 ? "transposed" : "contiguous");
      Adam opt({p}, o);
      check_steps(opt, p, theta, AdamRef::from(o, false), grad_sequence(10, 5), "Adam " + name + " " + kiln::name(dt));
    }
}

TEST(OptimAdam, AmsgradDiffersFromAdamWhenGradientsShrink) {
  // Guards the test above: with shrinking gradients the running max changes the result.
  Vec theta = {1.0}, t2 = theta;
  const AdamOptions o{.lr = 0.1, .betas = {0.9, 0.9}};
  AdamOptions ams = o;
  ams.amsgrad = true;
  AdamRef a = AdamRef::from(o, false), b = AdamRef::from(ams, false);
  for (double g : {3.0, 0.1, 0.1}) a.step(theta, {g}), b.step(t2, {g});
  EXPECT_GT(std::abs(theta[0] - t2[0]), 1e-3);
}

TEST(OptimAdamW, MatchesDocumentedUpdate) {
  const std::vector<std::pair<std::string, AdamWOptions>> cases = {
      {"default", {.lr = 0.1}},
      {"weight_decay", {.lr = 0.1, .weight_decay = 0.5}},
      {"amsgrad", {.lr = 0.05, .betas = {0.9, 0.8}, .amsgrad = true}},
      {"maximize", {.lr = 0.1, .weight_decay = 0.2, .maximize = true}},
      {"no_decay", {.lr = 0.1, .weight_decay = 0}},
  };
  for (DType dt : {kFloat64, kFloat32, kBFloat16})
    for (const auto& [name, o] : cases) {
      Vec theta;
      Tensor p = make_param({4, 3}, dt, &theta, dt == kFloat32 ? "transposed" : "contiguous");
      AdamW opt({p}, o);
      check_steps(opt, p, theta, AdamRef::from(o, true), grad_sequence(12, 4), "AdamW " + name + " " + kiln::name(dt));
    }
}

TEST(OptimAdam, FusedStepEqualsOpSequence) {
  // A contiguous float parameter takes the one-pass update; the same values in a strided layout
  // take the op sequence. Both must give the same bits, every option on, over several steps.
  const AdamWOptions w{.lr = 0.05, .betas = {0.8, 0.95}, .eps = 1e-6, .weight_decay = 0.3};
  AdamWOptions wa = w;
  wa.amsgrad = wa.maximize = true;
  const AdamOptions l2{.lr = 0.05, .weight_decay = 0.2, .amsgrad = true};
  for (DType dt : {kFloat32, kFloat64})
    for (int which = 0; which < 3; ++which) {
      Vec theta;
      Tensor strided = make_param({6, 7}, dt, &theta, "strided");
      Tensor contig = tensor(theta, {6, 7}, dt).requires_grad_();
      auto make = [&](Tensor& p) -> std::unique_ptr<Optimizer> {
        if (which == 2) return std::make_unique<Adam>(std::vector<Tensor>{p}, l2);
        return std::make_unique<AdamW>(std::vector<Tensor>{p}, which == 0 ? w : wa);
      };
      auto a = make(contig), b = make(strided);
      for (const Vec& g : grad_sequence(42, 6)) {
        give_grad(contig, g);
        give_grad(strided, g);
        a->step();
        b->step();
        ASSERT_EQ(contig.to_vector<double>(), strided.to_vector<double>()) << which << " " << name(dt);
      }
      for (const char* key : {"exp_avg", "exp_avg_sq"})
        EXPECT_EQ(a->state(0).at(key).to_vector<double>(), b->state(0).at(key).to_vector<double>()) << key;
    }
}

TEST(OptimAdamW, DesignatedInitializersAndDefaults) {
  Tensor p = zeros({2}).requires_grad_();
  AdamW opt({p}, {.lr = 3e-4, .weight_decay = 0.1});
  EXPECT_EQ(opt.options(0).lr, 3e-4);
  EXPECT_EQ(opt.options(0).weight_decay, 0.1);
  EXPECT_EQ(opt.options(0).betas[1], 0.999);
  AdamW d({zeros({1}).requires_grad_()});
  EXPECT_EQ(d.defaults().weight_decay, 1e-2);
  EXPECT_EQ(d.defaults().eps, 1e-8);
  Adam a({zeros({1}).requires_grad_()});
  EXPECT_EQ(a.defaults().weight_decay, 0);
  EXPECT_EQ(a.lr(0), 1e-3);
}

// ------------------------------------------------------------------------- groups, skipping
TEST(OptimGroups, DifferentOptionsPerGroup) {
  Vec t0, t1, t2;
  Tensor p0 = make_param({3}, kFloat64, &t0), p1 = make_param({2, 2}, kFloat64, &t1), p2 = make_param({4}, kFloat64, &t2);
  SGDOptions o0{.lr = 0.1}, o1{.lr = 0.01, .momentum = 0.9, .weight_decay = 0.1};
  SGD sgd({p0}, o0);
  sgd.add_param_group({p1, p2}, o1);
  ASSERT_EQ(sgd.num_param_groups(), 2u);
  EXPECT_EQ(sgd.lr(1), 0.01);
  SgdRef r0{o0}, r1{o1}, r2{o1};
  for (int s = 0; s < 4; ++s) {
    Vec g0 = give_grad(p0, random_values(3)), g1 = give_grad(p1, random_values(4)), g2 = give_grad(p2, random_values(4));
    sgd.step();
    r0.step(t0, g0), r1.step(t1, g1), r2.step(t2, g2);
    expect_close(p0, t0, 1e-12, 1e-12, "group 0");
    expect_close(p1, t1, 1e-12, 1e-12, "group 1 p1");
    expect_close(p2, t2, 1e-12, 1e-12, "group 1 p2");
  }
  // set_lr on one group only.
  sgd.set_lr(0, 0.5);
  EXPECT_EQ(sgd.lr(0), 0.5);
  EXPECT_EQ(sgd.lr(1), 0.01);

  // A group added with the construction-time options (Adam), the other with its own lr.
  Vec a0, a1;
  Tensor q0 = make_param({3}, kFloat64, &a0), q1 = make_param({3}, kFloat64, &a1);
  AdamOptions d{.lr = 0.1};
  Adam adam({q0}, d);
  AdamOptions o = adam.defaults();
  o.lr = 0.02;
  adam.add_param_group({q1}, o);
  AdamRef ra = AdamRef::from(d, false), rb = AdamRef::from(o, false);
  for (int s = 0; s < 3; ++s) {
    Vec g0 = give_grad(q0, random_values(3)), g1 = give_grad(q1, random_values(3));
    adam.step();
    ra.step(a0, g0), rb.step(a1, g1);
  }
  expect_close(q0, a0, 1e-11, 1e-12, "adam group 0");
  expect_close(q1, a1, 1e-11, 1e-12, "adam group 1");
}

TEST(OptimGroups, SkipsParametersWithoutGradients) {
  Vec t0, t1;
  Tensor p0 = make_param({3}, kFloat64, &t0), p1 = make_param({3}, kFloat64, &t1);
  AdamOptions o{.lr = 0.1};
  Adam opt({p0, p1}, o);
  AdamRef r0 = AdamRef::from(o, false), r1 = AdamRef::from(o, false);
  Vec g = give_grad(p0, random_values(3));
  opt.step();  // p1 has no gradient: unchanged, no state
  r0.step(t0, g);
  expect_close(p1, t1, 0, 0, "p1 untouched");
  EXPECT_TRUE(opt.state(1).empty());
  EXPECT_EQ(opt.state(p0).at("step").item<double>(), 1.0);
  Vec g0 = give_grad(p0, random_values(3)), g1 = give_grad(p1, random_values(3));
  opt.step();
  r0.step(t0, g0), r1.step(t1, g1);
  expect_close(p0, t0, 1e-11, 1e-12, "p0");
  expect_close(p1, t1, 1e-11, 1e-12, "p1 first step");  // its own step count starts at 1
  EXPECT_EQ(opt.state(0).at("step").item<double>(), 2.0);
  EXPECT_EQ(opt.state(1).at("step").item<double>(), 1.0);
  EXPECT_EQ(opt.state(0).at("step").dtype(), kFloat32);

  // SGD with momentum: no buffer for a parameter that never had a gradient.
  SGD sgd({p0, p1}, {.lr = 0.1, .momentum = 0.9});
  p1.set_grad(Tensor());
  sgd.step();
  EXPECT_TRUE(sgd.state(0).count("momentum_buffer"));
  EXPECT_TRUE(sgd.state(1).empty());
}

TEST(OptimGroups, ZeroSizeParameters) {
  Tensor e = zeros({0, 3}).requires_grad_(), p = ones({2}).requires_grad_();
  e.set_grad(zeros({0, 3}));
  p.set_grad(ones({2}));
  AdamW adam({e, p}, {.lr = 0.1, .amsgrad = true});
  Tensor e2 = zeros({0}).requires_grad_();
  e2.set_grad(zeros({0}));
  SGD sgd({e2}, {.lr = 0.1, .momentum = 0.9});
  sgd.step();
  sgd.step();
  EXPECT_EQ(sgd.state(0).at("momentum_buffer").numel(), 0);
  adam.step();
  adam.step();
  EXPECT_EQ(e.sizes(), (Shape{0, 3}));
  EXPECT_EQ(adam.state(0).at("exp_avg").sizes(), (Shape{0, 3}));
  EXPECT_LT(p.to_vector<double>()[0], 1.0);
  EXPECT_THROW(adam.options(2), Error);
}

TEST(OptimGroups, ZeroGrad) {
  Tensor p = zeros({2, 3}).requires_grad_(), q = zeros({2}).requires_grad_();
  SGD opt({p, q});
  (p.sum() * 2).backward();
  ASSERT_TRUE(p.grad().defined());
  EXPECT_FALSE(q.grad().defined());
  opt.zero_grad(false);
  ASSERT_TRUE(p.grad().defined());
  expect_close(p.grad(), Vec(6, 0.0), 0, 0, "zeroed");
  EXPECT_FALSE(q.grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

TEST(OptimGroups, StepWithClosure) {
  Tensor p = tensor<double>({1.0, -2.0}).requires_grad_();
  SGD opt({p}, {.lr = 0.25});
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = (p * p).sum();
    l.backward();
    return l;
  });
  EXPECT_DOUBLE_EQ(loss.item<double>(), 5.0);
  expect_close(p, {1.0 - 0.25 * 2.0, -2.0 + 0.25 * 4.0}, 1e-15, 0, "closure step");
  EXPECT_FALSE(p.grad_fn_name().size());
}

TEST(OptimGroups, InvalidConstruction) {
  Tensor p = zeros({2}).requires_grad_();
  EXPECT_THROW(SGD({}, {}), Error);
  EXPECT_THROW(SGD({p * 2}, {}), Error);                            // non-leaf
  EXPECT_THROW(SGD({zeros({2}, kInt64)}, {}), Error);               // not floating
  EXPECT_THROW(SGD({p, p}, {}), Error);                             // twice
  EXPECT_THROW(SGD({Tensor()}, {}), Error);                         // undefined
  EXPECT_THROW(SGD({p}, {.lr = -1}), Error);
  EXPECT_THROW(SGD({p}, {.momentum = -0.1}), Error);
  EXPECT_THROW(SGD({p}, {.weight_decay = -1}), Error);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .nesterov = true}), Error);     // nesterov without momentum
  EXPECT_THROW(SGD({p}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}), Error);
  EXPECT_THROW(Adam({p}, {.betas = {1.0, 0.999}}), Error);
  EXPECT_THROW(Adam({p}, {.betas = {0.9, -0.1}}), Error);
  EXPECT_THROW(Adam({p}, {.eps = -1}), Error);
  EXPECT_THROW(AdamW({p}, {.weight_decay = -0.1}), Error);
  SGD opt({p});
  EXPECT_THROW(opt.add_param_group({p}), Error);                    // already in group 0
  EXPECT_THROW(opt.add_param_group({zeros({1}).requires_grad_()}, {.lr = -2}), Error);
  EXPECT_EQ(opt.num_param_groups(), 1u);
  EXPECT_THROW(opt.lr(3), Error);
  EXPECT_THROW(opt.state(5), Error);
  EXPECT_THROW(opt.state(zeros({2})), Error);
}

// ---------------------------------------------------------------------------- state_dict
namespace {

// Runs `steps` steps of opt with the given gradient sequence offset.
void run(Optimizer& opt, std::vector<Tensor>& ps, const std::vector<std::vector<Vec>>& grads, size_t from, size_t to) {
  for (size_t s = from; s < to; ++s) {
    for (size_t i = 0; i < ps.size(); ++i) give_grad(ps[i], grads[i][s]);
    opt.step();
  }
}

std::vector<Tensor> clones(const std::vector<Tensor>& ps) {
  std::vector<Tensor> out;
  for (const Tensor& p : ps) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

template <class Opt, class O>
void check_round_trip(const O& o0, const O& o1, bool through_file, const std::string& what) {
  Vec unused;
  std::vector<Tensor> ps = {make_param({2, 3}, kFloat32, &unused), make_param({4}, kFloat32, &unused),
                            make_param({3}, kFloat32, &unused)};
  std::vector<std::vector<Vec>> grads = {grad_sequence(6, 5), grad_sequence(4, 5), grad_sequence(3, 5)};
  Opt a({ps[0], ps[1]}, o0);
  a.add_param_group({ps[2]}, o1);
  run(a, ps, grads, 0, 2);
  TensorMap sd = a.state_dict();
  EXPECT_TRUE(sd.count("param_groups.0.lr"));
  EXPECT_EQ(sd.at("param_groups.1.lr").dim(), 0);
  EXPECT_EQ(sd.at("param_groups.1.lr").item<double>(), o1.lr);
  if (through_file) {
    const std::string path = temp_path(what);
    save_safetensors(sd, path);
    sd = load_safetensors(path);
    std::remove(path.c_str());
  }
  std::vector<Tensor> qs = clones(ps);
  O other = o0;
  other.lr = 123;  // overwritten by the load
  Opt b({qs[0], qs[1]}, other);
  b.add_param_group({qs[2]}, other);
  b.load_state_dict(sd);
  EXPECT_EQ(b.lr(0), o0.lr);
  EXPECT_EQ(b.lr(1), o1.lr);
  run(a, ps, grads, 2, 5);
  run(b, qs, grads, 2, 5);
  for (size_t i = 0; i < ps.size(); ++i)
    expect_close(qs[i], ps[i].to_vector<double>(), 0, 0, what + " param " + std::to_string(i));
  // The loaded state is a copy: stepping b did not change the dict it was loaded from.
  for (const auto& [k, t] : a.state_dict()) EXPECT_TRUE(b.state_dict().count(k)) << k;
}

}  // namespace

TEST(OptimStateDict, RoundTrip) {
  check_round_trip<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true}, SGDOptions{.lr = 0.01, .momentum = 0.5},
                        false, "sgd");
  check_round_trip<Adam>(AdamOptions{.lr = 0.1, .amsgrad = true}, AdamOptions{.lr = 0.05, .betas = {0.8, 0.9}}, false,
                         "adam");
  check_round_trip<AdamW>(AdamWOptions{.lr = 0.1}, AdamWOptions{.lr = 0.02, .weight_decay = 0.3, .amsgrad = true},
                          false, "adamw");
}

TEST(OptimStateDict, RoundTripThroughSafetensors) {
  check_round_trip<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9}, SGDOptions{.lr = 0.01, .maximize = true}, true, "sgd");
  check_round_trip<AdamW>(AdamWOptions{.lr = 0.1, .amsgrad = true}, AdamWOptions{.lr = 0.02, .betas = {0.7, 0.8}},
                          true, "adamw");
}

TEST(OptimStateDict, Layout) {
  Tensor p = zeros({2, 2}).requires_grad_(), q = zeros({3}).requires_grad_();
  Adam opt({p, q}, {.lr = 0.1, .amsgrad = true});
  p.set_grad(ones({2, 2}));
  opt.step();
  TensorMap sd = opt.state_dict();
  std::vector<std::string> keys;
  for (const auto& [k, t] : sd) keys.push_back(k);
  const std::vector<std::string> want = {
      "param_groups.0.amsgrad", "param_groups.0.betas", "param_groups.0.eps", "param_groups.0.lr",
      "param_groups.0.maximize", "param_groups.0.params", "param_groups.0.weight_decay", "state.0.exp_avg",
      "state.0.exp_avg_sq", "state.0.max_exp_avg_sq", "state.0.step"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(sd.at("state.0.step").dim(), 0);
  EXPECT_EQ(sd.at("state.0.step").item<double>(), 1.0);
  EXPECT_EQ(sd.at("param_groups.0.params").to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sd.at("param_groups.0.betas").to_vector<double>(), (Vec{0.9, 0.999}));
  EXPECT_EQ(sd.at("param_groups.0.amsgrad").dtype(), kBool);
  EXPECT_EQ(sd.at("state.0.exp_avg").sizes(), (Shape{2, 2}));
  // A scheduler's initial_lr is saved with the group.
  StepLR sched(opt, 2);
  EXPECT_EQ(opt.state_dict().at("param_groups.0.initial_lr").item<double>(), 0.1);
}

TEST(OptimStateDict, MismatchedLoadsThrowAndChangeNothing) {
  Tensor p = zeros({2, 2}).requires_grad_(), q = zeros({3}).requires_grad_();
  Adam adam({p, q}, {.lr = 0.1});
  p.set_grad(ones({2, 2}));
  q.set_grad(ones({3}));
  adam.step();
  const TensorMap good = adam.state_dict();

  Adam target({p.detach().clone().requires_grad_(), q.detach().clone().requires_grad_()}, {.lr = 0.5});
  auto expect_rejected = [&](TensorMap sd, const std::string& what) {
    EXPECT_THROW(target.load_state_dict(sd), Error) << what;
    EXPECT_EQ(target.lr(0), 0.5) << what;
    EXPECT_TRUE(target.state(0).empty()) << what;
  };
  TensorMap sd = good;
  sd.erase("param_groups.0.eps");
  expect_rejected(sd, "missing option");
  sd = good;
  sd["param_groups.0.momentum"] = scalar_tensor(0.9, kFloat64);
  expect_rejected(sd, "option of another optimizer");
  sd = good;
  sd["state.0.momentum_buffer"] = zeros({2, 2});
  expect_rejected(sd, "state of another optimizer");
  sd = good;
  sd["state.0.exp_avg"] = zeros({4});
  expect_rejected(sd, "state shape");
  sd = good;
  sd["state.7.exp_avg"] = zeros({2, 2});
  expect_rejected(sd, "unknown parameter id");
  sd = good;
  sd["param_groups.0.params"] = tensor<int64_t>({0});
  expect_rejected(sd, "group size");
  sd = good;
  sd["param_groups.1.params"] = tensor<int64_t>({5});
  expect_rejected(sd, "group count");
  sd = good;
  sd["something"] = zeros({1});
  expect_rejected(sd, "unexpected key");
  sd = good;
  sd["param_groups.0.lr"] = scalar_tensor(-1.0, kFloat64);
  expect_rejected(sd, "invalid option value");
  sd = good;
  sd["param_groups.0.lr"] = zeros({2});
  expect_rejected(sd, "option not 0-d");
  sd = good;
  sd["param_groups.0.betas"] = zeros({3});
  expect_rejected(sd, "betas size");

  // Across optimizers: SGD's dict into Adam and Adam's into SGD.
  SGD sgd({p.detach().clone().requires_grad_(), q.detach().clone().requires_grad_()}, {.momentum = 0.9});
  EXPECT_THROW(sgd.load_state_dict(good), Error);
  expect_rejected(sgd.state_dict(), "SGD dict");
  // A different number of groups.
  Adam one({p.detach().clone().requires_grad_()});
  one.add_param_group({q.detach().clone().requires_grad_()});
  EXPECT_THROW(one.load_state_dict(good), Error);
}

// ---------------------------------------------------------------------------- schedulers
namespace {

Tensor dummy() { return zeros({1}).requires_grad_(); }

// lr sequence of `sched` over epochs 0..n-1 (epoch 0 is the value after construction).
std::vector<Vec> lr_sequence(LRScheduler& sched, Optimizer& opt, int n) {
  std::vector<Vec> out;
  for (int e = 0; e < n; ++e) {
    if (e > 0) {
      opt.step();
      sched.step();
    }
    out.push_back(sched.get_last_lr());
    for (size_t g = 0; g < opt.num_param_groups(); ++g) EXPECT_EQ(opt.lr(g), out.back()[g]);
  }
  return out;
}

void expect_lrs(const std::vector<Vec>& got, const std::function<double(int, double)>& want, const Vec& bases,
                const std::string& what) {
  for (size_t e = 0; e < got.size(); ++e)
    for (size_t g = 0; g < bases.size(); ++g)
      EXPECT_NEAR(got[e][g], want(int(e), bases[g]), 1e-12 * bases[g]) << what << " epoch " << e << " group " << g;
}

double cosine(int e, double base, double eta_min, int T) {
  return eta_min + (base - eta_min) * (1 + std::cos(std::numbers::pi * e / T)) / 2;
}

}  // namespace

TEST(OptimScheduler, StepLR) {
  SGD opt({dummy()}, {.lr = 0.1});
  opt.add_param_group({dummy()}, {.lr = 0.4});
  StepLR s(opt, 3, 0.5);
  EXPECT_EQ(s.base_lrs(), (Vec{0.1, 0.4}));
  expect_lrs(lr_sequence(s, opt, 11), [](int e, double b) { return b * std::pow(0.5, e / 3); }, {0.1, 0.4}, "StepLR");
}

TEST(OptimScheduler, LinearLR) {
  SGD opt({dummy()}, {.lr = 0.2});
  opt.add_param_group({dummy()}, {.lr = 1.0});
  LinearLR s(opt, 0.25, 1.0, 4);
  expect_lrs(lr_sequence(s, opt, 8),
             [](int e, double b) { return b * (0.25 + 0.75 * std::min(e, 4) / 4.0); }, {0.2, 1.0}, "LinearLR warmup");
  SGD opt2({dummy()}, {.lr = 0.5});
  LinearLR decay(opt2, 1.0, 0.1, 5);
  expect_lrs(lr_sequence(decay, opt2, 8), [](int e, double b) { return b * (1.0 - 0.9 * std::min(e, 5) / 5.0); },
             {0.5}, "LinearLR decay");
}

TEST(OptimScheduler, CosineAnnealingLR) {
  SGD opt({dummy()}, {.lr = 0.1});
  opt.add_param_group({dummy()}, {.lr = 0.03});
  CosineAnnealingLR s(opt, 5, 0.01);
  // Past T_max the cosine continues (period 2 * T_max), as in PyTorch.
  expect_lrs(lr_sequence(s, opt, 14), [](int e, double b) { return cosine(e, b, 0.01, 5); }, {0.1, 0.03}, "cosine");
}

TEST(OptimScheduler, WarmupThenCosine) {
  const int W = 3, T = 10;
  const double eta_min = 1e-4;
  auto want = [&](int e, double b) {
    if (e < W) return b * (0.1 + 0.9 * e / double(W));
    return cosine(e - W, b, eta_min, T - W);
  };
  {
    AdamW opt({dummy()}, {.lr = 6e-4});
    auto warm = std::make_shared<LinearLR>(opt, 0.1, 1.0, W);
    auto cos = std::make_shared<CosineAnnealingLR>(opt, T - W, eta_min);
    SequentialLR s(opt, {warm, cos}, {W});
    expect_lrs(lr_sequence(s, opt, T + 1), want, {6e-4}, "SequentialLR");
  }
  {
    AdamW opt({dummy()}, {.lr = 6e-4});
    opt.add_param_group({dummy()}, {.lr = 1e-3});
    auto s = warmup_cosine(opt, W, T, eta_min, 0.1);
    expect_lrs(lr_sequence(*s, opt, T + 1), want, {6e-4, 1e-3}, "warmup_cosine");
  }
}

TEST(OptimScheduler, ChainedSchedulersMultiply) {
  SGD opt({dummy()}, {.lr = 1.0});
  StepLR a(opt, 2, 0.5);
  LinearLR b(opt, 0.5, 1.0, 4);
  for (int e = 0; e < 9; ++e) {
    if (e > 0) a.step(), b.step();
    const double want = std::pow(0.5, e / 2) * (0.5 + 0.5 * std::min(e, 4) / 4.0);
    EXPECT_NEAR(opt.lr(0), want, 1e-12) << "epoch " << e;
  }
}

TEST(OptimScheduler, ResumeFromStateDicts) {
  // Train 4 steps, checkpoint optimizer + scheduler through safetensors, resume in fresh objects:
  // the lrs continue as in an uninterrupted run (checked against the closed form).
  const int W = 3, T = 12;
  const double base = 0.1, eta_min = 1e-3;
  auto want = [&](int e) { return e < W ? base * (0.2 + 0.8 * e / double(W)) : cosine(e - W, base, eta_min, T - W); };
  AdamW opt({dummy()}, {.lr = base});
  auto sched = warmup_cosine(opt, W, T, eta_min, 0.2);
  for (int e = 1; e <= 4; ++e) opt.step(), sched->step();
  const std::string po = temp_path("sched_opt"), ps = temp_path("sched");
  save_safetensors(opt.state_dict(), po);
  save_safetensors(sched->state_dict(), ps);

  AdamW opt2({dummy()}, {.lr = base});
  auto sched2 = warmup_cosine(opt2, W, T, eta_min, 0.2);
  opt2.load_state_dict(load_safetensors(po));
  sched2->load_state_dict(load_safetensors(ps));
  std::remove(po.c_str());
  std::remove(ps.c_str());
  EXPECT_EQ(sched2->last_epoch(), 4);
  EXPECT_NEAR(opt2.lr(0), want(4), 1e-12);
  for (int e = 5; e <= T; ++e) {
    opt2.step(), sched2->step();
    EXPECT_NEAR(opt2.lr(0), want(e), 1e-12) << "epoch " << e;
    EXPECT_EQ(sched2->get_last_lr()[0], opt2.lr(0));
  }

  // Mismatches throw and leave the scheduler as it was.
  StepLR step(opt2, 2);
  TensorMap sd = step.state_dict();
  sd["base_lrs"] = tensor<double>({0.1, 0.2});
  EXPECT_THROW(step.load_state_dict(sd), Error);
  sd = step.state_dict();
  sd["gamma"] = scalar_tensor(0.5);
  EXPECT_THROW(step.load_state_dict(sd), Error);
  sd = sched2->state_dict();
  sd["schedulers.2.last_epoch"] = scalar_tensor(int64_t(1));
  EXPECT_THROW(sched2->load_state_dict(sd), Error);
  sd = sched2->state_dict();
  sd.erase("schedulers.1.step_count");
  sd["last_epoch"] = scalar_tensor(int64_t(99));
  sd["schedulers.0.last_epoch"] = scalar_tensor(int64_t(99));
  EXPECT_THROW(sched2->load_state_dict(sd), Error);
  EXPECT_EQ(sched2->last_epoch(), T);
  EXPECT_EQ(sched2->state_dict().at("schedulers.0.last_epoch").item<int64_t>(), W - 1);
  EXPECT_EQ(sched2->state_dict().at("schedulers.1.last_epoch").item<int64_t>(), T - W);
}

TEST(OptimScheduler, InvalidArguments) {
  SGD opt({dummy()}, {.lr = 0.1});
  SGD other({dummy()}, {.lr = 0.1});
  EXPECT_THROW(StepLR(opt, 0), Error);
  EXPECT_THROW(CosineAnnealingLR(opt, 0), Error);
  EXPECT_THROW(LinearLR(opt, 0.0, 1.0, 3), Error);
  EXPECT_THROW(LinearLR(opt, 0.5, 1.5, 3), Error);
  EXPECT_THROW(LinearLR(opt, 0.5, 1.0, 0), Error);
  auto s1 = std::make_shared<StepLR>(opt, 2);
  auto s2 = std::make_shared<StepLR>(other, 2);
  EXPECT_THROW(SequentialLR(opt, {s1, s2}, {2}), Error);                  // another optimizer
  EXPECT_THROW(SequentialLR(opt, {s1}, {2}), Error);                      // milestones count
  EXPECT_THROW(SequentialLR(opt, {}, {}), Error);
  EXPECT_THROW(warmup_cosine(opt, 5, 5), Error);
}

// ---------------------------------------------------------------------------- clipping
TEST(OptimClip, ClipGradNorm) {
  for (double norm_type : {2.0, 1.0, 3.0, double(INFINITY)})
    for (double max_norm : {0.5, 1e6})
      for (DType dt : {kFloat64, kFloat32}) {
        Vec unused, ga, gb;
        Tensor a = make_param({3, 4}, dt, &unused), b = make_param({5}, dt, &unused), c = make_param({2}, dt, &unused);
        a.set_grad(random_tensor({3, 4}, dt, &ga, "transposed"));
        b.set_grad(random_tensor({5}, dt, &gb));
        // c has no gradient and is ignored.
        double total = 0;
        for (const Vec* g : {&ga, &gb})
          for (double x : *g)
            total = std::isinf(norm_type) ? std::max(total, std::abs(x)) : total + std::pow(std::abs(x), norm_type);
        if (!std::isinf(norm_type)) total = std::pow(total, 1 / norm_type);
        const double coef = std::min(1.0, max_norm / (total + 1e-6));
        Tensor got = nn::utils::clip_grad_norm_({a, b, c}, max_norm, norm_type);
        const std::string what = "norm " + std::to_string(norm_type) + " max " + std::to_string(max_norm) + " " +
                                 kiln::name(dt);
        EXPECT_EQ(got.dim(), 0);
        EXPECT_NEAR(got.item<double>(), total, rtol_for(dt) * total) << what;
        Vec wa = ga, wb = gb;
        for (double& x : wa) x *= coef;
        for (double& x : wb) x *= coef;
        expect_close(a.grad(), wa, rtol_for(dt), atol_for(dt), what + " a");
        expect_close(b.grad(), wb, rtol_for(dt), atol_for(dt), what + " b");
        EXPECT_FALSE(c.grad().defined());
        if (max_norm < 1) {
          // After clipping the norm is max_norm (up to the 1e-6).
          EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 1e9, norm_type).item<double>(), max_norm, 1e-5) << what;
        }
      }
}

TEST(OptimClip, ClipGradNormEdgeCases) {
  Tensor p = zeros({3}).requires_grad_();
  EXPECT_EQ(nn::utils::clip_grad_norm_({p}, 1.0).item<double>(), 0.0);  // no gradients
  p.set_grad(tensor<float>({1.0f, NAN, 0.0f}));
  EXPECT_THROW(nn::utils::clip_grad_norm_({p}, 1.0, 2.0, true), Error);
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_({p}, 1.0).item<double>()));
  Tensor e = zeros({0, 3}).requires_grad_();
  e.set_grad(zeros({0, 3}));
  EXPECT_EQ(nn::utils::clip_grad_norm_({e}, 1.0).item<double>(), 0.0);
}

TEST(OptimClip, ClipGradValue) {
  Vec unused, g;
  Tensor p = make_param({4, 3}, kFloat32, &unused), q = make_param({2}, kFloat32, &unused);
  p.set_grad(random_tensor({4, 3}, kFloat32, &g, "transposed"));
  nn::utils::clip_grad_value_({p, q}, 0.7);
  for (double& x : g) x = std::clamp(x, -0.7, 0.7);
  expect_close(p.grad(), g, 1e-7, 1e-7, "clip value");
  EXPECT_FALSE(q.grad().defined());
}

// ---------------------------------------------------------------------------- end to end
TEST(OptimEndToEnd, AdamWMinimizesAQuadratic) {
  // f(x) = sum_i w_i (x_i - c_i)^2 with minimum at c.
  const Vec c = {1.5, -2.0, 0.5, 3.0}, w = {1.0, 4.0, 0.5, 2.0};
  Tensor x = zeros({4}).requires_grad_();
  Tensor ct = tensor(c, {4}, kFloat32), wt = tensor(w, {4}, kFloat32);
  AdamW opt({x}, {.lr = 0.05, .weight_decay = 1e-4});
  auto sched = warmup_cosine(opt, 20, 600, 1e-3 * 0.05);
  double first = 0, last = 0;
  for (int it = 0; it < 600; ++it) {
    opt.zero_grad();
    Tensor loss = (wt * (x - ct) * (x - ct)).sum();
    loss.backward();
    if (it == 0) first = loss.item<double>();
    last = loss.item<double>();
    opt.step();
    sched->step();
  }
  EXPECT_LT(last, 1e-4 * first);
  expect_close(x, c, 0, 5e-3, "minimum");
}
