// interpolate (nearest, bilinear): separable, one matmul per spatial dim with an [out, in]
// matrix holding each output's source weights (one 1 for nearest, two lerp weights for linear).
#include <cmath>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

// The source index of every output (nearest mode), in float arithmetic as PyTorch. PyTorch's 2-d
// (4D input) kernel copies an unchanged size and repeats each source twice for a doubled size,
// whatever the scale_factor (1.03 on 6 elements: a copy, not floor(o / 1.03)); its 1-d and 3-d
// kernels use the scale throughout. `exact_sizes` selects the 2-d behaviour.
std::vector<int64_t> nearest_index(int64_t in, int64_t out, double scale, bool exact_sizes) {
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < out; ++o) {
    if (exact_sizes && out == in) idx.push_back(o);
    else if (exact_sizes && out == 2 * in) idx.push_back(o / 2);
    else idx.push_back(std::min<int64_t>(int64_t(std::floor(float(o) * float(scale))), in - 1));
  }
  return idx;
}

// scale: the source step per output element (PyTorch: 1/scale_factor if given, else in/out).
Tensor interp_matrix(int64_t in, int64_t out, double scale, bool linear, bool align_corners, bool exact_sizes, DType dt) {
  std::vector<double> m(size_t(out * in), 0.0);
  const std::vector<int64_t> nearest = linear ? std::vector<int64_t>() : nearest_index(in, out, scale, exact_sizes);
  for (int64_t o = 0; o < out; ++o) {
    double* row = m.data() + o * in;
    if (!linear) {
      row[nearest[size_t(o)]] = 1;
      continue;
    }
    double src;
    if (align_corners) src = out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
    else src = std::max(0.0, (double(o) + 0.5) * scale - 0.5);
    const int64_t i0 = std::min<int64_t>(int64_t(std::floor(src)), in - 1), i1 = std::min<int64_t>(i0 + 1, in - 1);
    const double l1 = src - double(i0);
    row[i0] += 1.0 - l1;
    row[i1] += l1;
  }
  return tensor(m, {out, in}, dt);
}

// Nearest selection along `dim` without arithmetic when the pattern allows it (each source
// repeated r times, or every r-th source): values, nan and inf included, are copied exactly.
// Returns an undefined tensor for other patterns.
Tensor nearest_exact(const Tensor& x, int64_t dim, int64_t in, const std::vector<int64_t>& idx) {
  const int64_t out = int64_t(idx.size());
  if (out % in == 0) {
    const int64_t r = out / in;
    bool repeat = true;
    for (int64_t o = 0; o < out && repeat; ++o) repeat = idx[size_t(o)] == o / r;
    if (repeat) {
      if (r == 1) return x;
      SymShape big = x.sym_sizes(), merged = big;
      big.insert(big.begin() + dim + 1, SymInt(r));
      merged[size_t(dim)] = SymInt(out);
      return reshape(expand(unsqueeze(x, dim + 1), big), merged);
    }
  }
  const int64_t step = out > 1 ? idx[1] - idx[0] : 1;
  if (step < 1) return Tensor();
  for (int64_t o = 0; o < out; ++o)
    if (idx[size_t(o)] != idx[0] + o * step) return Tensor();
  return slice(x, dim, idx[0], idx[0] + (out - 1) * step + 1, step);
}

KILN_DECOMP(interpolate) {
  const Tensor& x = a.tensor(0);
  const std::string& mode = a.str(3);
  const bool has_align = !a.is_none(4), align = has_align && a.b(4);
  const int64_t nd = x.dim() - 2;
  KILN_CHECK(nd >= 1 && nd <= 3, "interpolate: expected a 3D, 4D or 5D input, got ", x.dim(), "D");
  KILN_CHECK(is_floating(x.dtype()), "interpolate: expected a floating point input, got ", name(x.dtype()));
  // The (multi)linear modes are one mode per input rank: linear (3D), bilinear (4D), trilinear (5D).
  const bool linear = mode == "linear" || mode == "bilinear" || mode == "trilinear";
  KILN_CHECK_HINT(mode == "nearest" || linear, "use mode=\"nearest\", \"linear\", \"bilinear\" or \"trilinear\"",
                  "interpolate: unsupported mode \"", mode, "\"");
  const int64_t linear_nd = mode == "linear" ? 1 : mode == "bilinear" ? 2 : 3;
  KILN_CHECK(!linear || nd == linear_nd, "interpolate: ", mode, " mode expects a ", linear_nd + 2, "D input, got ",
             x.dim(), "D");
  KILN_CHECK(linear || !has_align, "interpolate: align_corners option can only be set with the interpolating modes: "
             "linear | bilinear | bicubic | trilinear");
  const bool has_size = !a.is_none(1), has_scale = !a.is_none(2);
  KILN_CHECK(has_size != has_scale, "interpolate: exactly one of size or scale_factor must be given");
  std::vector<int64_t> out(static_cast<size_t>(nd));
  std::vector<double> scale(static_cast<size_t>(nd));
  if (has_size) {
    const SymShape& s = a.symints(1);
    KILN_CHECK(int64_t(s.size()) == nd || s.size() == 1, "interpolate: size must have 1 or ", nd, " values, got ", s.size());
    for (int64_t d = 0; d < nd; ++d) {
      out[size_t(d)] = s[s.size() == 1 ? 0 : size_t(d)].value();
      KILN_CHECK(out[size_t(d)] > 0, "interpolate: output sizes must be positive, got ", out[size_t(d)]);
      scale[size_t(d)] = double(x.size(d + 2)) / double(out[size_t(d)]);
    }
  } else {
    const std::vector<double> f = *a.opt_f64s(2);
    KILN_CHECK(int64_t(f.size()) == nd || f.size() == 1, "interpolate: scale_factor must have 1 or ", nd, " values");
    for (int64_t d = 0; d < nd; ++d) {
      const double sf = f[f.size() == 1 ? 0 : size_t(d)];
      KILN_CHECK(sf > 0, "interpolate: scale_factor must be positive, got ", sf);
      out[size_t(d)] = int64_t(std::floor(double(x.size(d + 2)) * sf));
      KILN_CHECK(out[size_t(d)] > 0, "interpolate: the output size would be 0 for scale_factor ", sf);
      scale[size_t(d)] = 1.0 / sf;
    }
  }
  if (!linear) {
    Tensor r = x;
    for (int64_t d = 0; d < nd && r.defined(); ++d)
      r = nearest_exact(r, d + 2, x.size(d + 2), nearest_index(x.size(d + 2), out[size_t(d)], scale[size_t(d)], nd == 2));
    if (r.defined()) return {contiguous(r)};
  }
  // Otherwise a matmul per dim (a nan or inf also reaches the outputs that weigh it by 0).
  const DType ct = x.dtype() == kFloat64 ? kFloat64 : kFloat32;  // 16-bit weights would round
  Tensor r = convert_element_type(x, ct);
  for (int64_t d = 0; d < nd; ++d) {
    // An unchanged size is a copy in PyTorch's linear modes and 2-d nearest.
    if (out[size_t(d)] == x.size(d + 2) && (linear || nd == 2)) continue;
    Tensor m = interp_matrix(x.size(d + 2), out[size_t(d)], scale[size_t(d)], linear, align, nd == 2, ct);
    r = transpose(matmul(transpose(r, d + 2, -1), mT(m)), d + 2, -1);
  }
  return {convert_element_type(contiguous(r), x.dtype())};
}

}  // namespace
}  // namespace kiln::decomp
