// Grad mode and the functional autograd API.
#pragma once
#include <kiln/tensor.h>

namespace kiln {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// While alive, ops record no autograd history (like torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

// Accumulates d(outputs)/d(leaf) * grad_outputs into each leaf's .grad().
void backward(const TensorList& outputs, const TensorList& grad_outputs = {}, bool retain_graph = false,
              bool create_graph = false, SourceLoc loc = SourceLoc::current());
// Returns d(outputs)/d(inputs) without touching .grad() (torch.autograd.grad).
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                bool retain_graph = false, bool create_graph = false, bool allow_unused = false,
                SourceLoc loc = SourceLoc::current());

}  // namespace kiln
