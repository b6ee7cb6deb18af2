// Grad mode (kiln/grad_mode.h) and the functional autograd API.
#pragma once
#include <kiln/grad_mode.h>
#include <kiln/tensor.h>

namespace kiln {

// Accumulates d(outputs)/d(leaf) * grad_outputs into each leaf's .grad().
void backward(const TensorList& outputs, const TensorList& grad_outputs = {}, bool retain_graph = false,
              bool create_graph = false, SourceLoc loc = SourceLoc::current());
// Returns d(outputs)/d(inputs) without touching .grad() (torch.autograd.grad).
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                bool retain_graph = false, bool create_graph = false, bool allow_unused = false,
                SourceLoc loc = SourceLoc::current());

}  // namespace kiln

namespace kiln {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  uint64_t seed = 0;  // for the random projection of the outputs
};
// Checks the analytical gradient of fn at `inputs` against central finite differences, as
// torch.autograd.gradcheck does. Inputs that require grad must be float64 and contiguous; fn may
// return several outputs (floating ones are checked). Throws kiln::Error describing the first
// mismatch (input, element, analytical vs numerical); returns true otherwise.
bool gradcheck(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs,
               const GradcheckOptions& options = {}, SourceLoc loc = SourceLoc::current());

}  // namespace kiln
