// Reductions defined by other reductions.
#include <cmath>
#include <limits>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

// Number of elements each output of a reduction over `dims` combines.
SymInt reduced_count(const Tensor& x, const std::optional<std::vector<int64_t>>& dims) {
  SymInt n = 1;
  const SymShape s = x.sym_sizes();
  std::optional<std::vector<int64_t>> d = dims;
  if (d && d->empty()) d.reset();
  for (int64_t i : ops::wrap_dims(d, x.dim())) n = n * s[size_t(i)];
  return n;
}

// float16 and bfloat16 are reduced in float32 and the result rounded once, as PyTorch's kernels
// accumulate: in their own range a sum (or the element count) overflows, in their own precision
// it stalls.
DType compute_dtype(DType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }
Tensor as_dtype(const Tensor& t, DType dt) { return t.dtype() == dt ? t : convert_element_type(t, dt); }

KILN_DECOMP(mean) {
  const Tensor& x = a.tensor(0);
  auto dt = a.opt_dtype(3);
  DType out_dt = dt.value_or(x.dtype());
  KILN_CHECK_HINT(is_floating(out_dt), "convert it first, e.g. x.to(kFloat32), or pass dtype=",
                  "mean(): could not infer output dtype; the input dtype must be floating point, got ", name(out_dt));
  Tensor s = sum(x, a.opt_ints(1) ? IntList(*a.opt_ints(1)) : IntList(std::nullopt), a.b(2), compute_dtype(out_dt));
  return {as_dtype(div(s, ops::scalar_to_tensor(Scalar(reduced_count(x, a.opt_ints(1)).hint()))), out_dt)};
}

// all / any: dim=None reduces every dim, an empty dim list none (each element's truth), as in
// PyTorch (unlike sum, whose [] still means all dims); uint8 stays uint8, as PyTorch documents.
Tensor truth_reduce(const Args& a, bool all_of) {
  const Tensor& x = a.tensor(0);
  auto dims = a.opt_ints(1);
  Tensor zero = ops::scalar_to_tensor(Scalar(int64_t(0)));
  Tensor r;
  if (dims && dims->empty()) {
    r = ne(x, zero);
  } else {
    Tensor hits = all_of ? eq(x, zero) : ne(x, zero);  // all: no zero; any: some nonzero
    Tensor n = sum(hits, dims ? IntList(*dims) : IntList(std::nullopt), a.b(2));
    r = all_of ? eq(n, zero) : gt(n, zero);
  }
  return x.dtype() == kUInt8 ? convert_element_type(r, kUInt8) : r;
}
KILN_DECOMP(any) { return {truth_reduce(a, false)}; }
KILN_DECOMP(all) { return {truth_reduce(a, true)}; }

Tensor zero_i64() { return ops::scalar_to_tensor(Scalar(int64_t(0))); }
using ops::num;
IntList dims_arg(const Args& a, size_t i) { return a.opt_ints(i) ? IntList(*a.opt_ints(i)) : IntList(std::nullopt); }

// ---------------------------------------------------------------- max / min
KILN_DECOMP(max) { return {amax(a.tensor(0))}; }
KILN_DECOMP(min) { return {amin(a.tensor(0))}; }
KILN_DECOMP(max_dim) {
  const Tensor& x = a.tensor(0);
  return {amax(x, {a.i64(1)}, a.b(2)), argmax(x, a.i64(1), a.b(2))};
}
KILN_DECOMP(min_dim) {
  const Tensor& x = a.tensor(0);
  return {amin(x, {a.i64(1)}, a.b(2)), argmin(x, a.i64(1), a.b(2))};
}

// s^q (q > 0) whose gradient is 0 where s is 0, like PyTorch's norm and std backwards: the
// derivative there is infinite (q < 1) and inf * 0 would give NaN. pow reads s through a where()
// that feeds it 1 at the zeros, so no gradient flows into them.
Tensor zero_safe_pow(const Tensor& s, double q) {
  Tensor zero = eq(s, num(0));
  Tensor safe = where(zero, num(1), s);
  return where(zero, num(0), q == 0.5 ? sqrt(safe) : pow(safe, num(q)));
}

// ---------------------------------------------------------------- var / std
void check_floating(const Tensor& x, const char* op) {
  KILN_CHECK_HINT(is_floating(x.dtype()), "convert it first, e.g. x.to(kFloat32)", op,
                  ": only supports floating point dtypes, got ", name(x.dtype()));
}

// (var, mean) with `correction` (default 1): sum((x - mean)^2) / max(0, N - correction), in the
// input's compute dtype.
std::vector<Tensor> var_and_mean(const Args& a, const char* op) {
  check_floating(a.tensor(0), op);
  const Tensor x = as_dtype(a.tensor(0), compute_dtype(a.tensor(0).dtype()));
  IntList dims = dims_arg(a, 1);
  const double corr = a.opt_f64(2).value_or(1.0);
  const bool keepdim = a.b(3);
  Tensor m = mean(x, dims, true);
  Tensor d = sub(x, m);
  Tensor ss = sum(mul(d, d), dims, keepdim);
  const double n = double(reduced_count(x, a.opt_ints(1)).hint());
  Tensor v = div(ss, num(std::max(0.0, n - corr)));
  return {v, keepdim ? m : mean(x, dims, false)};
}
KILN_DECOMP(var) { return {as_dtype(var_and_mean(a, "var")[0], a.tensor(0).dtype())}; }
KILN_DECOMP(std) { return {as_dtype(zero_safe_pow(var_and_mean(a, "std")[0], 0.5), a.tensor(0).dtype())}; }
KILN_DECOMP(var_mean) {
  std::vector<Tensor> vm = var_and_mean(a, "var_mean");
  return {as_dtype(vm[0], a.tensor(0).dtype()), as_dtype(vm[1], a.tensor(0).dtype())};
}

// ---------------------------------------------------------------- norm
Tensor norm_impl(const Args& a, const Tensor& x);
KILN_DECOMP(norm) {
  check_floating(a.tensor(0), "norm");
  const DType dt = a.tensor(0).dtype();
  return {as_dtype(norm_impl(a, as_dtype(a.tensor(0), compute_dtype(dt))), dt)};
}
Tensor norm_impl(const Args& a, const Tensor& x) {
  const double p = a.opt_scalar(1) ? a.opt_scalar(1)->to_double() : 2.0;
  IntList dims = dims_arg(a, 2);
  const bool keepdim = a.b(3);
  Tensor ax = abs(x);
  if (p == 2) return zero_safe_pow(sum(mul(x, x), dims, keepdim), 0.5);
  if (p == 1) return sum(ax, dims, keepdim);
  if (std::isinf(p)) {
    // max/min of |x|; an empty reduction is 0 for inf, like PyTorch's vector_norm.
    return p > 0 ? amax(ax, dims, keepdim) : amin(ax, dims, keepdim);
  }
  if (p == 0) return sum(convert_element_type(ne(x, num(0)), x.dtype()), dims, keepdim);
  // |x|^p for 0 < p < 1 has an infinite slope at 0: zero elements get a 0 gradient (PyTorch's).
  Tensor powered = p > 0 ? zero_safe_pow(ax, p) : pow(ax, num(p));
  Tensor total = sum(powered, dims, keepdim);
  return p > 0 ? zero_safe_pow(total, 1.0 / p) : pow(total, num(1.0 / p));
}

// ---------------------------------------------------------------- logsumexp
Tensor logsumexp_impl(const Args& a, Tensor x);
KILN_DECOMP(logsumexp) {
  const DType in = a.tensor(0).dtype(), dt = is_floating(in) ? in : default_float_dtype();
  return {as_dtype(logsumexp_impl(a, as_dtype(a.tensor(0), compute_dtype(dt))), dt)};
}
Tensor logsumexp_impl(const Args& a, Tensor x) {
  IntList dims = IntList(a.ints(1));
  const bool keepdim = a.b(2);
  if (x.numel() == 0) return log(sum(exp(x), dims, keepdim));  // -inf, no max to take
  // Shift by the max for stability; an infinite max (all -inf, or +inf) is replaced by 0 so
  // that -inf rows give log(0) = -inf and +inf rows give +inf instead of NaN.
  Tensor m = amax(x, dims, true);
  m = where(isinf(m), num(0), m);
  Tensor r = add(log(sum(exp(sub(x, m)), dims, true)), m);
  if (keepdim) return r;
  std::vector<int64_t> all = ops::wrap_dims(a.ints(1).empty() ? std::nullopt : std::optional(a.ints(1)), x.dim());
  return all.empty() ? r : squeeze(r, all);
}

// ---------------------------------------------------------------- count_nonzero
KILN_DECOMP(count_nonzero) {
  const Tensor& x = a.tensor(0);
  return {sum(ne(x, zero_i64()), dims_arg(a, 1), false, kInt64)};
}

}  // namespace
}  // namespace kiln::decomp
