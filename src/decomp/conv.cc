// Convolution composites (conv1d/2d/3d, conv_transpose2d) and im2col (unfold/fold), all written
// with the convolution prim.
#include "decomp/conv_util.h"

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {

// An identity kernel [K, 1, *kernel]: output channel k copies input offset k of each window.
Tensor identity_kernel(const Shape& kernel, DType dt) {
  int64_t k = 1;
  for (int64_t v : kernel) k *= v;
  Tensor i = iota(k);
  Tensor w = convert_element_type(eq(unsqueeze(i, 1), unsqueeze(i, 0)), dt);
  Shape s{k, 1};
  s.insert(s.end(), kernel.begin(), kernel.end());
  return reshape(w, s);
}

std::vector<int64_t> expand_param(const std::vector<int64_t>& v, int64_t nd, const char* op, const char* what) {
  KILN_CHECK(int64_t(v.size()) == nd || v.size() == 1, op, ": ", what, " must have 1 or ", nd, " values, got ",
             v.size());
  return v.size() == 1 ? std::vector<int64_t>(size_t(nd), v[0]) : v;
}

Tensor pad2d(const Tensor& x, int64_t top, int64_t bottom, int64_t left, int64_t right, double fill) {
  if (top == 0 && bottom == 0 && left == 0 && right == 0) return x;
  const int64_t ph = std::max(top, bottom), pw = std::max(left, right);
  const SymShape s = x.sym_sizes();
  const int64_t h = x.size(2), w = x.size(3), hp = top + h + bottom, wp = left + w + right;
  Tensor y = convolution(reshape(x, SymShape{s[0] * s[1], 1, s[2], s[3]}), full({1, 1, 1, 1}, 1, x.dtype()), Tensor(),
                         {1}, {ph, pw}, {1}, false, {0}, 1);
  y = slice(slice(y, 2, ph - top, ph - top + hp), 3, pw - left, pw - left + wp);
  y = reshape(y, SymShape{s[0], s[1], hp, wp});
  if (fill == 0) return y;
  std::vector<double> inside(size_t(hp * wp), 0.0);
  for (int64_t i = top; i < top + h; ++i)
    for (int64_t j = left; j < left + w; ++j) inside[size_t(i * wp + j)] = 1;
  return where(tensor(inside, {hp, wp}, kBool), y, ops::scalar_to_tensor(Scalar(fill)));
}

namespace {
using ops::Args;

// conv1d/2d/3d: also accept an unbatched input [C, *spatial].
Tensor conv_nd(const Args& a, int64_t nd, const char* op) {
  Tensor x = a.tensor(0);
  KILN_CHECK(x.dim() == nd + 1 || x.dim() == nd + 2, op, ": expected a ", nd + 1, "D (unbatched) or ", nd + 2,
             "D (batched) input, got ", x.dim(), "D of shape ", shape_str(x.sym_sizes()));
  const bool unbatched = x.dim() == nd + 1;
  if (unbatched) x = unsqueeze(x, 0);
  Tensor y = convolution(x, a.tensor(1), a.opt_tensor(2), a.ints(3), a.ints(4), a.ints(5), false, {0}, a.i64(6));
  return unbatched ? squeeze(y, {0}) : y;
}

KILN_DECOMP(conv1d) { return {conv_nd(a, 1, "conv1d")}; }
KILN_DECOMP(conv2d) { return {conv_nd(a, 2, "conv2d")}; }
KILN_DECOMP(conv3d) { return {conv_nd(a, 3, "conv3d")}; }

KILN_DECOMP(conv_transpose2d) {
  Tensor x = a.tensor(0);
  KILN_CHECK(x.dim() == 3 || x.dim() == 4, "conv_transpose2d: expected a 3D (unbatched) or 4D (batched) input, got ",
             x.dim(), "D");
  const bool unbatched = x.dim() == 3;
  if (unbatched) x = unsqueeze(x, 0);
  Tensor y = convolution(x, a.tensor(1), a.opt_tensor(2), a.ints(3), a.ints(4), a.ints(7), true, a.ints(5), a.i64(6));
  return {unbatched ? squeeze(y, {0}) : y};
}

// unfold (im2col): [N, C, H, W] -> [N, C*kh*kw, L]: the windows of the padded input as one
// strided view, then copied into shape. Exact (values are only moved); its derivative is fold.
KILN_DECOMP(unfold) {
  Tensor x = a.tensor(0);
  KILN_CHECK(x.dim() == 3 || x.dim() == 4, "unfold: expected a 3D (unbatched) or 4D (batched) input, got ", x.dim(),
             "D of shape ", shape_str(x.sym_sizes()));
  const bool unbatched = x.dim() == 3;
  if (unbatched) x = unsqueeze(x, 0);
  const auto k = expand_param(a.ints(1), 2, "unfold", "kernel_size"), dil = expand_param(a.ints(2), 2, "unfold", "dilation"),
             pad = expand_param(a.ints(3), 2, "unfold", "padding"), str = expand_param(a.ints(4), 2, "unfold", "stride");
  int64_t out[2];
  for (size_t d = 0; d < 2; ++d) {
    KILN_CHECK(k[d] > 0 && dil[d] > 0 && str[d] > 0 && pad[d] >= 0,
               "unfold: kernel_size, dilation and stride must be positive and padding non-negative");
    const int64_t span = dil[d] * (k[d] - 1) + 1, in = x.size(int64_t(d) + 2) + 2 * pad[d];
    KILN_CHECK(in >= span, "unfold: the padded input size ", in, " is smaller than the dilated kernel size ", span);
    out[d] = (in - span) / str[d] + 1;
  }
  Tensor xp = contiguous(pad2d(x, pad[0], pad[0], pad[1], pad[1], 0.0));
  const int64_t n = xp.size(0), c = xp.size(1), hp = xp.size(2), wp = xp.size(3);
  Tensor win = as_strided(xp, {n, c, k[0], k[1], out[0], out[1]},
                          {c * hp * wp, hp * wp, dil[0] * wp, dil[1], str[0] * wp, str[1]}, xp.storage_offset());
  Tensor r = reshape(win, {n, c * k[0] * k[1], out[0] * out[1]});
  return {unbatched ? squeeze(r, {0}) : r};
}

// fold (col2im): the adjoint of unfold, a transposed convolution with the identity kernel.
KILN_DECOMP(fold) {
  Tensor x = a.tensor(0);
  KILN_CHECK(x.dim() == 2 || x.dim() == 3, "fold: expected a 2D (unbatched) or 3D (batched) input, got ", x.dim(),
             "D of shape ", shape_str(x.sym_sizes()));
  const bool unbatched = x.dim() == 2;
  if (unbatched) x = unsqueeze(x, 0);
  const Shape out = expand_param(a.ints(1), 2, "fold", "output_size");
  const Shape k = expand_param(a.ints(2), 2, "fold", "kernel_size");
  const auto dil = expand_param(a.ints(3), 2, "fold", "dilation"), pad = expand_param(a.ints(4), 2, "fold", "padding"),
             str = expand_param(a.ints(5), 2, "fold", "stride");
  const int64_t kn = k[0] * k[1];
  KILN_CHECK(kn > 0 && x.size(1) % kn == 0, "fold: expected size of input's dimension 1 to be divisible by the "
             "product of kernel_size, but got input.size(1)=", x.size(1), " and kernel_size=", shape_str(k));
  Shape blocks;
  std::vector<int64_t> op;
  for (size_t d = 0; d < 2; ++d) {
    KILN_CHECK(str[d] > 0 && dil[d] > 0 && pad[d] >= 0, "fold: stride and dilation must be positive, padding >= 0");
    const int64_t span = dil[d] * (k[d] - 1) + 1;
    KILN_CHECK(out[d] + 2 * pad[d] >= span, "fold: output_size ", shape_str(out), " is too small for the kernel");
    blocks.push_back((out[d] + 2 * pad[d] - span) / str[d] + 1);
    op.push_back(out[d] - ((blocks[d] - 1) * str[d] - 2 * pad[d] + span));
  }
  KILN_CHECK(x.size(2) == blocks[0] * blocks[1], "fold: expected input's dimension 2 to match the calculated number "
             "of sliding blocks ", blocks[0], " * ", blocks[1], " = ", blocks[0] * blocks[1], ", but got ", x.size(2));
  const int64_t n = x.size(0), c = x.size(1) / kn;
  Tensor cols = reshape(x, {n * c, kn, blocks[0], blocks[1]});
  Tensor y = convolution(cols, identity_kernel(k, x.dtype()), Tensor(), str, pad, dil, true, op, 1);
  Tensor r = reshape(y, {n, c, out[0], out[1]});
  return {unbatched ? squeeze(r, {0}) : r};
}

KILN_DECOMP(pixel_shuffle) {
  const Tensor& x = a.tensor(0);
  const int64_t r = a.i64(1);
  KILN_CHECK(x.dim() >= 3, "pixel_shuffle: expected an input of at least 3 dims, got ", x.dim());
  KILN_CHECK(r > 0, "pixel_shuffle: upscale_factor must be positive, got ", r);
  const SymShape s = x.sym_sizes();
  const size_t b = s.size() - 3;
  const SymInt c = s[b];
  KILN_CHECK(c % SymInt(r * r) == 0, "pixel_shuffle: expected the channel dim (", c,
             ") to be divisible by the square of upscale_factor (", r * r, ")");
  SymShape split(s.begin(), s.begin() + int64_t(b)), out = split;
  split.insert(split.end(), {floordiv(c, SymInt(r * r)), SymInt(r), SymInt(r), s[b + 1], s[b + 2]});
  out.insert(out.end(), {floordiv(c, SymInt(r * r)), s[b + 1] * r, s[b + 2] * r});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < int64_t(b); ++i) perm.push_back(i);
  const int64_t B = int64_t(b);
  perm.insert(perm.end(), {B, B + 3, B + 1, B + 4, B + 2});  // [*, C, H, r, W, r]
  return {reshape(permute(reshape(x, split), perm), out)};
}

}  // namespace
}  // namespace kiln::decomp
