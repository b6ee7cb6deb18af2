// Adam (L2 weight decay folded into the gradient) and AdamW (decoupled weight decay), with
// amsgrad and maximize (torch.optim.Adam / torch.optim.AdamW).
#include <kiln/optim.h>

#include <cmath>

#include "ops/dispatch.h"

namespace kiln::optim {

namespace {

template <class O>
void check_adam(const char* who, const O& o) {
  KILN_CHECK(o.lr >= 0, who, ": invalid learning rate ", o.lr);
  KILN_CHECK(o.eps >= 0, who, ": invalid epsilon ", o.eps);
  KILN_CHECK(o.betas[0] >= 0 && o.betas[0] < 1, who, ": invalid beta parameter at index 0: ", o.betas[0]);
  KILN_CHECK(o.betas[1] >= 0 && o.betas[1] < 1, who, ": invalid beta parameter at index 1: ", o.betas[1]);
  KILN_CHECK(o.weight_decay >= 0, who, ": invalid weight_decay ", o.weight_decay);
}

// One Adam update of p; `decoupled` selects AdamW's weight decay. `lr` is the group's lr as a
// tensor when o.capturable (Optimizer::lr_tensor), else undefined.
template <class O>
void adam_update(Tensor& p, ParamState& st, const O& o, bool decoupled, const Tensor& lr) {
  Tensor g = p.grad();
  if (o.maximize) g = neg(g);
  if (o.weight_decay != 0) {
    if (decoupled) {
      if (o.capturable) p.mul_(rsub(mul(lr, o.weight_decay), 1.0));
      else p.mul_(1 - o.lr * o.weight_decay);
    } else {
      g = add(g, mul(p, o.weight_decay));
    }
  }
  Tensor& step = st["step"];
  Tensor& m = st["exp_avg"];
  Tensor& v = st["exp_avg_sq"];
  {
    // State is made real even inside a compile() trace, so the compiled step binds it as an input.
    ops::SuspendDispatchMode real;
    if (!step.defined()) step = scalar_tensor(0.0, kFloat32);
    if (!m.defined()) m = zeros_like(p);
    if (!v.defined()) v = zeros_like(p);
    if (o.amsgrad && !st["max_exp_avg_sq"].defined()) st["max_exp_avg_sq"] = zeros_like(p);
  }
  step.add_(1);
  const double b1 = o.betas[0], b2 = o.betas[1];
  m.mul_(b1).add_(mul(g, 1 - b1));
  v.mul_(b2).addcmul_(g, g, 1 - b2);
  // The running max is of the uncorrected v; the bias correction of step t applies to it.
  Tensor denom_v = v;
  if (o.amsgrad) {
    Tensor& vmax = st["max_exp_avg_sq"];
    vmax.copy_from(maximum(vmax, v));
    denom_v = vmax;
  }
  if (o.capturable) {  // 1 - b^t in float64 tensors: no host read of the step
    Tensor t = step.to(kFloat64);
    Tensor bc1 = rsub(pow(full_like(t, b1), t), 1.0);
    Tensor bc2 = rsub(pow(full_like(t, b2), t), 1.0);
    Tensor denom = sqrt(denom_v).div_(sqrt(bc2)).add_(o.eps);
    p.sub_(div(m, denom).mul_(div(lr, bc1)));
    return;
  }
  const double t = step.item<double>();
  const double bc1 = 1 - std::pow(b1, t);
  const double bc2 = 1 - std::pow(b2, t);
  Tensor denom = sqrt(denom_v).div_(std::sqrt(bc2)).add_(o.eps);
  p.addcdiv_(m, denom, -o.lr / bc1);
}

}  // namespace

void AdamOptions::check() const { check_adam("Adam", *this); }
void AdamWOptions::check() const { check_adam("AdamW", *this); }

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options, SourceLoc loc)
    : OptimizerWithOptions("Adam", {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}, std::move(params), options,
                           loc) {}

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options, SourceLoc loc)
    : OptimizerWithOptions("AdamW", {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}, std::move(params), options,
                           loc) {}

void Adam::step_impl() {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const size_t base = first_index(g);
    const Tensor lr = options_[g].capturable ? lr_tensor(g) : Tensor();
    for (size_t j = 0; j < groups_[g].params.size(); ++j)
      if (groups_[g].params[j].grad().defined()) adam_update(groups_[g].params[j], state_[base + j], options_[g], false, lr);
  }
}

void AdamW::step_impl() {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const size_t base = first_index(g);
    const Tensor lr = options_[g].capturable ? lr_tensor(g) : Tensor();
    for (size_t j = 0; j < groups_[g].params.size(); ++j)
      if (groups_[g].params[j].grad().defined()) adam_update(groups_[g].params[j], state_[base + j], options_[g], true, lr);
  }
}

}  // namespace kiln::optim
