// CPU kernels of cat, constant_pad and flip: copies between strided views (eager/layout_copies.h,
// which the CUDA kernels share).
#include "eager/cpu/loops.h"
#include "eager/layout_copies.h"
#include "ops/dispatch.h"

namespace kiln::eager::cpu {
namespace {

void copy_on_cpu(const Tensor& dst, const Tensor& src) { copy_into(dst, src); }

KILN_KERNEL(cat) { return cat_by_copies(a, specs, copy_on_cpu); }
KILN_KERNEL(constant_pad) { return constant_pad_by_copies(a, specs, copy_on_cpu); }
KILN_KERNEL(flip) { return flip_by_copies(a, specs, copy_on_cpu); }

}  // namespace
}  // namespace kiln::eager::cpu
