// The CPU kernels' toolkit: dtype dispatch, element load/store (16-bit floats computed in
// float32), and StridedLoop: one iteration helper that walks any number of operands with
// arbitrary strides (broadcast = stride 0), coalescing dims and splitting work across threads.
#pragma once
#include <kiln/tensor.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <vector>

#include "core/element.h"
#include "core/tensor_impl.h"
#include "scalar/scalar.h"

namespace kiln::eager::cpu {

template <class T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0;
  else if constexpr (std::is_integral_v<T>) return float_to_int<T>(v);
  else return T(float(v));  // Half/BFloat16 from float; float/double fine
}
template <>
inline double from_double<double>(double v) { return v; }

// Converts between element types: convert_element_type's semantics from the scalar header, on
// the compute types (16-bit floats go through float, rounded by Half / BFloat16).
template <class To, class From>
inline To cast(From v) {
  if constexpr (std::is_same_v<To, From>) return v;
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) return To(scalar::convert_element_type<float>(acc_t<From>(v)));
  else return scalar::convert_element_type<To>(acc_t<From>(v));
}

// Integer arithmetic that wraps (two's complement, as PyTorch) instead of overflowing; floats
// and bool pass through: the scalar header's.
using scalar::wrap_add;
using scalar::wrap_mul;
using scalar::wrap_neg;
using scalar::wrap_sub;

// Threads for a parallel loop: OpenMP's count, but 1 inside a parallel region and while the
// machine is oversubscribed (1-min load average >= 2x the CPU count; checked every 250 ms). With
// libgomp's default (active) wait policy a parallel region on a loaded machine waits for a
// descheduled worker: a 2 MB add took ~20-40 ms instead of ~0.1 ms serially. KILN_IGNORE_LOAD=1
// turns the check off.
int max_threads();

// Operands of one loop: output(s) first, then inputs; all viewed with the output's shape.
// Its dims live inline (no heap allocation up to kInlineDims dims): on small tensors the loop
// setup, not the arithmetic, is the cost of an op.
class StridedLoop {
 public:
  static constexpr size_t kMaxOperands = 8;
  static constexpr size_t kInlineDims = 6;

  // shape: the iteration shape; operands are broadcast to it (missing/size-1 dims get stride 0).
  StridedLoop(std::initializer_list<const Tensor*> operands, const Shape& shape);
  StridedLoop(const StridedLoop&) = delete;
  StridedLoop& operator=(const StridedLoop&) = delete;

  int64_t numel() const { return numel_; }
  size_t num_operands() const { return no_; }

  // inner(ptrs, strides_in_bytes, n): n elements along the innermost dim from ptrs[k].
  template <class F>
  void run(F&& inner, int64_t grain = 32768) const;

 private:
  template <class F>
  void run_range(F& inner, int64_t begin, int64_t end) const;
  // Coalesced dims, innermost last: shape at dims_[0, nd_), byte strides of operand k at
  // dims_[(k + 1) * cap_ ...].
  const int64_t* stride_row(size_t k) const { return dims_ + (k + 1) * cap_; }

  size_t nd_ = 0, no_ = 0, cap_ = 0;
  char* base_[kMaxOperands] = {};
  int64_t numel_ = 1;
  int64_t* dims_ = inline_;
  int64_t inline_[(kMaxOperands + 1) * kInlineDims];
  std::unique_ptr<int64_t[]> heap_;
};

template <class F>
void StridedLoop::run_range(F& inner, int64_t begin, int64_t end) const {
  const size_t nd = nd_, no = no_;
  char* ptrs[kMaxOperands];
  int64_t inner_strides[kMaxOperands];
  if (nd == 0) {
    if (begin < end) {
      for (size_t k = 0; k < no; ++k) ptrs[k] = base_[k], inner_strides[k] = 0;
      inner(ptrs, inner_strides, int64_t(1));
    }
    return;
  }
  for (size_t k = 0; k < no; ++k) inner_strides[k] = stride_row(k)[nd - 1];
  if (nd == 1) {  // the common case after coalescing: one run
    for (size_t k = 0; k < no; ++k) ptrs[k] = base_[k] + begin * inner_strides[k];
    inner(ptrs, inner_strides, end - begin);
    return;
  }
  int64_t idx_inline[kInlineDims];
  std::vector<int64_t> idx_heap;
  int64_t* idx = idx_inline;
  if (nd > kInlineDims) idx_heap.resize(nd), idx = idx_heap.data();
  const int64_t* shape = dims_;
  int64_t rem = begin;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  int64_t pos = begin;
  while (pos < end) {
    for (size_t k = 0; k < no; ++k) {
      char* p = base_[k];
      const int64_t* st = stride_row(k);
      for (size_t d = 0; d < nd; ++d) p += idx[d] * st[d];
      ptrs[k] = p;
    }
    int64_t n = std::min(shape[nd - 1] - idx[nd - 1], end - pos);
    inner(ptrs, inner_strides, n);
    pos += n;
    idx[nd - 1] += n;
    for (size_t d = nd - 1; d > 0 && idx[d] == shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <class F>
void StridedLoop::run(F&& inner, int64_t grain) const {
  if (numel_ == 0) return;
  if (numel_ < grain) {  // small: never enter a parallel region (its start costs more than the work)
    run_range(inner, 0, numel_);
    return;
  }
  const int threads = max_threads();
  if (threads <= 1) {
    run_range(inner, 0, numel_);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, (numel_ + grain - 1) / grain);
#pragma omp parallel for num_threads(int(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) run_range(inner, numel_ * c / chunks, numel_ * (c + 1) / chunks);
}

// Applies out = f(in...) elementwise. All operands must already have the same dtype T
// (convert first); f works on acc_t<T> and returns acc_t<R> for an output of type R.
template <class R, class T, class F>
void map_unary(const Tensor& out, const Tensor& in, F f) {
  StridedLoop loop({&out, &in}, out.sizes());
  loop.run([&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
      R* o = reinterpret_cast<R*>(p[0]);
      const T* a = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = R(f(acc_t<T>(a[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<R*>(p[0] + i * s[0]) = R(f(acc_t<T>(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
    }
  });
}

template <class R, class T, class F>
void map_binary(const Tensor& out, const Tensor& x, const Tensor& y, F f) {
  StridedLoop loop({&out, &x, &y}, out.sizes());
  loop.run([&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
      R* o = reinterpret_cast<R*>(p[0]);
      const T* a = reinterpret_cast<const T*>(p[1]);
      const T* b = reinterpret_cast<const T*>(p[2]);
      for (int64_t i = 0; i < n; ++i) o[i] = R(f(acc_t<T>(a[i]), acc_t<T>(b[i])));
    } else if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == 0) {
      R* o = reinterpret_cast<R*>(p[0]);
      const T* a = reinterpret_cast<const T*>(p[1]);
      const acc_t<T> b = acc_t<T>(*reinterpret_cast<const T*>(p[2]));
      for (int64_t i = 0; i < n; ++i) o[i] = R(f(acc_t<T>(a[i]), b));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<R*>(p[0] + i * s[0]) = R(f(acc_t<T>(*reinterpret_cast<const T*>(p[1] + i * s[1])),
                                                      acc_t<T>(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
    }
  });
}

// Copies src into dst elementwise, converting dtype and broadcasting src to dst's shape.
void copy_into(const Tensor& dst, const Tensor& src);

}  // namespace kiln::eager::cpu
