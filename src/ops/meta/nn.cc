// Meta functions of the NN composites that have a fast eager kernel (softmax, log_softmax, gelu,
// layer_norm, rms_norm, cross_entropy, scaled_dot_product_attention): the kernel runs with the
// specs they give; the other composites take their specs from their decomposition. Their checks
// are the data-independent ones of the decomposition, with its messages.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"
#include "ops/meta/nn_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorSpec> softmax_meta(const Args& a) {
  const Tensor& x = a.tensor(0);
  const DType dt = a.opt_dtype(2).value_or(x.dtype());
  KILN_CHECK_HINT(is_floating(dt), "convert the input or pass dtype=kFloat32", op_info(a.op).name,
                  ": expected a floating point input, got ", name(dt));
  wrap_dim(a.i64(1), x.dim());
  return {spec_like(x, dt)};
}
KILN_REGISTER(meta, softmax, softmax_meta);
KILN_REGISTER(meta, log_softmax, softmax_meta);

// gelu's checks are its decomposition's, with the same messages.
KILN_META(gelu) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK_HINT(is_floating(x.dtype()), "convert it first, e.g. x.to(kFloat32)", "gelu",
                  " needs a floating point tensor, got ", name(x.dtype()));
  const std::string& mode = a.str(1);
  KILN_CHECK_HINT(mode == "none" || mode == "tanh", "use approximate=\"none\" or \"tanh\"",
                  "gelu: unknown approximate mode \"", mode, "\"");
  return {spec_like(x, x.dtype())};
}

KILN_META(layer_norm) {
  const Tensor& x = a.tensor(0);
  check_normalized_shape("layer_norm", x, a.symints(1), a.opt_tensor(2), a.opt_tensor(3));
  return {spec_like(x, x.dtype())};
}

KILN_META(rms_norm) {
  const Tensor& x = a.tensor(0);
  const Tensor w = a.opt_tensor(2);
  check_normalized_shape("rms_norm", x, a.symints(1), w, Tensor());
  // As PyTorch: the normalized input is rounded to x's dtype, then the weight promotes it.
  return {spec_like(x, w.defined() ? promote_types(x.dtype(), w.dtype()) : x.dtype())};
}

// The output is the target's shape for reduction "none", else a scalar.
KILN_META(cross_entropy) {
  const Tensor &x = a.tensor(0), &t = a.tensor(1);
  const Tensor w = a.opt_tensor(2);
  const std::string& reduction = a.str(3);
  const double eps = a.f64(5);
  const char* op = "cross_entropy";
  KILN_CHECK(is_floating(x.dtype()), op, ": expected a floating point input, got ", name(x.dtype()));
  KILN_CHECK(eps >= 0 && eps <= 1, op, ": label_smoothing must be between 0.0 and 1.0, got ", eps);
  KILN_CHECK(x.dim() >= 1, op, ": expected an input with at least 1 dim (C) or (N, C, ...), got a 0-d tensor");
  KILN_CHECK_HINT(reduction == "none" || reduction == "sum" || reduction == "mean",
                  "use reduction=\"none\", \"mean\" or \"sum\"", op, ": ", reduction, " is not a valid value for reduction");
  const int64_t cd = class_dim(x);
  SymShape rows = x.sym_sizes();
  rows.erase(rows.begin() + cd);
  if (is_floating(t.dtype())) {
    KILN_CHECK_HINT(t.sym_sizes() == x.sym_sizes(), "probability targets have the input's shape", op,
                    ": expected target of shape ", shape_str(x.sym_sizes()), " (class probabilities), got ",
                    shape_str(t.sym_sizes()));
  } else {
    KILN_CHECK(is_integral(t.dtype()), op, ": expected target of an integral dtype (class indices), got ",
               name(t.dtype()));
    KILN_CHECK_HINT(t.sym_sizes() == rows, "the target holds one class index per input row", op,
                    ": expected target of shape ", shape_str(rows), " for input of shape ", shape_str(x.sym_sizes()),
                    ", got ", shape_str(t.sym_sizes()));
  }
  KILN_CHECK(!w.defined() || (w.dim() == 1 && w.sym_size(0) == x.sym_size(cd)), op, ": expected weight of shape [",
             x.sym_size(cd), "], got ", shape_str(w.sym_sizes()));
  return {spec_like(x, reduction == "none" ? rows : SymShape{}, x.dtype())};
}

// The batch dims (all but the last two) of a shape.
SymShape batch_of(const SymShape& s) { return SymShape(s.begin(), s.end() - 2); }

KILN_META(scaled_dot_product_attention) {
  const Tensor &q = a.tensor(0), &k = a.tensor(1), &v = a.tensor(2);
  const Tensor mask = a.opt_tensor(3);
  const double p = a.f64(4);
  const bool causal = a.b(5), gqa = a.b(7);
  const char* op = "scaled_dot_product_attention";
  check_attention_args(q, k, v, mask, p, causal);
  SymShape kb = batch_of(k.sym_sizes()), vb = batch_of(v.sym_sizes());
  if (gqa) {
    KILN_CHECK(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3, op, ": enable_gqa needs inputs with a head dim (-3)");
    const int64_t hq = q.sym_size(-3).hint(), hk = k.sym_size(-3).hint(), hv = v.sym_size(-3).hint();
    KILN_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0, op,
               ": number of heads in key and value must divide the number of heads in query, got ", hq, ", ", hk,
               " and ", hv);
    kb.back() = q.sym_size(-3);
    vb.back() = q.sym_size(-3);
  }
  const SymInt L = q.sym_size(-2), S = k.sym_size(-2);
  SymShape ob = broadcast_shapes(broadcast_shapes(batch_of(q.sym_sizes()), kb), vb);
  if (mask.defined()) {
    SymShape scores = ob;
    scores.push_back(L);
    scores.push_back(S);
    const SymShape full = broadcast_shapes(scores, mask.sym_sizes());
    KILN_CHECK(full.size() >= 2 && full[full.size() - 2] == L && full.back() == S, op, ": attn_mask of shape ",
               shape_str(mask.sym_sizes()), " does not broadcast to the scores' shape ", shape_str(scores));
    ob = batch_of(full);
  }
  SymShape out = ob;
  out.push_back(L);
  out.push_back(v.sym_size(-1));
  return {spec_like(q, out, q.dtype())};
}

}  // namespace
}  // namespace kiln::ops
