// kiln._C: the compiled half of the kiln Python package.
#include "bind.h"

NB_MODULE(_C, m) {
  using namespace kiln::py;
  m.doc() = "kiln's C++ core: tensors, ops, autograd, optimizers, serialization";
  register_errors(m);
  bind_dtypes(m);
  bind_tensor(m);
  nb::handle tensor_cls = m.attr("Tensor");
  bind_ops(m, tensor_cls);
  bind_interop(m, tensor_cls);
  bind_autograd(m);
  bind_runtime(m);
  bind_optim(m);
  bind_compile(m);
  bind_tile(m);
  bind_graph_view(m);
}
