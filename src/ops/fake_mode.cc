// Fake mode: meta functions answer every op.
#include "ops/fake_mode.h"

#include "core/tensor_impl.h"

namespace kiln::ops {

std::optional<std::vector<Tensor>> FakeMode::intercept(const Args& a) {
  const OpInfo& info = op_info(a.op);
  // Views of fake tensors are fake views (the dispatcher makes them); ops without a meta function
  // decompose into ops that have one, each of which comes back here.
  if (info.kind == OpKind::VIEW || !info.meta) return std::nullopt;
  std::vector<TensorSpec> specs = info.meta(a);
  if (info.flags & MUTATES) return std::vector<Tensor>{a.tensor(0)};  // writes nothing: there is no data
  std::vector<Tensor> outs;
  for (TensorSpec& s : specs) outs.push_back(make_fake(s));
  return outs;
}

FakeModeScope::FakeModeScope() : prev_(set_dispatch_mode(&mode_)) {}
FakeModeScope::~FakeModeScope() { set_dispatch_mode(prev_); }

}  // namespace kiln::ops
