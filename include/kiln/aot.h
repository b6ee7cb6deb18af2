// AOT autograd settings for the "aot_eager" backend (docs/aot.md).
#pragma once

namespace kiln::aot {

// Memory/time trade-off of the forward/backward partition, in [0, 1]: 0 saves the fewest bytes
// for the backward (recomputing what is cheap), 1 saves every value the backward reads (no
// recomputation). Read when a compiled function builds its plan (first call per requires-grad
// pattern); like PyTorch's functorch config, it is process-wide. Default 0.
void set_activation_memory_budget(double budget);
double activation_memory_budget();

}  // namespace kiln::aot
