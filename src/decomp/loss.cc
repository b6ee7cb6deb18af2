// Loss functions, decomposed into elementwise prims and reductions (PyTorch's formulas).
#include <limits>
#include "decomp/index_error.h"
#include "ops/meta/nn_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;
using ops::cast_to;
using ops::class_dim;
using ops::compute_dtype;
using ops::num;
using ops::reduce_loss;

// The result dtype of a loss over (input, target); must be floating.
DType loss_dtype(const Tensor& x, const Tensor& t, const char* op) {
  const DType r = result_type({x, t});
  KILN_CHECK(is_floating(r), op, ": expected floating point inputs, got ", name(x.dtype()), " and ", name(t.dtype()));
  return r;
}

// input - target in the compute dtype (16-bit floats through float32).
Tensor float_diff(const Args& a, const char* op, DType* out) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  *out = loss_dtype(x, t, op);
  const DType c = compute_dtype(*out);
  return sub(cast_to(x, c), cast_to(t, c));
}

// Reduces in the compute dtype and rounds once to the result dtype.
Tensor finish(const Tensor& loss, DType out, const std::string& reduction, const char* op) {
  return cast_to(reduce_loss(loss, reduction, op), out);
}

KILN_DECOMP(mse_loss) {
  DType out;
  Tensor d = float_diff(a, "mse_loss", &out);
  return {finish(mul(d, d), out, a.str(2), "mse_loss")};
}

KILN_DECOMP(l1_loss) {
  DType out;
  Tensor d = float_diff(a, "l1_loss", &out);
  return {finish(abs(d), out, a.str(2), "l1_loss")};
}

KILN_DECOMP(smooth_l1_loss) {
  DType out;
  Tensor d = float_diff(a, "smooth_l1_loss", &out);
  const double beta = a.f64(3);
  KILN_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta, got ", beta);
  Tensor ad = abs(d);
  Tensor loss = beta == 0 ? ad : where(lt(ad, num(beta)), div(mul(mul(d, d), num(0.5)), num(beta)), sub(ad, num(0.5 * beta)));
  return {finish(loss, out, a.str(2), "smooth_l1_loss")};
}

KILN_DECOMP(huber_loss) {
  DType out;
  Tensor d = float_diff(a, "huber_loss", &out);
  const double delta = a.f64(3);
  KILN_CHECK(delta > 0, "huber_loss does not support non-positive values for delta, got ", delta);
  Tensor ad = abs(d);
  Tensor loss = where(lt(ad, num(delta)), mul(mul(d, d), num(0.5)), mul(sub(ad, num(0.5 * delta)), num(delta)));
  return {finish(loss, out, a.str(2), "huber_loss")};
}

void check_same_size(const char* op, const Tensor& x, const Tensor& t) {
  KILN_CHECK_HINT(x.sym_sizes() == t.sym_sizes(), "reshape the target to the input's shape", op,
                  ": using a target size (", shape_str(t.sym_sizes()),
                  ") that is different to the input size (", shape_str(x.sym_sizes()), ") is not supported");
}

KILN_DECOMP(binary_cross_entropy) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  Tensor w = a.opt_tensor(2);
  check_same_size("binary_cross_entropy", x, t);
  KILN_CHECK(is_floating(x.dtype()), "binary_cross_entropy: expected a floating point input, got ", name(x.dtype()));
  if (!x.is_fake() && x.numel() > 0)
    KILN_CHECK_HINT(!any(logical_or(lt(x, num(0)), gt(x, num(1)))).item<bool>(),
                    "apply sigmoid first, or use binary_cross_entropy_with_logits",
                    "binary_cross_entropy: all elements of input should be between 0 and 1");
  const DType c = compute_dtype(x.dtype());
  Tensor xc = cast_to(x, c), tc = cast_to(t, c);
  // log clamped at -100 so that an input of exactly 0 or 1 gives a finite loss, as PyTorch.
  Tensor log_x = maximum(log(xc), num(-100)), log_1mx = maximum(log1p(neg(xc)), num(-100));
  Tensor loss = neg(add(mul(tc, log_x), mul(sub(num(1), tc), log_1mx)));
  if (w.defined()) loss = mul(loss, cast_to(w, c));
  return {finish(loss, x.dtype(), a.str(3), "binary_cross_entropy")};
}

// log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|)).
Tensor log_sigmoid(const Tensor& x) { return sub(minimum(x, num(0)), log1p(exp(neg(abs(x))))); }

KILN_DECOMP(binary_cross_entropy_with_logits) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  Tensor w = a.opt_tensor(2), pw = a.opt_tensor(3);
  check_same_size("binary_cross_entropy_with_logits", x, t);
  DType out = loss_dtype(x, t, "binary_cross_entropy_with_logits");
  if (w.defined()) out = promote_types(out, w.dtype());
  if (pw.defined()) out = promote_types(out, pw.dtype());
  const DType c = compute_dtype(out);
  Tensor xc = cast_to(x, c), tc = cast_to(t, c);
  Tensor ls = log_sigmoid(xc);
  // pos_weight scales the positive term: loss = (1 - t) x - (1 + (pw - 1) t) log_sigmoid(x).
  if (pw.defined()) ls = mul(ls, add(mul(sub(cast_to(pw, c), num(1)), tc), num(1)));
  Tensor loss = sub(mul(sub(num(1), tc), xc), ls);
  if (w.defined()) loss = mul(loss, cast_to(w, c));
  return {finish(loss, out, a.str(4), "binary_cross_entropy_with_logits")};
}

KILN_DECOMP(kl_div) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  const std::string& reduction = a.str(2);
  const DType out = loss_dtype(x, t, "kl_div"), c = compute_dtype(out);
  Tensor xc = cast_to(x, c), tc = cast_to(t, c);
  Tensor loss;
  if (a.b(3)) {
    loss = mul(exp(tc), sub(tc, xc));
  } else {
    // t * log(t) taken as 0 where t == 0 (xlogy); the inner where keeps log's gradient finite.
    Tensor zero = eq(tc, num(0));
    Tensor tlogt = where(zero, num(0), mul(tc, log(where(zero, num(1), tc))));
    loss = sub(tlogt, mul(tc, xc));
  }
  if (reduction == "batchmean") {
    Tensor s = sum(loss);
    if (loss.dim() > 0) s = div(s, num(double(loss.sym_size(0).hint())));
    return {cast_to(s, out)};
  }
  return {finish(loss, out, reduction, "kl_div")};
}

// ---------------------------------------------------------------- nll_loss / cross_entropy
// Checks class-index targets against the input: shape (N, d1, ...) for input (N, C, d1, ...),
// integral dtype, and (for real tensors) every value in [0, C) or equal to ignore_index.
void check_class_targets(const char* op, const Tensor& x, const Tensor& t, const Tensor& w, int64_t ignore_index) {
  KILN_CHECK(x.dim() >= 1, op, ": expected an input with at least 1 dim (C) or (N, C, ...), got a 0-d tensor");
  KILN_CHECK(is_integral(t.dtype()), op, ": expected target of an integral dtype (class indices), got ",
             name(t.dtype()));
  const int64_t cd = class_dim(x);
  SymShape expect = x.sym_sizes();
  expect.erase(expect.begin() + cd);
  KILN_CHECK_HINT(t.sym_sizes() == expect, "the target holds one class index per input row", op,
                  ": expected target of shape ", shape_str(expect), " for input of shape ", shape_str(x.sym_sizes()),
                  ", got ", shape_str(t.sym_sizes()));
  const SymInt c = x.sym_size(cd);
  KILN_CHECK(!w.defined() || (w.dim() == 1 && w.sym_size(0) == c), op, ": expected weight of shape [", c,
             "], got ", shape_str(w.sym_sizes()));
  if (t.is_fake() || t.numel() == 0) return;
  Tensor bad = logical_and(ne(t, num(double(ignore_index))), logical_or(lt(t, num(0)), ge(t, num(double(c.hint())))));
  if (any(bad).item<bool>()) {
    const IndexErrorText e = index_error_text(op, 0, c.hint());
    detail::fail(e.message, e.hint);
  }
}

// A per-class weight (C) shaped to broadcast along the class dim of x.
Tensor class_view(const Tensor& w, const Tensor& x) {
  SymShape s(size_t(x.dim()), SymInt(1));
  s[size_t(class_dim(x))] = w.sym_size(0);
  return reshape(w, s);
}

// nll on log-probabilities lp with class-index targets. Returns the per-element loss (0 where
// ignored) and the per-element target weight (0 where ignored), the weighted mean's denominator.
std::pair<Tensor, Tensor> nll_parts(const Tensor& lp, const Tensor& t, const Tensor& w, int64_t ignore_index) {
  const int64_t cd = class_dim(lp);
  // (integer numbers: the targets stay integers, exact past 2^24 classes, no float casts per row)
  Tensor valid = ne(t, ops::scalar_to_tensor(Scalar(ignore_index)));
  Tensor safe = where(valid, t, ops::scalar_to_tensor(Scalar(int64_t(0))));
  if (safe.dtype() != kInt64) safe = convert_element_type(safe, kInt64);
  Tensor picked = squeeze(gather(lp, cd, unsqueeze(safe, cd)), IntList{cd});
  Tensor tw = w.defined() ? reshape(index_select(w, 0, reshape(safe, {-1})), t.sym_sizes()) : Tensor();
  tw = tw.defined() ? where(valid, cast_to(tw, lp.dtype()), num(0)) : convert_element_type(valid, lp.dtype());
  return {neg(mul(picked, tw)), tw};
}

Tensor reduce_weighted(const Tensor& loss, const Tensor& tw, const std::string& reduction, const char* op) {
  if (reduction == "mean") {
    // Every target ignored (or weighted 0): 0/0 = NaN like PyTorch, but with a zero gradient
    // (not inf * 0 = NaN), so one such batch leaves the parameters' gradients finite.
    Tensor total = sum(tw);
    Tensor none = eq(total, num(0));
    return where(none, num(std::numeric_limits<double>::quiet_NaN()), div(sum(loss), where(none, num(1), total)));
  }
  return reduce_loss(loss, reduction, op);
}

KILN_DECOMP(nll_loss) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  Tensor w = a.opt_tensor(2);
  const int64_t ignore_index = a.i64(4);
  check_class_targets("nll_loss", x, t, w, ignore_index);
  KILN_CHECK(is_floating(x.dtype()), "nll_loss: expected a floating point input, got ", name(x.dtype()));
  auto [loss, tw] = nll_parts(x, t, w, ignore_index);
  return {reduce_weighted(loss, tw, a.str(3), "nll_loss")};
}

KILN_DECOMP(cross_entropy) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  Tensor w = a.opt_tensor(2);
  const std::string& reduction = a.str(3);
  const int64_t ignore_index = a.i64(4);
  const double eps = a.f64(5);
  const char* op = "cross_entropy";
  KILN_CHECK(is_floating(x.dtype()), op, ": expected a floating point input, got ", name(x.dtype()));
  KILN_CHECK(eps >= 0 && eps <= 1, op, ": label_smoothing must be between 0.0 and 1.0, got ", eps);
  KILN_CHECK(x.dim() >= 1, op, ": expected an input with at least 1 dim (C) or (N, C, ...), got a 0-d tensor");
  const int64_t cd = class_dim(x);
  const double n_classes = double(x.sym_size(cd).hint());
  Tensor lp = log_softmax(x, cd);
  if (is_floating(t.dtype())) {  // class probabilities
    KILN_CHECK_HINT(t.sym_sizes() == x.sym_sizes(), "probability targets have the input's shape", op,
                    ": expected target of shape ", shape_str(x.sym_sizes()), " (class probabilities), got ",
                    shape_str(t.sym_sizes()));
    KILN_CHECK(!w.defined() || (w.dim() == 1 && w.sym_size(0) == x.sym_size(cd)), op, ": expected weight of shape [",
               x.sym_size(cd), "], got ", shape_str(w.sym_sizes()));
    Tensor tt = eps > 0 ? add(mul(t, num(1 - eps)), num(eps / n_classes)) : t;
    Tensor prod = mul(lp, tt);
    if (w.defined()) prod = mul(prod, class_view(w, x));
    Tensor loss = neg(sum(prod, {cd}));
    if (reduction == "mean") return {div(sum(loss), num(double(x.sym_numel().hint()) / n_classes))};
    return {reduce_loss(loss, reduction, op)};
  }
  check_class_targets(op, x, t, w, ignore_index);
  auto [nll, tw] = nll_parts(lp, t, w, ignore_index);
  if (eps == 0) return {reduce_weighted(nll, tw, reduction, op)};
  // Label smoothing: (1 - eps) nll + eps / C * (-sum_c w_c logp_c), ignored rows excluded.
  Tensor smooth = neg(sum(w.defined() ? mul(lp, class_view(w, x)) : lp, {cd}));
  smooth = where(ne(t, num(double(ignore_index))), smooth, num(0));
  Tensor loss = add(mul(nll, num(1 - eps)), mul(smooth, num(eps / n_classes)));
  return {reduce_weighted(loss, tw, reduction, op)};
}

}  // namespace
}  // namespace kiln::decomp
