// Autocast: inside an AutocastGuard, ops that are fast and safe in 16-bit floats (matmul,
// convolutions, linear, attention) run in the autocast dtype, and ops that need range or
// precision (reductions, softmax, norms, losses, exp/log/pow) run in float32, as PyTorch's
// autocast does. Casts are ordinary differentiable ops, so gradients reach float32 parameters.
#pragma once
#include <kiln/dtype.h>

#include <optional>

namespace kiln {

// The autocast dtype while enabled on this thread, or nullopt.
std::optional<DType> autocast_dtype();

class AutocastGuard {
 public:
  explicit AutocastGuard(DType dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  std::optional<DType> prev_;
};

}  // namespace kiln
