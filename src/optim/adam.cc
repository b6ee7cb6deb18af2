// Adam (L2 weight decay folded into the gradient) and AdamW (decoupled weight decay), with
// amsgrad and maximize (torch.optim.Adam / torch.optim.AdamW).
#include <kiln/optim.h>

#include <cmath>

#include "core/element.h"
#include "core/tensor_impl.h"
#include "ops/dispatch.h"
#include "scalar/scalar.h"

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

// The update of adam_update below in one pass over the elements, for the common eager case (real
// contiguous float32/float64 CPU tensors, no capture, not capturable): each element goes through
// the same scalar operations in the same order and precision as that op sequence (the numbers
// rounded to the tensors' dtype first, as a wrapped number is), so the results are the same, without
// its ~12 full passes with a temporary each. The options are template flags: no branch on them in
// the loop. (CMakeLists.txt builds this file with -fno-math-errno, so that sqrt vectorizes.)
template <class T>
struct AdamScalars {
  T decay, wd, b1, one_b1, b2, one_b2, sqrt_bc2, eps, step_size;
};
struct AdamBuffers {
  void *p, *m, *v, *vmax;
  const void* grad;
  int64_t n;
};
template <class T, bool MAXIMIZE, bool SHRINK, bool L2, bool AMSGRAD>
void adam_loop(const AdamBuffers& b, const AdamScalars<T>& c) {
  using namespace scalar;
  T* __restrict p = static_cast<T*>(b.p);
  T* __restrict m = static_cast<T*>(b.m);
  T* __restrict v = static_cast<T*>(b.v);
  T* __restrict vmax = static_cast<T*>(b.vmax);
  const T* __restrict grad = static_cast<const T*>(b.grad);
  for (int64_t i = 0; i < b.n; ++i) {
    T g = MAXIMIZE ? neg(grad[i]) : grad[i];
    T pi = p[i];
    if constexpr (SHRINK) pi = mul(pi, c.decay);
    if constexpr (L2) g = add(g, mul(pi, c.wd));
    const T mi = add(mul(m[i], c.b1), mul(g, c.one_b1));
    const T vi = add(mul(v[i], c.b2), mul(mul(g, g), c.one_b2));
    T dv = vi;
    if constexpr (AMSGRAD) dv = vmax[i] = maximum(vmax[i], vi);
    const T denom = add(div(scalar::sqrt(dv), c.sqrt_bc2), c.eps);
    p[i] = add(pi, mul(div(mi, denom), c.step_size));
    m[i] = mi;
    v[i] = vi;
  }
}
// adam_loop with the runtime flags as its template flags, one at a time.
template <class T, bool... Flags, class... Rest>
void adam_dispatch(const AdamBuffers& b, const AdamScalars<T>& c, bool flag, Rest... rest) {
  if (flag) adam_dispatch<T, Flags..., true>(b, c, rest...);
  else adam_dispatch<T, Flags..., false>(b, c, rest...);
}
template <class T, bool... Flags>
void adam_dispatch(const AdamBuffers& b, const AdamScalars<T>& c) {
  adam_loop<T, Flags...>(b, c);
}

template <class O>
bool adam_update_fused(const Tensor& p, const Tensor& grad, ParamState& st, const O& o, bool decoupled, double t) {
  const Tensor &m = st["exp_avg"], &v = st["exp_avg_sq"];
  const Tensor vmax = o.amsgrad ? st["max_exp_avg_sq"] : Tensor();
  for (const Tensor* x : {&p, &grad, &m, &v, &vmax}) {
    if (!x->defined()) continue;
    if (x->is_fake() || !x->device().is_cpu() || x->dtype() != p.dtype() || !x->is_contiguous() ||
        x->numel() != p.numel())
      return false;
  }
  if (ops::dispatch_mode() || !p.is_leaf() || grad.shares_storage(p) || (p.dtype() != kFloat32 && p.dtype() != kFloat64))
    return false;
  const double bc1 = 1 - std::pow(o.betas[0], t), bc2 = 1 - std::pow(o.betas[1], t);
  visit_all(p.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const AdamScalars<T> c{T(1 - o.lr * o.weight_decay), T(o.weight_decay), T(o.betas[0]), T(1 - o.betas[0]),
                             T(o.betas[1]), T(1 - o.betas[1]), T(std::sqrt(bc2)), T(o.eps), T(-o.lr / bc1)};
      const AdamBuffers b{p.data_ptr(), m.data_ptr(), v.data_ptr(), vmax.defined() ? vmax.data_ptr() : nullptr,
                          grad.data_ptr(), p.numel()};
      const bool decay = o.weight_decay != 0;
      adam_dispatch<T>(b, c, o.maximize, decay && decoupled, decay && !decoupled, o.amsgrad);
    }
  });
  for (const Tensor* x : {&p, &m, &v, &vmax})  // in-place writes, as the ops' (saved-tensor checks)
    if (x->defined()) x->impl()->storage->version++;
  return true;
}

// One Adam update of p; `decoupled` selects AdamW's weight decay. `lr` is the group's lr as a
// tensor when o.capturable (Optimizer::lr_tensor), else undefined.
template <class O>
void adam_update(Tensor& p, ParamState& st, const O& o, bool decoupled, const Tensor& lr) {
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
  if (!o.capturable && adam_update_fused(p, p.grad(), st, o, decoupled, step.item<double>())) return;
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
