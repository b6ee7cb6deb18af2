#include "eager/cpu/loops.h"

#include <atomic>
#include <chrono>
#include <cstdlib>

namespace kiln::cpu {

StridedLoop::StridedLoop(const std::vector<const Tensor*>& operands, const Shape& shape) {
  const size_t nd = shape.size(), no = operands.size();
  numel_ = numel_of(shape);
  // Per operand, byte strides aligned to the right of the iteration shape.
  std::vector<std::vector<int64_t>> st(no, std::vector<int64_t>(nd, 0));
  for (size_t k = 0; k < no; ++k) {
    const TensorImpl* t = operands[k]->impl();
    const int64_t isz = int64_t(itemsize(t->dtype));
    const size_t tnd = t->sizes.size();
    KILN_CHECK(tnd <= nd, "internal: operand of rank ", tnd, " in a loop of rank ", nd);
    for (size_t d = 0; d < tnd; ++d) {
      const size_t od = nd - tnd + d;
      KILN_CHECK(t->sizes[d] == shape[od] || t->sizes[d] == 1, "internal: operand shape ", shape_str(t->sizes),
                 " does not broadcast to ", shape_str(shape));
      st[k][od] = t->sizes[d] == 1 ? 0 : t->strides[d] * isz;
    }
    base_.push_back(numel_ == 0 ? nullptr : t->data());
  }
  // Drop size-1 dims; merge dim d into d+1 when every operand is linear across the pair.
  for (size_t d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (!shape_.empty()) {
      bool merge = true;
      for (size_t k = 0; k < no && merge; ++k) merge = strides_[k].back() == st[k][d] * shape[d];
      if (merge) {
        shape_.back() *= shape[d];
        for (size_t k = 0; k < no; ++k) strides_[k].back() = st[k][d];
        continue;
      }
    }
    shape_.push_back(shape[d]);
    if (strides_.empty()) strides_.resize(no);
    for (size_t k = 0; k < no; ++k) strides_[k].push_back(st[k][d]);
  }
  if (strides_.empty()) strides_.resize(no);
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

}  // namespace kiln::cpu
