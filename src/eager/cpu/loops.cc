#include "eager/cpu/loops.h"

#include <atomic>
#include <chrono>
#include <cstdlib>

namespace kiln::eager::cpu {

StridedLoop::StridedLoop(std::initializer_list<const Tensor*> operands, const Shape& shape) {
  const size_t nd = shape.size();
  no_ = operands.size();
  KILN_CHECK(no_ <= kMaxOperands, "internal: a loop of ", no_, " operands (at most ", kMaxOperands, ")");
  numel_ = numel_of(shape);
  cap_ = nd;
  if (nd > kInlineDims) {
    heap_.reset(new int64_t[(kMaxOperands + 1) * nd]);
    dims_ = heap_.get();
  }
  const TensorImpl* impls[kMaxOperands];
  int64_t isz[kMaxOperands];
  size_t k = 0;
  for (const Tensor* op : operands) {
    const TensorImpl* t = op->impl();
    KILN_CHECK(t->sizes.size() <= nd, "internal: operand of rank ", t->sizes.size(), " in a loop of rank ", nd);
    for (size_t d = 0; d < t->sizes.size(); ++d)
      KILN_CHECK(t->sizes[d] == shape[nd - t->sizes.size() + d] || t->sizes[d] == 1, "internal: operand shape ",
                 shape_str(t->sizes), " does not broadcast to ", shape_str(shape));
    impls[k] = t;
    isz[k] = int64_t(itemsize(t->dtype));
    base_[k] = numel_ == 0 ? nullptr : t->data();
    ++k;
  }
  // Byte stride of operand k along iteration dim d (aligned to the right; broadcast = 0).
  auto stride_at = [&](size_t k, size_t d) -> int64_t {
    const TensorImpl* t = impls[k];
    const size_t lead = nd - t->sizes.size();
    if (d < lead) return 0;
    return t->sizes[d - lead] == 1 ? 0 : t->strides[d - lead] * isz[k];
  };
  // Drop size-1 dims; merge dim d into the previous kept one when every operand is linear across
  // the pair.
  int64_t* sh = dims_;
  auto row = [&](size_t k) { return dims_ + (k + 1) * cap_; };
  for (size_t d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (nd_ > 0) {
      bool merge = true;
      for (size_t k = 0; k < no_ && merge; ++k) merge = row(k)[nd_ - 1] == stride_at(k, d) * shape[d];
      if (merge) {
        sh[nd_ - 1] *= shape[d];
        for (size_t k = 0; k < no_; ++k) row(k)[nd_ - 1] = stride_at(k, d);
        continue;
      }
    }
    sh[nd_] = shape[d];
    for (size_t k = 0; k < no_; ++k) row(k)[nd_] = stride_at(k, d);
    ++nd_;
  }
}

int max_threads() {
  if (omp_in_parallel()) return 1;
  const int n = omp_get_max_threads();
  if (n <= 1) return n;
  static const bool ignore_load = [] {
    const char* e = std::getenv("KILN_IGNORE_LOAD");
    return e && *e && std::string(e) != "0";
  }();
  if (ignore_load) return n;
  static std::atomic<int64_t> next_check{0};
  static std::atomic<bool> overloaded{false};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now >= next_check.load(std::memory_order_relaxed)) {
    next_check.store(now + 250, std::memory_order_relaxed);
    double load = 0;
    // Our own threads add up to ~n to the load; at twice the CPU count every CPU has another
    // runnable task besides ours (measured: at a load of ~4 on 2 CPUs going parallel still paid).
    if (getloadavg(&load, 1) == 1) overloaded.store(load >= 2.0 * omp_get_num_procs(), std::memory_order_relaxed);
  }
  return overloaded.load(std::memory_order_relaxed) ? 1 : n;
}

void copy_into(const Tensor& dst, const Tensor& src) {
  visit_all(dst.dtype(), [&]<class D>(type_tag<D>) {
    visit_all(src.dtype(), [&]<class S>(type_tag<S>) {
      StridedLoop loop({&dst, &src}, dst.sizes());
      loop.run([&](char** p, const int64_t* s, int64_t n) {
        if constexpr (std::is_same_v<D, S>) {
          if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
            std::memcpy(p[0], p[1], size_t(n) * sizeof(D));
            return;
          }
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<D*>(p[0] + i * s[0]) = cast<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
      });
    });
  });
}

}  // namespace kiln::eager::cpu
