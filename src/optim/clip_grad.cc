// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_).
#include <kiln/optim.h>

#include <cmath>

#include "ops/dispatch.h"

namespace kiln::nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite,
                       SourceLoc loc) {
  ops::CallSite site(loc);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return scalar_tensor(0.0, kFloat32);
  // The norm of the per-gradient norms equals the norm over all elements (max for inf).
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) norms.push_back(norm(g, norm_type));
  const DType dt = result_type(norms);
  for (Tensor& n : norms) n = n.to(dt);
  Tensor total = norm(stack(norms), norm_type);
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    KILN_CHECK_HINT(std::isfinite(t), "pass error_if_nonfinite=false to skip this check (the gradients then become nan)",
                    "clip_grad_norm_: the total norm of order ", norm_type,
                    " of the gradients is non-finite (", t, "), so it cannot be clipped");
  }
  Tensor coef = clamp(div(scalar_tensor(max_norm, dt), add(total, 1e-6)), std::nullopt, 1.0);
  for (Tensor& g : grads) g.mul_(coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value, SourceLoc loc) {
  ops::CallSite site(loc);
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    if (!p.defined()) continue;
    Tensor g = p.grad();
    if (g.defined()) g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace kiln::nn::utils
