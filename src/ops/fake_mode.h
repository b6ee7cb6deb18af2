// Fake mode: for its lifetime every op returns fake tensors (metadata from the meta functions,
// no memory), so a model can be built and traced without allocating anything. Capturing a large
// model to inspect or compile its graph costs neither its memory nor its initialization.
//
//   ops::FakeModeScope fake;
//   gpt::GPT model(config);          // every parameter is a fake tensor
//
// In-place ops write nothing in fake mode, also on real tensors: keep real work outside the scope.
// The graph IR infers node specs in this mode, so capture (which calls it from inside its own
// dispatch mode) never records the inner calls.
#pragma once
#include "ops/dispatch.h"

namespace kiln::ops {

class FakeMode : public DispatchMode {
 public:
  std::optional<std::vector<Tensor>> intercept(const ops::Args& a) override;
};

class FakeModeScope {
 public:
  FakeModeScope();
  ~FakeModeScope();
  FakeModeScope(const FakeModeScope&) = delete;
  FakeModeScope& operator=(const FakeModeScope&) = delete;

 private:
  FakeMode mode_;
  DispatchMode* prev_;
};

}  // namespace kiln::ops
