// Meta function of the convolution prim (N-d, strided, padded, dilated, grouped, transposed).
#include "ops/meta/conv.h"

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {

std::vector<int64_t> conv_param(const std::vector<int64_t>& v, int64_t nd, const char* what, int64_t min) {
  KILN_CHECK(int64_t(v.size()) == nd || v.size() == 1, "convolution: expected ", what, " to have 1 or ", nd,
             " values, got ", v.size());
  std::vector<int64_t> r = v.size() == 1 ? std::vector<int64_t>(size_t(nd), v[0]) : v;
  for (int64_t x : r) KILN_CHECK(x >= min, "convolution: ", what, " must be >= ", min, ", got ", x);
  return r;
}

ConvParams conv_params(const Args& a) {
  const Tensor &x = a.tensor(0), &w = a.tensor(1);
  ConvParams p;
  p.nd = x.dim() - 2;
  KILN_CHECK(p.nd >= 1, "convolution: expected a batched input [N, C, *spatial], got ", x.dim(), " dims");
  KILN_CHECK(w.dim() == x.dim(), "convolution: expected a weight of ", x.dim(), " dims for a ", x.dim(),
             "-d input, got ", w.dim(), " dims");
  p.stride = conv_param(a.ints(3), p.nd, "stride", 1);
  p.padding = conv_param(a.ints(4), p.nd, "padding", 0);
  p.dilation = conv_param(a.ints(5), p.nd, "dilation", 1);
  p.transposed = a.b(6);
  p.output_padding = conv_param(a.ints(7), p.nd, "output_padding", 0);
  p.groups = a.i64(8);
  KILN_CHECK(p.groups >= 1, "convolution: groups must be positive, got ", p.groups);
  return p;
}

namespace {

KILN_META(convolution) {
  const Tensor &x = a.tensor(0), &w = a.tensor(1);
  const Tensor bias = a.opt_tensor(2);
  const ConvParams p = conv_params(a);
  KILN_CHECK_HINT(x.dtype() == w.dtype(), "convert the weight, e.g. w.to(x.dtype())",
                  "convolution: input dtype ", name(x.dtype()), " and weight dtype ", name(w.dtype()),
                  " should be the same");
  KILN_CHECK(is_floating(x.dtype()), "convolution: expected a floating point input, got ", name(x.dtype()));
  const SymShape xs = x.sym_sizes(), ws = w.sym_sizes();
  const SymInt cin = xs[1], g = p.groups;
  SymInt cout;
  if (!p.transposed) {
    KILN_CHECK(ws[0] % g == 0, "convolution: out_channels (", ws[0], ") must be divisible by groups (", g, ")");
    KILN_CHECK(cin == ws[1] * g, "convolution: expected input with ", ws[1] * g, " channels (weight ",
               shape_str(ws), ", groups=", g, "), got ", cin);
    cout = ws[0];
  } else {
    KILN_CHECK(cin == ws[0], "convolution: expected input with ", ws[0], " channels for the transposed weight ",
               shape_str(ws), ", got ", cin);
    KILN_CHECK(ws[0] % g == 0, "convolution: in_channels (", ws[0], ") must be divisible by groups (", g, ")");
    cout = ws[1] * g;
  }
  if (bias.defined()) {
    KILN_CHECK(bias.dtype() == x.dtype(), "convolution: bias dtype ", name(bias.dtype()),
               " should be the input's dtype ", name(x.dtype()));
    KILN_CHECK(bias.dim() == 1 && bias.sym_size(0) == cout, "convolution: expected a bias of shape [", cout,
               "], got ", shape_str(bias.sym_sizes()));
  }
  SymShape out{xs[0], cout};
  for (int64_t d = 0; d < p.nd; ++d) {
    const size_t i = size_t(d);
    const SymInt in = xs[i + 2], k = ws[i + 2];
    const int64_t s = p.stride[i], pad = p.padding[i], dil = p.dilation[i], op = p.output_padding[i];
    SymInt o;
    if (!p.transposed) {
      KILN_CHECK(op == 0, "convolution: output_padding is only for transposed convolutions");
      const SymInt span = SymInt(dil) * (k - 1) + 1;
      KILN_CHECK(in + 2 * pad >= span, "convolution: the (padded) input size ", in + 2 * pad, " in spatial dim ",
                 d, " is smaller than the dilated kernel size ", span);
      o = floordiv(in + 2 * pad - span, SymInt(s)) + 1;
    } else {
      KILN_CHECK(op < std::max(s, dil), "convolution: output_padding (", op,
                 ") must be smaller than either stride or dilation");
      o = (in - 1) * s - 2 * pad + SymInt(dil) * (k - 1) + op + 1;
      KILN_CHECK(o >= 1, "convolution: the transposed output size in spatial dim ", d, " is ", o, " (< 1)");
    }
    out.push_back(o);
  }
  return {spec_like(x, out, x.dtype())};
}

}  // namespace
}  // namespace kiln::ops
