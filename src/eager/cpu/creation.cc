// CPU kernels of the creation prims.
#include "core/philox.h"
#include "eager/cpu/loops.h"
#include "ops/dispatch.h"

namespace kiln::eager::cpu {
namespace {

// Calls f(i) -> acc value for each element i of a fresh contiguous tensor, in parallel.
template <class F>
void fill_indexed(const Tensor& out, F f) {
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    T* p = out.data<T>();
    const int64_t n = out.numel();
#pragma omp parallel for if (n > 65536)
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(f(i));
  });
}

KILN_KERNEL(full) {
  Tensor out = make_tensor(specs[0]);
  Scalar v = a.scalar(1);
  if (out.numel() == 0) return {out};
  write_scalar(out.data_ptr(), out.dtype(), v);  // the first element, converted once
  const size_t isz = itemsize(out.dtype());
  char* p = static_cast<char*>(out.data_ptr());
  const int64_t n = out.numel();
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 1; i < n; ++i) std::memcpy(p + i * isz, p, isz);
  return {out};
}

KILN_KERNEL(empty) { return {make_tensor(specs[0])}; }

KILN_KERNEL(iota) {
  Tensor out = make_tensor(specs[0]);
  Scalar start = a.scalar(1), step = a.scalar(2);
  if (is_floating(out.dtype()) || start.is_float() || step.is_float()) {
    const double s = start.to_double(), d = step.to_double();
    fill_indexed(out, [&](int64_t i) { return s + double(i) * d; });
  } else {
    visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
      T* p = out.data<T>();
      const int64_t s = start.to_int(), d = step.to_int();
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = T(s + i * d);
    });
  }
  return {out};
}

KILN_KERNEL(rand_uniform) {
  Tensor out = make_tensor(specs[0]);
  const uint64_t seed = uint64_t(a.i64(1)), offset = uint64_t(a.i64(2));
  if (out.dtype() == kFloat64)
    fill_indexed(out, [&](int64_t i) { return Philox4x32::uniform_double(seed, offset + uint64_t(i)); });
  else
    fill_indexed(out, [&](int64_t i) { return double(Philox4x32::uniform(seed, offset + uint64_t(i))); });
  return {out};
}

KILN_KERNEL(rand_normal) {
  Tensor out = make_tensor(specs[0]);
  const uint64_t seed = uint64_t(a.i64(1)), offset = uint64_t(a.i64(2));
  fill_indexed(out, [&](int64_t i) { return Philox4x32::normal(seed, offset + uint64_t(i)); });
  return {out};
}

}  // namespace
}  // namespace kiln::eager::cpu
