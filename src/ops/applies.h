// Per-call choice between a composite's fast kernel and its decomposition: a kernel may cover
// only some calls of its op (e.g. cross_entropy with class-index targets, attention without
// dropout). Where the registered predicate returns false, the dispatcher runs the
// decomposition (and, with grad, records the decomposition's prims instead of the derivative).
#pragma once
#include "ops/dispatch.h"

namespace kiln::ops {

using AppliesFn = bool (*)(const Args& a);  // must not read tensor data
bool register_kernel_applies(OpId op, AppliesFn fn);
// True unless a predicate registered for a.op declines this call.
bool kernel_applies(const Args& a);

}  // namespace kiln::ops
