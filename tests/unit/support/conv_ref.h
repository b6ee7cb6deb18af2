// A direct float64 convolution (any dims, groups, transposed) for tests to compare against.
#pragma once
#include "support/test_util.h"

namespace kiln::test {

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> stride, pad, dil;
  int64_t groups = 1;
  bool transposed = false;
  std::vector<int64_t> out_pad = {};
  bool bias = true;
};

// Linear index of a multi-index over `sizes` (row-major).
inline int64_t lin(const Shape& sizes, const std::vector<int64_t>& idx) {
  int64_t r = 0;
  for (size_t d = 0; d < sizes.size(); ++d) r = r * sizes[d] + idx[d];
  return r;
}
inline std::vector<int64_t> unlin(const Shape& sizes, int64_t i) {
  std::vector<int64_t> idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = i % sizes[d];
    i /= sizes[d];
  }
  return idx;
}

// Direct convolution (scatter form: each input x kernel pair adds to one output).
inline std::vector<double> ref_conv(const ConvCase& c, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& b, Shape* out_shape) {
  const size_t nd = c.x.size() - 2;
  const int64_t n = c.x[0], cin = c.x[1], G = c.groups;
  const int64_t cout = c.transposed ? c.w[1] * G : c.w[0];
  const int64_t cig = cin / G, cog = cout / G;
  Shape in_sp(c.x.begin() + 2, c.x.end()), k_sp(c.w.begin() + 2, c.w.end()), out_sp;
  for (size_t d = 0; d < nd; ++d) {
    if (!c.transposed)
      out_sp.push_back((in_sp[d] + 2 * c.pad[d] - c.dil[d] * (k_sp[d] - 1) - 1) / c.stride[d] + 1);
    else
      out_sp.push_back((in_sp[d] - 1) * c.stride[d] - 2 * c.pad[d] + c.dil[d] * (k_sp[d] - 1) + c.out_pad[d] + 1);
  }
  *out_shape = {n, cout};
  out_shape->insert(out_shape->end(), out_sp.begin(), out_sp.end());
  const int64_t osz = numel(out_sp), isz = numel(in_sp), ksz = numel(k_sp);
  std::vector<double> out(size_t(n * cout * osz), 0.0);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t co = 0; co < cout; ++co)
      for (int64_t o = 0; o < osz; ++o) out[size_t((bi * cout + co) * osz + o)] = b.empty() ? 0 : b[size_t(co)];
  // For the forward conv the "big" side is the input (positions o*s - p + k*d of it are read);
  // for the transposed one it is the output (written at i*s - p + k*d).
  const Shape& grid = c.transposed ? in_sp : out_sp;
  const Shape& image = c.transposed ? out_sp : in_sp;
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t gi = 0; gi < G; ++gi)
      for (int64_t ci = 0; ci < cig; ++ci)
        for (int64_t co = 0; co < cog; ++co)
          for (int64_t kk = 0; kk < ksz; ++kk) {
            std::vector<int64_t> k = unlin(k_sp, kk);
            const double wv = c.transposed ? w[size_t(((gi * cig + ci) * cog + co) * ksz + kk)]
                                           : w[size_t(((gi * cog + co) * cig + ci) * ksz + kk)];
            for (int64_t q = 0; q < numel(grid); ++q) {
              std::vector<int64_t> gp = unlin(grid, q), ip(nd);
              bool ok = true;
              for (size_t d = 0; d < nd; ++d) {
                ip[d] = gp[d] * c.stride[d] - c.pad[d] + k[d] * c.dil[d];
                ok = ok && ip[d] >= 0 && ip[d] < image[d];
              }
              if (!ok) continue;
              const int64_t xi = c.transposed ? q : lin(image, ip), oi = c.transposed ? lin(image, ip) : q;
              out[size_t((bi * cout + gi * cog + co) * osz + oi)] += wv * x[size_t((bi * cin + gi * cig + ci) * isz + xi)];
            }
          }
  return out;
}

}  // namespace kiln::test
