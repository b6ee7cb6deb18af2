// Fake mode: meta functions answer every op.
#include "capture/fake_mode.h"

#include "core/tensor_impl.h"

namespace kiln::capture {

std::optional<std::vector<Tensor>> FakeMode::intercept(const ops::Args& a) {
  const ops::OpInfo& info = ops::op_info(a.op);
  // Views of fake tensors are fake views (the dispatcher makes them); ops without a meta function
  // decompose into ops that have one, each of which comes back here.
  if (info.kind == ops::OpKind::VIEW || !info.meta) return std::nullopt;
  std::vector<TensorSpec> specs = info.meta(a);
  if (info.flags & ops::MUTATES) return std::vector<Tensor>{a.tensor(0)};  // writes nothing: there is no data
  std::vector<Tensor> outs;
  for (TensorSpec& s : specs) outs.push_back(make_fake(s));
  return outs;
}

FakeModeScope::FakeModeScope() : prev_(ops::set_dispatch_mode(&mode_)) {}
FakeModeScope::~FakeModeScope() { ops::set_dispatch_mode(prev_); }

}  // namespace kiln::capture
