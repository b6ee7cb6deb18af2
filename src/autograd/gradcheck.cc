// Finite-difference gradient checking (torch.autograd.gradcheck, with a random output projection).
#include <kiln/autograd.h>
#include <kiln/ops.h>

#include <random>

#include "ops/dispatch.h"

namespace kiln {
namespace {

// <v, outputs> summed over the floating outputs, in float64.
double project(const TensorList& outs, const std::vector<std::vector<double>>& v) {
  double s = 0;
  size_t k = 0;
  for (const Tensor& o : outs) {
    if (!o.defined() || !is_floating(o.dtype())) continue;
    std::vector<double> vals = o.detach().to_vector<double>();
    for (size_t i = 0; i < vals.size(); ++i) s += vals[i] * v[k][i];
    ++k;
  }
  return s;
}

}  // namespace

bool gradcheck(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs,
               const GradcheckOptions& o, SourceLoc loc) {
  ops::CallSite site(loc);
  std::vector<size_t> wrt;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    KILN_CHECK_HINT(inputs[i].dtype() == kFloat64, "use float64 inputs for gradcheck",
                    "gradcheck: input ", i, " is ", name(inputs[i].dtype()));
    KILN_CHECK(inputs[i].is_contiguous() && inputs[i].is_leaf(), "gradcheck: input ", i,
               " must be a contiguous leaf tensor");
    wrt.push_back(i);
  }
  KILN_CHECK(!wrt.empty(), "gradcheck: no input requires grad");

  TensorList outs = fn(inputs);
  std::mt19937_64 rng(o.seed);
  std::normal_distribution<double> normal;
  std::vector<std::vector<double>> v;
  TensorList grad_outs, diff_outs;
  for (const Tensor& out : outs) {
    if (!out.defined() || !is_floating(out.dtype())) continue;
    std::vector<double> p(size_t(out.numel()));
    for (double& x : p) x = normal(rng);
    v.push_back(p);
    if (out.requires_grad()) {
      diff_outs.push_back(out);
      grad_outs.push_back(view(tensor(p, {int64_t(p.size())}, out.dtype()), out.sym_sizes()));  // 0-d too
    }
  }
  // Analytical: vector-Jacobian products through autograd.
  TensorList inputs_wrt;
  for (size_t i : wrt) inputs_wrt.push_back(inputs[i]);
  TensorList analytical;
  if (!diff_outs.empty())
    analytical = grad(diff_outs, inputs_wrt, grad_outs, false, false, /*allow_unused=*/true);
  else
    analytical.assign(wrt.size(), Tensor());

  // Numerical: perturb each element and difference the projected outputs.
  NoGradGuard no_grad;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& x = inputs[wrt[k]];
    double* data = x.data<double>();
    std::vector<double> an = analytical[k].defined() ? analytical[k].to_vector<double>()
                                                     : std::vector<double>(size_t(x.numel()), 0.0);
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double orig = data[j];
      data[j] = orig + o.eps;
      const double plus = project(fn(inputs), v);
      data[j] = orig - o.eps;
      const double minus = project(fn(inputs), v);
      data[j] = orig;
      const double num = (plus - minus) / (2 * o.eps);
      const double a = an[size_t(j)];
      if (!(std::abs(a - num) <= o.atol + o.rtol * std::abs(num)))
        detail::fail(detail::cat("gradcheck: Jacobian mismatch for input ", wrt[k], " element ", j,
                                 ": analytical ", a, " vs numerical ", num));
    }
  }
  return true;
}

}  // namespace kiln
