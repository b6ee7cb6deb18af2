// How autograd attaches to the layers below it, which do not know it: the dispatcher calls
// autograd through the hooks installed here, and a TensorImpl's autograd state is created and
// destroyed here (core holds it as an opaque pointer).
#include "autograd/engine.h"
#include "core/tensor_impl.h"
#include "ops/dispatch.h"

namespace kiln {

namespace autograd {
void AutogradMetaDeleter::operator()(AutogradMeta* m) const {
  if (m->grad_fn) release_node(std::move(m->grad_fn));  // a long history is freed without recursion
  delete m;
}

namespace {
[[maybe_unused]] const bool hooks_installed = ops::set_autograd_hooks(ops::AutogradHooks{
    .any_requires_grad = any_requires_grad,
    .call_with_grad = call_with_grad,
    .before_inplace_write = before_inplace_write,
    .note_view = note_view,
    .save_before_overwrite = save_before_overwrite,
});
}  // namespace
}  // namespace autograd

autograd::AutogradMeta& TensorImpl::autograd_meta() {
  if (!autograd) autograd.reset(new autograd::AutogradMeta);
  return *autograd;
}

}  // namespace kiln
