// Meta function of matmul: torch.matmul's shape rules (1-d operands promoted then removed,
// batch dims broadcast) and its dtype rule (both operands of one dtype, no promotion).
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

KILN_META(matmul) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  KILN_CHECK(x.dim() >= 1 && y.dim() >= 1, "both arguments to matmul need to be at least 1D, but they are ",
             x.dim(), "D and ", y.dim(), "D");
  KILN_CHECK_HINT(x.dtype() == y.dtype(), "convert one operand, e.g. b.to(a.dtype())",
                  "expected both operands to have the same dtype, but got ", name(x.dtype()), " and ",
                  name(y.dtype()));
  KILN_CHECK(x.dtype() != kBool, "matmul is not implemented for Bool tensors");
  const SymShape xs = x.sym_sizes(), ys = y.sym_sizes();
  const SymInt kx = xs.back(), ky = y.dim() == 1 ? ys[0] : ys[ys.size() - 2];
  KILN_CHECK(kx == ky, "matmul: shapes ", shape_str(xs), " and ", shape_str(ys), " cannot be multiplied (", kx,
             " != ", ky, ")");
  // Batch dims: all but the last two of each operand (1-d operands have none).
  SymShape xb(xs.begin(), xs.end() - std::min<int64_t>(x.dim(), 2));
  SymShape yb(ys.begin(), ys.end() - std::min<int64_t>(y.dim(), 2));
  SymShape out = broadcast_shapes(xb, yb);
  if (x.dim() >= 2) out.push_back(xs[xs.size() - 2]);
  if (y.dim() >= 2) out.push_back(ys.back());
  return {spec_like(x, out, x.dtype())};
}

}  // namespace
}  // namespace kiln::ops
