// Softmax and the normalization layers, decomposed into reductions and elementwise prims.
// 16-bit inputs compute in float32 and round once at the end, as PyTorch's CPU kernels do.
#include <kiln/grad_mode.h>

#include "ops/meta/nn_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;
using ops::cast_to;
using ops::check_normalized_shape;
using ops::num;
using ops::rms_norm_eps;
using ops::trailing_dims;
using ops::upcast;

// Input of softmax / log_softmax after the optional dtype cast; checks it is floating.
Tensor softmax_input(const Args& a, const char* op) {
  Tensor x = a.tensor(0);
  if (auto dt = a.opt_dtype(2)) x = cast_to(x, *dt);
  KILN_CHECK_HINT(is_floating(x.dtype()), "convert the input or pass dtype=kFloat32", op,
                  ": expected a floating point input, got ", name(x.dtype()));
  return x;
}

// x - max(x) along dim; the max is a constant for autograd (it cancels analytically).
Tensor shifted(const Tensor& x, int64_t dim) { return sub(x, amax(x.detach(), {dim}, true)); }

KILN_DECOMP(softmax) {
  Tensor x = softmax_input(a, "softmax");
  const int64_t dim = ops::wrap_dim(a.i64(1), x.dim());
  if (x.dim() > 0 && x.sym_size(dim) == 0) return {clone(x)};
  Tensor e = exp(shifted(upcast(x), dim));
  return {cast_to(div(e, sum(e, {dim}, true)), x.dtype())};
}

KILN_DECOMP(log_softmax) {
  Tensor x = softmax_input(a, "log_softmax");
  const int64_t dim = ops::wrap_dim(a.i64(1), x.dim());
  if (x.dim() > 0 && x.sym_size(dim) == 0) return {clone(x)};
  Tensor s = shifted(upcast(x), dim);
  return {cast_to(sub(s, log(sum(exp(s), {dim}, true))), x.dtype())};
}

// (x - mean) / sqrt(biased var + eps) over dims.
Tensor standardize(const Tensor& x, const std::vector<int64_t>& dims, double eps) {
  Tensor d = sub(x, mean(x, dims, true));
  return mul(d, rsqrt(add(mean(mul(d, d), dims, true), num(eps))));
}

KILN_DECOMP(layer_norm) {
  const Tensor& x = a.tensor(0);
  const SymShape& ns = a.symints(1);
  Tensor w = a.opt_tensor(2), b = a.opt_tensor(3);
  check_normalized_shape("layer_norm", x, ns, w, b);
  Tensor y = standardize(upcast(x), trailing_dims(x.dim(), int64_t(ns.size())), a.f64(4));
  if (w.defined()) y = mul(y, w);
  if (b.defined()) y = add(y, b);
  return {cast_to(y, x.dtype())};
}

KILN_DECOMP(rms_norm) {
  const Tensor& x = a.tensor(0);
  const SymShape& ns = a.symints(1);
  Tensor w = a.opt_tensor(2);
  check_normalized_shape("rms_norm", x, ns, w, Tensor());
  const double eps = rms_norm_eps(x.dtype(), a.opt_f64(3));
  Tensor xc = upcast(x);
  Tensor ms = mean(mul(xc, xc), trailing_dims(x.dim(), int64_t(ns.size())), true);
  // As PyTorch: normalized, rounded to the input's dtype, then scaled (type promotion applies).
  Tensor y = cast_to(mul(xc, rsqrt(add(ms, num(eps)))), x.dtype());
  return {w.defined() ? mul(y, w) : y};
}

// A per-channel parameter (C) shaped to broadcast against (N, C, *).
Tensor channel_view(const Tensor& p, int64_t ndim) {
  SymShape s(size_t(std::max<int64_t>(ndim - 1, 1)), SymInt(1));
  s[0] = p.sym_size(0);
  return reshape(p, s);
}

void check_channel_param(const char* op, const char* what, const Tensor& p, const SymInt& c) {
  if (!p.defined()) return;
  KILN_CHECK(p.dim() == 1 && p.sym_size(0) == c, op, ": expected ", what, " to be a 1-D tensor of size ", c,
             " (the number of channels), got shape ", shape_str(p.sym_sizes()));
}

Tensor affine(Tensor y, const Tensor& w, const Tensor& b, int64_t ndim) {
  if (w.defined()) y = mul(y, channel_view(w, ndim));
  if (b.defined()) y = add(y, channel_view(b, ndim));
  return y;
}

KILN_DECOMP(group_norm) {
  const Tensor& x = a.tensor(0);
  const int64_t g = a.i64(1);
  Tensor w = a.opt_tensor(2), b = a.opt_tensor(3);
  KILN_CHECK(x.dim() >= 2, "group_norm: expected an input with at least 2 dims (N, C, *), got ", x.dim());
  KILN_CHECK(is_floating(x.dtype()), "group_norm: expected a floating point input, got ", name(x.dtype()));
  const SymInt c = x.sym_size(1);
  KILN_CHECK(g > 0 && c % SymInt(g) == 0, "group_norm: expected number of channels in input to be divisible by num_groups, but got input of shape ",
             shape_str(x.sym_sizes()), " and num_groups=", g);
  check_channel_param("group_norm", "weight", w, c);
  check_channel_param("group_norm", "bias", b, c);
  SymInt per_group = floordiv(c, SymInt(g));
  for (int64_t d = 2; d < x.dim(); ++d) per_group = per_group * x.sym_size(d);
  Tensor xr = reshape(upcast(x), SymShape{x.sym_size(0), SymInt(g), per_group});
  Tensor y = reshape(standardize(xr, {2}, a.f64(4)), x.sym_sizes());
  return {cast_to(affine(y, w, b, x.dim()), x.dtype())};
}

KILN_DECOMP(instance_norm) {
  const Tensor& x = a.tensor(0);
  Tensor w = a.opt_tensor(1), b = a.opt_tensor(2);
  KILN_CHECK(x.dim() >= 3, "instance_norm: expected an input with at least 3 dims (N, C, *spatial), got ", x.dim());
  KILN_CHECK(is_floating(x.dtype()), "instance_norm: expected a floating point input, got ", name(x.dtype()));
  SymInt spatial = 1;
  for (int64_t d = 2; d < x.dim(); ++d) spatial = spatial * x.sym_size(d);
  KILN_CHECK(spatial != 1, "instance_norm: expected more than 1 spatial element when training, got input size ",
             shape_str(x.sym_sizes()));
  check_channel_param("instance_norm", "weight", w, x.sym_size(1));
  check_channel_param("instance_norm", "bias", b, x.sym_size(1));
  Tensor y = standardize(upcast(x), trailing_dims(x.dim(), x.dim() - 2), a.f64(3));
  return {cast_to(affine(y, w, b, x.dim()), x.dtype())};
}

KILN_DECOMP(batch_norm) {
  const Tensor& x = a.tensor(0);
  Tensor rm = a.opt_tensor(1), rv = a.opt_tensor(2), w = a.opt_tensor(3), b = a.opt_tensor(4);
  const bool training = a.b(5);
  const double momentum = a.f64(6), eps = a.f64(7);
  KILN_CHECK(x.dim() >= 2, "batch_norm: expected an input with at least 2 dims (N, C, *), got ", x.dim());
  KILN_CHECK(is_floating(x.dtype()), "batch_norm: expected a floating point input, got ", name(x.dtype()));
  const SymInt c = x.sym_size(1);
  check_channel_param("batch_norm", "weight", w, c);
  check_channel_param("batch_norm", "bias", b, c);
  check_channel_param("batch_norm", "running_mean", rm, c);
  check_channel_param("batch_norm", "running_var", rv, c);
  std::vector<int64_t> dims{0};
  SymInt n = x.sym_size(0);
  for (int64_t d = 2; d < x.dim(); ++d) {
    dims.push_back(d);
    n = n * x.sym_size(d);
  }
  Tensor xc = upcast(x);
  Tensor y;
  if (training) {
    KILN_CHECK_HINT(n != 1, "use a batch of more than one sample, or eval mode",
                    "batch_norm: expected more than 1 value per channel when training, got input size ",
                    shape_str(x.sym_sizes()));
    Tensor mu = mean(xc, dims, true);
    Tensor d = sub(xc, mu);
    Tensor var = mean(mul(d, d), dims, true);
    y = mul(d, rsqrt(add(var, num(eps))));
    NoGradGuard no_grad;  // the running statistics are buffers, not part of the graph
    const double nn = double(n.hint());
    if (rm.defined())
      copy_(rm, add(mul(rm, num(1 - momentum)), mul(reshape(mu.detach(), {-1}), num(momentum))));
    if (rv.defined()) {
      Tensor unbiased = mul(reshape(var.detach(), {-1}), num(nn / std::max(nn - 1, 1.0)));
      copy_(rv, add(mul(rv, num(1 - momentum)), mul(unbiased, num(momentum))));
    }
  } else {
    KILN_CHECK_HINT(rm.defined() && rv.defined(), "pass running_mean and running_var, or training=true",
                    "batch_norm: running_mean and running_var must be defined in evaluation mode");
    Tensor m = channel_view(upcast(rm), x.dim()), v = channel_view(upcast(rv), x.dim());
    y = mul(sub(xc, m), rsqrt(add(v, num(eps))));
  }
  return {cast_to(affine(y, w, b, x.dim()), x.dtype())};
}

}  // namespace
}  // namespace kiln::decomp
