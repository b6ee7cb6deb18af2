// Adadelta, Adagrad, RMSprop, NAdam and RAdam (torch.optim's): per-coordinate step sizes from
// running averages of the gradient and its square. The formulas are in include/kiln/optim.h.
#include <kiln/optim.h>

#include <cmath>

#include "ops/dispatch.h"

namespace kiln::optim {

namespace {

// The update's gradient: negated if maximize, with L2 weight decay unless decoupled (then p
// shrinks by lr * weight_decay first, AdamW-style).
template <class O>
Tensor decayed_grad(Tensor& p, const O& o, bool decoupled = false) {
  Tensor g = p.grad();
  if (o.maximize) g = neg(g);
  if (o.weight_decay == 0) return g;
  if (decoupled) {
    p.mul_(1 - o.lr * o.weight_decay);
    return g;
  }
  return add(g, mul(p, o.weight_decay));
}

// state[name], made (zeros like p, or `fill`) on the parameter's first step; real even inside a
// compile() trace, as Adam's state.
Tensor& state_tensor(ParamState& st, const char* name, const Tensor& p, double fill = 0) {
  Tensor& t = st[name];
  if (!t.defined()) {
    ops::SuspendDispatchMode real;
    t = fill == 0 ? zeros_like(p) : full_like(p, fill);
  }
  return t;
}

// state[name] as a 0-d float32 tensor (torch's "step", "mu_product"), `init` on the first step.
Tensor& state_scalar(ParamState& st, const char* name, double init) {
  Tensor& t = st[name];
  if (!t.defined()) {
    ops::SuspendDispatchMode real;
    t = scalar_tensor(init, kFloat32);
  }
  return t;
}

// Counts the step and returns the new count.
int64_t next_step(ParamState& st) {
  Tensor& step = state_scalar(st, "step", 0);
  step.add_(1);
  return int64_t(step.item<double>());
}

// a = b a + (1 - b) x, a += (1 - b) x^2: the running averages every optimizer here keeps.
void average(Tensor& a, const Tensor& x, double b) { a.mul_(b).add_(mul(x, 1 - b)); }
void average_sq(Tensor& a, const Tensor& x, double b) { a.mul_(b).addcmul_(x, x, 1 - b); }

template <class O>
void check_adam_like(const char* who, const O& o) {
  KILN_CHECK(o.lr >= 0, who, ": invalid learning rate ", o.lr);
  KILN_CHECK(o.eps >= 0, who, ": invalid epsilon ", o.eps);
  KILN_CHECK(o.betas[0] >= 0 && o.betas[0] < 1, who, ": invalid beta parameter at index 0: ", o.betas[0]);
  KILN_CHECK(o.betas[1] >= 0 && o.betas[1] < 1, who, ": invalid beta parameter at index 1: ", o.betas[1]);
  KILN_CHECK(o.weight_decay >= 0, who, ": invalid weight_decay ", o.weight_decay);
}

}  // namespace

// ------------------------------------------------------------------------------------ Adadelta
void AdadeltaOptions::check() const {
  KILN_CHECK(lr >= 0, "Adadelta: invalid learning rate ", lr);
  KILN_CHECK(rho >= 0 && rho <= 1, "Adadelta: invalid rho ", rho, " (expected 0 <= rho <= 1)");
  KILN_CHECK(eps >= 0, "Adadelta: invalid epsilon ", eps);
  KILN_CHECK(weight_decay >= 0, "Adadelta: invalid weight_decay ", weight_decay);
}

Adadelta::Adadelta(std::vector<Tensor> params, const AdadeltaOptions& options, SourceLoc loc)
    : OptimizerWithOptions("Adadelta", {"step", "square_avg", "acc_delta"}, std::move(params), options, loc) {}

void Adadelta::step_impl() {
  for_each_param([](Tensor& p, ParamState& st, const AdadeltaOptions& o) {
    Tensor g = decayed_grad(p, o);
    Tensor& sq = state_tensor(st, "square_avg", p);
    Tensor& acc = state_tensor(st, "acc_delta", p);
    next_step(st);
    average_sq(sq, g, o.rho);
    Tensor delta = mul(div(sqrt(add(acc, o.eps)), sqrt(add(sq, o.eps))), g);
    average_sq(acc, delta, o.rho);
    p.sub_(mul(delta, o.lr));
  });
}

// ------------------------------------------------------------------------------------- Adagrad
void AdagradOptions::check() const {
  KILN_CHECK(lr >= 0, "Adagrad: invalid learning rate ", lr);
  KILN_CHECK(lr_decay >= 0, "Adagrad: invalid lr_decay ", lr_decay);
  KILN_CHECK(weight_decay >= 0, "Adagrad: invalid weight_decay ", weight_decay);
  KILN_CHECK(initial_accumulator_value >= 0, "Adagrad: invalid initial_accumulator_value ", initial_accumulator_value);
  KILN_CHECK(eps >= 0, "Adagrad: invalid epsilon ", eps);
}

// The state is made here, as torch's Adagrad makes it (a state_dict before the first step has it).
Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options, SourceLoc loc)
    : OptimizerWithOptions("Adagrad", {"step", "sum"}, std::move(params), options, loc) {
  for (size_t i = 0; i < groups_[0].params.size(); ++i) {
    state_scalar(state_[i], "step", 0);
    state_tensor(state_[i], "sum", groups_[0].params[i], options.initial_accumulator_value);
  }
}

void Adagrad::step_impl() {
  for_each_param([](Tensor& p, ParamState& st, const AdagradOptions& o) {
    Tensor g = decayed_grad(p, o);
    Tensor& sum = state_tensor(st, "sum", p, o.initial_accumulator_value);
    const int64_t t = next_step(st);
    const double clr = o.lr / (1 + double(t - 1) * o.lr_decay);
    sum.addcmul_(g, g, 1.0);
    p.sub_(mul(div(g, add(sqrt(sum), o.eps)), clr));
  });
}

// ------------------------------------------------------------------------------------- RMSprop
void RMSpropOptions::check() const {
  KILN_CHECK(lr >= 0, "RMSprop: invalid learning rate ", lr);
  KILN_CHECK(eps >= 0, "RMSprop: invalid epsilon ", eps);
  KILN_CHECK(momentum >= 0, "RMSprop: invalid momentum ", momentum);
  KILN_CHECK(weight_decay >= 0, "RMSprop: invalid weight_decay ", weight_decay);
  KILN_CHECK(alpha >= 0, "RMSprop: invalid alpha ", alpha);
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options, SourceLoc loc)
    : OptimizerWithOptions("RMSprop", {"step", "square_avg", "momentum_buffer", "grad_avg"}, std::move(params), options,
                           loc) {}

void RMSprop::step_impl() {
  for_each_param([](Tensor& p, ParamState& st, const RMSpropOptions& o) {
    Tensor g = decayed_grad(p, o);
    Tensor& sq = state_tensor(st, "square_avg", p);
    next_step(st);
    average_sq(sq, g, o.alpha);
    Tensor avg;
    if (o.centered) {
      Tensor& ga = state_tensor(st, "grad_avg", p);
      average(ga, g, o.alpha);
      avg = add(sqrt(sub(sq, mul(ga, ga))), o.eps);
    } else {
      avg = add(sqrt(sq), o.eps);
    }
    if (o.momentum > 0) {
      Tensor& buf = state_tensor(st, "momentum_buffer", p);
      buf.mul_(o.momentum).add_(div(g, avg));
      p.sub_(mul(buf, o.lr));
    } else {
      p.sub_(mul(div(g, avg), o.lr));
    }
  });
}

// --------------------------------------------------------------------------------------- NAdam
void NAdamOptions::check() const {
  check_adam_like("NAdam", *this);
  KILN_CHECK(momentum_decay >= 0, "NAdam: invalid momentum_decay ", momentum_decay);
}

NAdam::NAdam(std::vector<Tensor> params, const NAdamOptions& options, SourceLoc loc)
    : OptimizerWithOptions("NAdam", {"step", "mu_product", "exp_avg", "exp_avg_sq"}, std::move(params), options, loc) {}

void NAdam::step_impl() {
  for_each_param([](Tensor& p, ParamState& st, const NAdamOptions& o) {
    Tensor g = decayed_grad(p, o, o.decoupled_weight_decay);
    Tensor& m = state_tensor(st, "exp_avg", p);
    Tensor& v = state_tensor(st, "exp_avg_sq", p);
    Tensor& mu_product = state_scalar(st, "mu_product", 1);
    const double t = double(next_step(st));
    const double b1 = o.betas[0], b2 = o.betas[1];
    const double mu = b1 * (1.0 - 0.5 * std::pow(0.96, t * o.momentum_decay));
    const double mu_next = b1 * (1.0 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay));
    mu_product.mul_(mu);  // kept in float32, as torch's
    const double prod = mu_product.item<double>();
    average(m, g, b1);
    average_sq(v, g, b2);
    Tensor denom = add(sqrt(div(v, 1 - std::pow(b2, t))), o.eps);
    p.sub_(mul(div(g, denom), o.lr * (1 - mu) / (1 - prod)));
    p.sub_(mul(div(m, denom), o.lr * mu_next / (1 - prod * mu_next)));
  });
}

// --------------------------------------------------------------------------------------- RAdam
void RAdamOptions::check() const { check_adam_like("RAdam", *this); }

RAdam::RAdam(std::vector<Tensor> params, const RAdamOptions& options, SourceLoc loc)
    : OptimizerWithOptions("RAdam", {"step", "exp_avg", "exp_avg_sq"}, std::move(params), options, loc) {}

void RAdam::step_impl() {
  for_each_param([](Tensor& p, ParamState& st, const RAdamOptions& o) {
    Tensor g = decayed_grad(p, o, o.decoupled_weight_decay);
    Tensor& m = state_tensor(st, "exp_avg", p);
    Tensor& v = state_tensor(st, "exp_avg_sq", p);
    const double t = double(next_step(st));
    const double b1 = o.betas[0], b2 = o.betas[1];
    average(m, g, b1);
    average_sq(v, g, b2);
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    Tensor corrected = div(m, bc1);
    const double rho_inf = 2 / (1 - b2) - 1;
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / bc2;
    if (rho_t > 5.0) {  // the variance is tractable: the rectified adaptive step
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      Tensor adaptive = mul(reciprocal(add(sqrt(v), o.eps)), std::sqrt(bc2));
      p.sub_(mul(mul(corrected, adaptive), o.lr * rect));
    } else {
      p.sub_(mul(corrected, o.lr));
    }
  });
}

}  // namespace kiln::optim
