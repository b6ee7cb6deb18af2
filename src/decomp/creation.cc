// Creation ops, decomposed into the full / empty / iota / rand_* prims.
#include <cmath>
#include <limits>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

Tensor num(Scalar s) { return ops::scalar_to_tensor(s); }

KILN_DECOMP(zeros) { return {full(a.symints(0), 0, a.opt_dtype(1).value_or(default_float_dtype()), a.opt_device(2))}; }
KILN_DECOMP(ones) { return {full(a.symints(0), 1, a.opt_dtype(1).value_or(default_float_dtype()), a.opt_device(2))}; }
KILN_DECOMP(zeros_like) {
  const Tensor& x = a.tensor(0);
  return {full(x.sym_sizes(), 0, a.opt_dtype(1).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(ones_like) {
  const Tensor& x = a.tensor(0);
  return {full(x.sym_sizes(), 1, a.opt_dtype(1).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(full_like) {
  const Tensor& x = a.tensor(0);
  return {full(x.sym_sizes(), a.scalar(1), a.opt_dtype(2).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(empty_like) {
  const Tensor& x = a.tensor(0);
  return {empty(x.sym_sizes(), a.opt_dtype(1).value_or(x.dtype()), x.device())};
}

SymInt numel_of(const SymShape& s) {
  SymInt n = 1;
  for (auto& x : s) n = n * x;
  return n;
}

Tensor draw(bool normal, const SymShape& size, std::optional<DType> dtype, std::optional<Device> dev) {
  GeneratorState g = next_random_range(uint64_t(numel_of(size).hint()));
  const int64_t seed = int64_t(g.seed), offset = int64_t(g.offset);
  return normal ? rand_normal(size, seed, offset, dtype, dev) : rand_uniform(size, seed, offset, dtype, dev);
}

KILN_DECOMP(rand) { return {draw(false, a.symints(0), a.opt_dtype(1), a.opt_device(2))}; }
KILN_DECOMP(randn) { return {draw(true, a.symints(0), a.opt_dtype(1), a.opt_device(2))}; }
KILN_DECOMP(rand_like) {
  const Tensor& x = a.tensor(0);
  return {draw(false, x.sym_sizes(), a.opt_dtype(1).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(randn_like) {
  const Tensor& x = a.tensor(0);
  return {draw(true, x.sym_sizes(), a.opt_dtype(1).value_or(x.dtype()), x.device())};
}

KILN_DECOMP(arange) {
  Scalar start = a.scalar(0), end = a.scalar(1), step = a.scalar(2);
  KILN_CHECK(step.to_double() != 0, "arange: step must be nonzero");
  const bool any_float = start.is_float() || end.is_float() || step.is_float();
  DType dt = a.opt_dtype(3).value_or(any_float ? default_float_dtype() : kInt64);
  // The sign test, not n >= 0: ceil rounds a small wrong-way range (arange(-0.5)) up to 0.
  const bool toward = step.to_double() > 0 ? end.to_double() >= start.to_double() : end.to_double() <= start.to_double();
  KILN_CHECK_HINT(toward, "the sign of step must take start towards end", "arange: upper bound and larger bound inconsistent with step sign (start ",
                  start, ", end ", end, ", step ", step, ")");
  // The length as PyTorch computes it: exact for integers (in double, arange(2**62, 2**62 + 5)
  // would be empty), in double otherwise.
  double n;
  if (!any_float) {
    const __int128 span = __int128(end.to_int()) - start.to_int(), st = step.to_int();
    n = double(span / st + (span % st != 0));
  } else {
    n = std::ceil((end.to_double() - start.to_double()) / step.to_double());
  }
  KILN_CHECK_HINT(std::isfinite(n) && n < 0x1p63, "give a finite range", "arange: the range from ", start, " to ", end,
                  " in steps of ", step, " has too many elements (", n, ")");
  return {iota(int64_t(n), start, step, dt, a.opt_device(4))};
}

// start + i*step for the first half, end - (steps-1-i)*step for the second (as PyTorch):
// both end points are exact. Computed in float64, then converted (integers truncate).
// An end of linspace into the integer dtype dt, as PyTorch: converted to dt first (out of its range,
// NaN and inf raise; a negative int wraps into uint8), then interpolated in float64.
double integer_end(const char* arg, const Scalar& v, DType dt) {
  const int64_t i = ops::integer_scalar("linspace", arg, v, dt).to_int();
  const auto [lo, hi] = ops::int_range(dt);
  return double(i < lo ? i + hi + 1 : i);
}

KILN_DECOMP(linspace) {
  const int64_t steps = a.i64(2);
  KILN_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  DType dt = a.opt_dtype(3).value_or(default_float_dtype());
  const bool integral = is_integral(dt) && steps > 0;  // no steps: the ends are never converted
  const double start = integral ? integer_end("start", a.scalar(0), dt) : a.scalar(0).to_double();
  const double end = integral ? integer_end("end", a.scalar(1), dt) : a.scalar(1).to_double();
  Tensor i = iota(steps, 0, 1, kFloat64, a.opt_device(4));
  if (steps <= 1) return {convert_element_type(add(i, num(start)), dt)};
  const double step = (end - start) / double(steps - 1);
  Tensor lo = add(mul(i, num(step)), num(start));
  Tensor hi = sub(num(end), mul(rsub(i, num(double(steps - 1))), num(step)));
  return {convert_element_type(where(lt(i, num(double(steps / 2))), lo, hi), dt)};
}

KILN_DECOMP(eye) {
  const SymInt n = a.symint(0), m = a.opt_symint(1).value_or(n);
  KILN_CHECK(n >= 0 && m >= 0, "eye: n and m must be non-negative, got ", n.str(), " and ", m.str());
  Tensor rows = unsqueeze(iota(n, 0, 1, kInt64, a.opt_device(3)), 1);
  Tensor cols = unsqueeze(iota(m, 0, 1, kInt64, a.opt_device(3)), 0);
  return {convert_element_type(eq(rows, cols), a.opt_dtype(2).value_or(default_float_dtype()))};
}

// low + floor(u * (high - low)) with u uniform in [0, 1) drawn in float64.
KILN_DECOMP(randint) {
  const int64_t low = a.i64(0), high = a.i64(1);
  KILN_CHECK_HINT(low < high, "randint draws from [low, high)", "randint: low (", low, ") must be less than high (",
                  high, ")");
  Tensor u = draw(false, a.symints(2), kFloat64, a.opt_device(4));
  Tensor v = add(floor(mul(u, num(double(high - low)))), num(double(low)));
  return {convert_element_type(v, a.opt_dtype(3).value_or(kInt64))};
}

// The order that sorts iid uniform keys is a uniformly random permutation.
KILN_DECOMP(randperm) {
  const SymInt n = a.symint(0);
  KILN_CHECK(n >= 0, "randperm: n must be non-negative, got ", n.str());
  Tensor keys = draw(false, {n}, kFloat64, a.opt_device(2));
  return {convert_element_type(argsort(keys), a.opt_dtype(1).value_or(kInt64))};
}

// Keeps the lower (tril) or upper (triu) triangle of the last two dims, relative to `diagonal`.
Tensor triangle(const Tensor& x, int64_t diagonal, bool lower) {
  KILN_CHECK_HINT(x.dim() >= 2, "tril/triu act on the last two dims", lower ? "tril" : "triu",
                  ": expected a tensor with at least 2 dims, got ", x.dim());
  Tensor rows = unsqueeze(iota(x.sym_size(-2), 0, 1, kInt64, x.device()), 1);
  Tensor cols = unsqueeze(iota(x.sym_size(-1), 0, 1, kInt64, x.device()), 0);
  Tensor off = sub(cols, rows);
  Tensor keep = lower ? le(off, num(diagonal)) : ge(off, num(diagonal));
  return where(keep, x, scalar_tensor(0, x.dtype()));
}
KILN_DECOMP(tril) { return {triangle(a.tensor(0), a.i64(1), true)}; }
KILN_DECOMP(triu) { return {triangle(a.tensor(0), a.i64(1), false)}; }

KILN_DECOMP(one_hot) {
  const Tensor& x = a.tensor(0);
  int64_t k = a.i64(1);
  KILN_CHECK_HINT(x.dtype() == kInt64, "convert the indices with .to(kInt64)",
                  "one_hot is only applicable to int64 index tensors, got ", name(x.dtype()));
  KILN_CHECK(k >= -1, "one_hot: num_classes must be -1 or non-negative, got ", k);
  if (x.numel() > 0) {
    KILN_CHECK(amin(x).item<int64_t>() >= 0, "one_hot: class values must be non-negative");
    const int64_t mx = amax(x).item<int64_t>();
    if (k == -1) k = mx + 1;
    KILN_CHECK_HINT(mx < k, "pass a larger num_classes", "one_hot: class value ", mx, " is out of range for ", k,
                    " classes");
  } else {
    KILN_CHECK(k != -1, "one_hot: cannot infer the number of classes from an empty tensor");
  }
  return {convert_element_type(eq(unsqueeze(x, -1), iota(k, 0, 1, kInt64, x.device())), kInt64)};
}

// multinomial's checks of its weights w (float64, 2-d), which read their values.
void check_multinomial_weights(const Tensor& w, int64_t k, bool replacement) {
  KILN_CHECK(!any(logical_or(lt(w, num(0)), logical_not(isfinite(w)))).item<bool>(),
             "multinomial: probabilities must be finite and non-negative");
  KILN_CHECK(all(gt(sum(w, IntList{-1}), num(0))).item<bool>(), "multinomial: every row must have a positive sum");
  if (!replacement) {
    KILN_CHECK(all(ge(sum(gt(w, num(0)), IntList{-1}), num(k))).item<bool>(), "multinomial: a row has fewer than ", k,
               " non-zero probabilities, so ", k, " samples without replacement are impossible");
  }
}

// Categorical sampling by the Gumbel-max trick: argmax(log p + g), g = -log(-log(u)), picks i with
// probability p_i / sum(p). Without replacement, the first k argmaxes of one perturbed row
// (taking each winner out in turn) are a sample without replacement (Gumbel-top-k).
KILN_DECOMP(multinomial) {
  const Tensor& p = a.tensor(0);
  const int64_t k = a.i64(1);
  const bool replacement = a.b(2);
  KILN_CHECK(p.dim() == 1 || p.dim() == 2, "multinomial: prob_dist must be 1 or 2 dim, got ", p.dim());
  KILN_CHECK_HINT(is_floating(p.dtype()), "pass float weights", "multinomial: expected a floating point tensor, got ",
                  name(p.dtype()));
  KILN_CHECK(k > 0, "multinomial: cannot sample ", k, " <= 0 samples");
  const int64_t n = p.size(-1);
  KILN_CHECK(replacement || k <= n, "multinomial: cannot sample ", k, " > ", n, " samples without replacement");
  Tensor w = p.dim() == 1 ? unsqueeze(p, 0) : p;
  w = convert_element_type(w, kFloat64);
  // The checks read the weights: eager only. Traced (fake) weights have no values, and the
  // output's shape (rows, k) never depends on them, so a compiled call samples without a break.
  if (!p.is_fake()) check_multinomial_weights(w, k, replacement);
  const SymInt rows = w.sym_size(0);
  auto gumbel = [&](const SymShape& shape) {
    Tensor u = draw(false, shape, kFloat64, p.device());
    u = clamp_min(u, std::numeric_limits<double>::min());  // log(0) would give an infinite key
    return neg(log(neg(log(u))));
  };
  Tensor logw = log(w);  // -inf for zero weights: never chosen
  Tensor out;
  if (replacement) {
    Tensor keys = add(unsqueeze(logw, 1), gumbel({rows, SymInt(k), SymInt(n)}));
    out = argmax(keys, -1);
  } else {
    Tensor keys = add(logw, gumbel({rows, SymInt(n)}));
    Tensor cols = iota(n, 0, 1, kInt64, p.device()), slots = iota(k, 0, 1, kInt64, p.device());
    const Tensor ninf = num(-std::numeric_limits<double>::infinity());
    out = zeros(SymShape{rows, SymInt(k)}, kInt64, p.device());
    for (int64_t s = 0; s < k; ++s) {
      Tensor idx = argmax(keys, -1, true);  // (rows, 1)
      out = where(eq(slots, num(s)), idx, out);
      keys = where(eq(cols, idx), ninf, keys);
    }
  }
  return {p.dim() == 1 ? squeeze(out, IntList{0}) : out};
}

}  // namespace
}  // namespace kiln::decomp
