// Pooling composites: max/avg pooling (1d/2d, padding, dilation, ceil_mode) as a running
// maximum/sum over strided slices of a padded input, adaptive average pooling as two matmuls
// with averaging matrices.
#include <cmath>
#include <limits>

#include "decomp/conv_util.h"
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

struct PoolDim {
  int64_t in, k, s, p, d, out, hi;  // hi: padding after the input so every window fits
};

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

PoolDim pool_dim(const char* op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil, bool is_max) {
  KILN_CHECK(k > 0 && s > 0 && d > 0, op, ": kernel_size, stride and dilation must be positive, got ", k, ", ", s,
             ", ", d);
  KILN_CHECK(p >= 0, op, ": padding must be non-negative, got ", p);
  const int64_t span = d * (k - 1) + 1;
  KILN_CHECK(is_max ? p <= span / 2 : p <= k / 2, op, ": pad should be at most half of effective kernel size, but got pad=",
             p, " and kernel_size=", k);
  int64_t out = floor_div(in + 2 * p - span + (ceil ? s - 1 : 0), s) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;  // the last window must start inside the input or left padding
  KILN_CHECK(out >= 1, op, ": output size is too small (input size ", in, ", kernel ", k, ", padding ", p,
             ", dilation ", d, ")");
  return {in, k, s, p, d, out, std::max<int64_t>(0, (out - 1) * s + span - in - p)};
}

Tensor pad_fill(const Tensor& x, const PoolDim& h, const PoolDim& w, double fill) {
  return pad2d(x, h.p, h.hi, w.p, w.hi, fill);
}

// Window offset (i, j) of every output: a strided view of the padded input.
Tensor window(const Tensor& xp, const PoolDim& h, const PoolDim& w, int64_t i, int64_t j) {
  Tensor v = slice(xp, 2, i * h.d, i * h.d + (h.out - 1) * h.s + 1, h.s);
  return slice(v, 3, j * w.d, j * w.d + (w.out - 1) * w.s + 1, w.s);
}

struct Pool2d {
  Tensor x;  // [N, C, H, W]
  PoolDim h, w;
  bool unbatched = false;
  int64_t nd = 2;
};

// Parses (input, kernel_size, stride, padding, [dilation]) of a 1d or 2d pool into 2d form.
Pool2d setup(const Args& a, int64_t nd, bool is_max, bool ceil, const char* op) {
  Pool2d p;
  Tensor x = a.tensor(0);
  KILN_CHECK(x.dim() == nd + 1 || x.dim() == nd + 2, op, ": expected a ", nd + 1, "D (unbatched) or ", nd + 2,
             "D (batched) input, got ", x.dim(), "D of shape ", shape_str(x.sym_sizes()));
  KILN_CHECK(is_floating(x.dtype()), op, ": expected a floating point input, got ", name(x.dtype()));
  p.unbatched = x.dim() == nd + 1;
  p.nd = nd;
  if (p.unbatched) x = unsqueeze(x, 0);
  if (nd == 1) x = unsqueeze(x, 2);  // [N, C, 1, L]
  std::vector<int64_t> k = expand_param(a.ints(1), nd, op, "kernel_size");
  // stride None or [] (its default): the kernel size, as PyTorch
  const std::vector<int64_t> stride = a.opt_ints(2).value_or(std::vector<int64_t>{});
  std::vector<int64_t> s = stride.empty() ? k : expand_param(stride, nd, op, "stride");
  std::vector<int64_t> pad = expand_param(a.ints(3), nd, op, "padding");
  std::vector<int64_t> dil = is_max ? expand_param(a.ints(4), nd, op, "dilation") : std::vector<int64_t>(size_t(nd), 1);
  if (nd == 1) k.insert(k.begin(), 1), s.insert(s.begin(), 1), pad.insert(pad.begin(), 0), dil.insert(dil.begin(), 1);
  p.h = pool_dim(op, x.size(2), k[0], s[0], pad[0], dil[0], ceil, is_max);
  p.w = pool_dim(op, x.size(3), k[1], s[1], pad[1], dil[1], ceil, is_max);
  p.x = x;
  return p;
}

// Removes the dims setup() added.
Tensor finish(const Pool2d& p, const Tensor& r) {
  std::vector<int64_t> dims;
  if (p.unbatched) dims.push_back(0);
  if (p.nd == 1) dims.push_back(2);
  return dims.empty() ? r : squeeze(r, dims);
}

Tensor max_pool(const Args& a, int64_t nd, const char* op) {
  const bool ceil = a.b(5);
  Pool2d p = setup(a, nd, true, ceil, op);
  Tensor xp = pad_fill(p.x, p.h, p.w, -std::numeric_limits<double>::infinity());
  Tensor r;
  for (int64_t i = 0; i < p.h.k; ++i)
    for (int64_t j = 0; j < p.w.k; ++j) {
      Tensor v = window(xp, p.h, p.w, i, j);
      r = r.defined() ? maximum(r, v) : v;
    }
  return finish(p, contiguous(r));
}

// Per output position of one dim: the window's size counting padding (clipped to the padded
// input) or counting only real elements.
std::vector<double> window_sizes(const PoolDim& d, bool include_pad) {
  std::vector<double> r;
  for (int64_t o = 0; o < d.out; ++o) {
    const int64_t start = o * d.s - d.p, end = std::min(start + d.k, d.in + d.p);
    r.push_back(include_pad ? double(end - start) : double(std::min(end, d.in) - std::max<int64_t>(start, 0)));
  }
  return r;
}

Tensor avg_pool(const Args& a, int64_t nd, const char* op) {
  const bool ceil = a.b(4), include_pad = a.b(5);
  Pool2d p = setup(a, nd, false, ceil, op);
  Tensor xp = pad_fill(p.x, p.h, p.w, 0.0);
  Tensor r;
  for (int64_t i = 0; i < p.h.k; ++i)
    for (int64_t j = 0; j < p.w.k; ++j) {
      Tensor v = window(xp, p.h, p.w, i, j);
      r = r.defined() ? add(r, v) : v;
    }
  const std::vector<double> sh = window_sizes(p.h, include_pad), sw = window_sizes(p.w, include_pad);
  std::vector<double> count;
  for (double x : sh)
    for (double y : sw) count.push_back(x * y);
  return finish(p, div(r, tensor(count, {p.h.out, p.w.out}, p.x.dtype())));
}

KILN_DECOMP(max_pool1d) { return {max_pool(a, 1, "max_pool1d")}; }
KILN_DECOMP(max_pool2d) { return {max_pool(a, 2, "max_pool2d")}; }
KILN_DECOMP(avg_pool1d) { return {avg_pool(a, 1, "avg_pool1d")}; }
KILN_DECOMP(avg_pool2d) { return {avg_pool(a, 2, "avg_pool2d")}; }

// Rows i of [out, in]: the average over [floor(i*in/out), ceil((i+1)*in/out)).
Tensor adaptive_matrix(int64_t in, int64_t out, DType dt) {
  std::vector<double> m(size_t(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const int64_t s = (i * in) / out, e = ((i + 1) * in + out - 1) / out;
    for (int64_t j = s; j < e; ++j) m[size_t(i * in + j)] = 1.0 / double(e - s);
  }
  return tensor(m, {out, in}, dt);
}

KILN_DECOMP(adaptive_avg_pool2d) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() == 3 || x.dim() == 4, "adaptive_avg_pool2d: expected a 3D or 4D input, got ", x.dim(), "D");
  KILN_CHECK(is_floating(x.dtype()), "adaptive_avg_pool2d: expected a floating point input, got ", name(x.dtype()));
  const std::vector<int64_t> o = expand_param(a.ints(1), 2, "adaptive_avg_pool2d", "output_size");
  KILN_CHECK(o[0] > 0 && o[1] > 0, "adaptive_avg_pool2d: output_size must be positive, got ", shape_str(o));
  // Like PyTorch: empty batch/channel dims give an empty result; the pooled dims must be non-empty.
  KILN_CHECK(x.size(-2) > 0 && x.size(-1) > 0, "adaptive_avg_pool2d: expected non-empty spatial dims, got shape ",
             shape_str(x.sizes()));
  const int64_t h = x.size(-2), w = x.size(-1);
  if (h % o[0] == 0 && w % o[1] == 0)  // equal windows: a plain average pool (no weights, nan stays local)
    return {avg_pool2d(x, {h / o[0], w / o[1]})};
  // Otherwise two matmuls with averaging matrices; 16-bit floats average in float32 (their 1/n
  // weights would round).
  const DType ct = x.dtype() == kFloat64 ? kFloat64 : kFloat32;
  Tensor xc = convert_element_type(x, ct);
  Tensor r = matmul(matmul(adaptive_matrix(x.size(-2), o[0], ct), xc), mT(adaptive_matrix(x.size(-1), o[1], ct)));
  return {convert_element_type(r, x.dtype())};
}

}  // namespace
}  // namespace kiln::decomp
