// CPU kernel of the convolution prim: im2col + gemm (forward), gemm + col2im (transposed),
// for any number of spatial dims. 16-bit floats are computed in float32.
#include <cblas.h>
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "ops/dispatch.h"
#include "ops/meta/conv.h"

namespace kiln::eager::cpu {
namespace {

// The map between an image (C channels of spatial size `image`) and a column matrix
// [C * prod(kernel), prod(grid)]: column row (c, k), position o reads image index
// o * stride - pad + k * dilation in every spatial dim (zero outside the image).
constexpr int64_t kMaxDims = 8;
constexpr int64_t kSmallGrid = 512;              // output positions below which images share a gemm
constexpr int64_t kColsBudget = int64_t(1) << 24;  // elements of such a shared column buffer

struct Geometry {
  Shape image, grid, kernel;
  std::vector<int64_t> stride, pad, dil;
  int64_t image_n = 1, grid_n = 1, kernel_n = 1;
};

// Calls f(t, img, lo, hi, base) for each innermost grid row t of kernel offset kidx: img is the
// image offset of the row's outer dims (-1 if they fall outside), positions o in [lo, hi) of the
// row read image element img + o * stride + base.
template <class F>
void for_each_row(const Geometry& g, int64_t kidx, F&& f) {
  const size_t nd = g.image.size(), last = nd - 1;
  int64_t k[kMaxDims];  // no heap allocation: this runs once per column row
  for (size_t d = nd; d-- > 0;) {
    k[d] = kidx % g.kernel[d];
    kidx /= g.kernel[d];
  }
  const int64_t w = g.grid[last], s = g.stride[last], len = g.image[last];
  const int64_t base = k[last] * g.dil[last] - g.pad[last];
  int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
  int64_t hi = len - base <= 0 ? 0 : (len - base + s - 1) / s;
  lo = std::min(lo, w);
  hi = std::max(std::min(hi, w), lo);
  const int64_t rows = g.grid_n / w;
  for (int64_t t = 0; t < rows; ++t) {
    int64_t rem = t, img = 0, mult = len;
    for (size_t d = last; d-- > 0;) {
      const int64_t o = rem % g.grid[d];
      rem /= g.grid[d];
      const int64_t i = o * g.stride[d] - g.pad[d] + k[d] * g.dil[d];
      if (img >= 0) img = (i < 0 || i >= g.image[d]) ? -1 : img + i * mult;
      mult *= g.image[d];
    }
    f(t, img, lo, hi, base);
  }
}

// im2col/col2im and the bias run on one thread: they take a few percent of the time, and an
// OpenMP region between gemm calls leaves its workers spinning against OpenBLAS's own threads
// (measured: 3x slower convolutions on 2 cores).
template <class T>
void im2col(const Geometry& g, int64_t channels, const T* src, T* dst, int64_t ld) {  // ld: dst row stride
  const int64_t w = g.grid.back(), s = g.stride.back();
  for (int64_t r = 0; r < channels * g.kernel_n; ++r) {
    const T* img = src + (r / g.kernel_n) * g.image_n;
    T* row = dst + r * ld;
    for_each_row(g, r % g.kernel_n, [&](int64_t t, int64_t off, int64_t lo, int64_t hi, int64_t base) {
      T* out = row + t * w;
      if (off < 0) lo = hi = w;
      for (int64_t o = 0; o < lo; ++o) out[o] = T(0);
      const T* in = img + off + base;
      for (int64_t o = lo; o < hi; ++o) out[o] = in[o * s];
      for (int64_t o = hi; o < w; ++o) out[o] = T(0);
    });
  }
}

// The adjoint of im2col: accumulates the columns into a zeroed image.
template <class T>
void col2im(const Geometry& g, int64_t channels, const T* src, T* dst) {
  const int64_t w = g.grid.back(), s = g.stride.back();
  for (int64_t c = 0; c < channels; ++c) {
    T* img = dst + c * g.image_n;
    for (int64_t kk = 0; kk < g.kernel_n; ++kk) {
      const T* row = src + (c * g.kernel_n + kk) * g.grid_n;
      for_each_row(g, kk, [&](int64_t t, int64_t off, int64_t lo, int64_t hi, int64_t base) {
        if (off < 0) return;
        const T* in = row + t * w;
        T* out = img + off + base;
        for (int64_t o = lo; o < hi; ++o) out[o * s] += in[o];
      });
    }
  }
}

// C [m, n] = op(A) op(B), row-major; ldb/ldc default to n.
template <class T>
void gemm(bool ta, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, T* c, bool tb = false,
          int64_t ldb = 0) {
  const auto tra = ta ? CblasTrans : CblasNoTrans, trb = tb ? CblasTrans : CblasNoTrans;
  const int ib = int(ldb ? ldb : n);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, tra, trb, int(m), int(n), int(k), 1.0f, a, int(lda), b, ib, 0.0f, c, int(n));
  else
    cblas_dgemm(CblasRowMajor, tra, trb, int(m), int(n), int(k), 1.0, a, int(lda), b, ib, 0.0, c, int(n));
}

// The transposed column matrix, for few output positions and large kernels (the weight
// gradient): row q holds all (c, k) values of output position q, written in runs along the
// kernel's innermost dim.
template <class T>
void im2row(const Geometry& g, int64_t channels, const T* src, T* dst) {
  const size_t nd = g.image.size(), last = nd - 1;
  const int64_t row_len = channels * g.kernel_n, kl = g.kernel[last], outer_k = g.kernel_n / kl;
  const int64_t len = g.image[last], dl = g.dil[last];
  int64_t o[kMaxDims], k[kMaxDims];
  for (int64_t q = 0; q < g.grid_n; ++q) {
    int64_t rem = q;
    for (size_t d = nd; d-- > 0;) o[d] = rem % g.grid[d], rem /= g.grid[d];
    const int64_t base = o[last] * g.stride[last] - g.pad[last];  // image index of kernel offset 0
    const int64_t lo = base >= 0 ? 0 : std::min(kl, (-base + dl - 1) / dl);
    const int64_t hi = std::max(lo, std::min(kl, len - base <= 0 ? 0 : (len - base + dl - 1) / dl));
    T* row = dst + q * row_len;
    for (int64_t ko = 0; ko < outer_k; ++ko) {
      rem = ko;
      for (size_t d = last; d-- > 0;) k[d] = rem % g.kernel[d], rem /= g.kernel[d];
      int64_t off = 0, mult = len;
      for (size_t d = last; d-- > 0 && off >= 0;) {
        const int64_t i = o[d] * g.stride[d] - g.pad[d] + k[d] * g.dil[d];
        off = (i < 0 || i >= g.image[d]) ? -1 : off + i * mult;
        mult *= g.image[d];
      }
      for (int64_t c = 0; c < channels; ++c) {
        T* out = row + c * g.kernel_n + ko * kl;
        if (off < 0) {
          std::fill(out, out + kl, T(0));
          continue;
        }
        const T* in = src + c * g.image_n + off + base;
        std::fill(out, out + lo, T(0));
        for (int64_t j = lo; j < hi; ++j) out[j] = in[j * dl];
        std::fill(out + hi, out + kl, T(0));
      }
    }
  }
}

template <class T>
void conv_impl(const Tensor& x, const Tensor& w, const Tensor& bias, const ops::ConvParams& p, const Tensor& out) {
  const int64_t n = x.size(0), cin = x.size(1), cout = out.size(1), groups = p.groups;
  const int64_t cig = cin / groups, cog = cout / groups;
  KILN_CHECK(p.nd <= kMaxDims, "convolution: at most ", kMaxDims, " spatial dims are supported, got ", p.nd);
  Geometry g;
  g.stride = p.stride;
  g.pad = p.padding;
  g.dil = p.dilation;
  for (int64_t d = 0; d < p.nd; ++d) {
    g.kernel.push_back(w.size(d + 2));
    // Forward: the image is the input, the grid the output; transposed: the other way round.
    g.image.push_back(p.transposed ? out.size(d + 2) : x.size(d + 2));
    g.grid.push_back(p.transposed ? x.size(d + 2) : out.size(d + 2));
  }
  g.image_n = numel_of(g.image);
  g.grid_n = numel_of(g.grid);
  g.kernel_n = numel_of(g.kernel);
  KILN_CHECK(std::max({g.grid_n, g.image_n, cig * g.kernel_n, cog * g.kernel_n}) <= INT32_MAX,
             "convolution: sizes too large for BLAS");
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  T* op = out.data<T>();
  const int64_t in_n = x.numel() / std::max<int64_t>(n, 1), out_n = out.numel() / std::max<int64_t>(n, 1);
  bool direct = !p.transposed;  // a 1x1 kernel without stride or padding reads the input as is
  for (int64_t d = 0; d < p.nd && direct; ++d) direct = g.kernel[size_t(d)] == 1 && p.stride[size_t(d)] == 1 && p.padding[size_t(d)] == 0;
  // A tensor, not a vector: the allocator recycles it instead of page-faulting a fresh block.
  Tensor colbuf = make_tensor({direct ? 0 : (p.transposed ? cog : cig) * g.kernel_n * g.grid_n}, dtype_of<T>());
  T* cols = colbuf.numel() ? colbuf.data<T>() : nullptr;
  if (cig == 0) std::fill(op, op + out.numel(), T(0));
  int64_t n_done = 0;  // nothing to sum over (gemm needs k >= 1)
  if (!p.transposed && !direct && n > 1 && g.grid_n < kSmallGrid && cig > 0) {
    // Few output positions (e.g. the weight gradient, whose "kernel" is the whole image): a
    // gemm per image would be too skinny, so the columns of several images share one gemm.
    const int64_t per_image = cig * g.kernel_n * g.grid_n;
    const int64_t chunk = std::max<int64_t>(1, std::min({n, kSmallGrid / g.grid_n, kColsBudget / per_image}));
    Tensor wide = make_tensor({per_image * chunk + cog * g.grid_n * chunk}, dtype_of<T>());
    T* wcols = wide.data<T>();
    T* tmp = wcols + per_image * chunk;
    for (int64_t b0 = 0; b0 < n; b0 += chunk) {
      const int64_t nb = std::min(chunk, n - b0), cols_w = nb * g.grid_n;
      for (int64_t gi = 0; gi < groups; ++gi) {
        for (int64_t bi = 0; bi < nb; ++bi)
          im2row<T>(g, cig, xp + (b0 + bi) * in_n + gi * cig * g.image_n, wcols + bi * per_image);
        gemm<T>(false, cog, cols_w, cig * g.kernel_n, wp + gi * cog * cig * g.kernel_n, cig * g.kernel_n, wcols, tmp,
                true, cig * g.kernel_n);
        for (int64_t bi = 0; bi < nb; ++bi)
          for (int64_t co = 0; co < cog; ++co)
            std::copy_n(tmp + co * cols_w + bi * g.grid_n, g.grid_n,
                        op + (b0 + bi) * out_n + (gi * cog + co) * g.grid_n);
      }
    }
    n_done = n;
  }
  for (int64_t b = n_done; b < n && cig > 0; ++b) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      if (!p.transposed) {
        const T* img = xp + b * in_n + gi * cig * g.image_n;
        if (!direct) im2col<T>(g, cig, img, cols, g.grid_n);
        gemm<T>(false, cog, g.grid_n, cig * g.kernel_n, wp + gi * cog * cig * g.kernel_n, cig * g.kernel_n,
                direct ? img : cols, op + b * out_n + gi * cog * g.grid_n);
      } else {
        // cols [cog*K, grid] = W_g^T [cig, cog*K]^T x [cig, grid]
        gemm<T>(true, cog * g.kernel_n, g.grid_n, cig, wp + gi * cig * cog * g.kernel_n, cog * g.kernel_n,
                xp + b * in_n + gi * cig * g.grid_n, cols);
        T* img = op + b * out_n + gi * cog * g.image_n;
        std::fill(img, img + cog * g.image_n, T(0));
        col2im<T>(g, cog, cols, img);
      }
    }
  }
  if (bias.defined()) {
    const T* bp = bias.data<T>();
    const int64_t sp = out_n / std::max<int64_t>(cout, 1);
    for (int64_t r = 0; r < n * cout; ++r) {
      const T v = bp[r % cout];
      T* row = op + r * sp;
      for (int64_t i = 0; i < sp; ++i) row[i] += v;
    }
  }
}

KILN_KERNEL(convolution) {
  const ops::ConvParams p = ops::conv_params(a);
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  const DType dt = out.dtype(), ct = dt == kFloat64 ? kFloat64 : kFloat32;
  Tensor x = a.tensor(0).to(ct).contiguous(), w = a.tensor(1).to(ct).contiguous();
  Tensor bias = a.opt_tensor(2);
  if (bias.defined()) bias = bias.to(ct).contiguous();
  Tensor res = out;
  if (ct != dt) {
    TensorSpec s = specs[0];
    s.dtype = ct;
    res = make_tensor(s);
  }
  if (ct == kFloat64) conv_impl<double>(x, w, bias, p, res);
  else conv_impl<float>(x, w, bias, p, res);
  if (ct != dt) copy_into(out, res);
  return {out};
}

}  // namespace
}  // namespace kiln::eager::cpu
