// Linear algebra composites, all reduced to matmul (the prim) plus elementwise ops.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

Tensor num(Scalar s) { return ops::scalar_to_tensor(s); }

void check_mm(const char* op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dim() == 2, op, ": self must be a matrix, got ", a.dim(), " dims");
  KILN_CHECK(b.dim() == 2, op, ": mat2 must be a matrix, got ", b.dim(), " dims");
  KILN_CHECK(a.sym_size(1) == b.sym_size(0), op, ": mat1 and mat2 shapes cannot be multiplied (",
             a.sym_size(0), "x", a.sym_size(1), " and ", b.sym_size(0), "x", b.sym_size(1), ")");
}

void check_bmm(const char* op, const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dim() == 3, op, ": batch1 must be a 3D tensor, got ", a.dim(), " dims");
  KILN_CHECK(b.dim() == 3, op, ": batch2 must be a 3D tensor, got ", b.dim(), " dims");
  KILN_CHECK(a.sym_size(0) == b.sym_size(0), op, ": batch1 and batch2 must have the same batch size, got ",
             a.sym_size(0), " and ", b.sym_size(0));
  KILN_CHECK(a.sym_size(2) == b.sym_size(1), op, ": shapes ", shape_str(a.sym_sizes()), " and ",
             shape_str(b.sym_sizes()), " cannot be multiplied (", a.sym_size(2), " != ", b.sym_size(1), ")");
}

// beta * self + alpha * prod, PyTorch's addmm rules: self broadcasts to the product's shape, and
// with beta == 0 self is ignored (its nan/inf do not propagate).
Tensor add_scaled(const char* op, const Tensor& self, const Tensor& prod, Scalar beta, Scalar alpha) {
  const SymShape b = ops::broadcast_shapes(self.sym_sizes(), prod.sym_sizes());
  KILN_CHECK(b == prod.sym_sizes(), op, ": self of shape ", shape_str(self.sym_sizes()),
             " does not broadcast to the product's shape ", shape_str(prod.sym_sizes()));
  KILN_CHECK_HINT(self.dtype() == prod.dtype(), "convert self to the matrices' dtype", op, ": self dtype ",
                  name(self.dtype()), " differs from the matrices' dtype ", name(prod.dtype()));
  if (is_integral(prod.dtype())) {  // PyTorch converts the factors to the integer dtype (0.5 -> 0): no promotion
    beta = ops::integer_scalar(op, "beta", beta, prod.dtype());
    alpha = ops::integer_scalar(op, "alpha", alpha, prod.dtype());
  }
  Tensor p = alpha.to_double() == 1.0 ? prod : mul(prod, num(alpha));
  if (beta.to_double() == 0.0) return p;
  Tensor s = beta.to_double() == 1.0 ? self : mul(self, num(beta));
  return add(s, p);
}

KILN_DECOMP(mm) {
  check_mm("mm", a.tensor(0), a.tensor(1));
  return {matmul(a.tensor(0), a.tensor(1))};
}

KILN_DECOMP(bmm) {
  check_bmm("bmm", a.tensor(0), a.tensor(1));
  return {matmul(a.tensor(0), a.tensor(1))};
}

KILN_DECOMP(addmm) {
  check_mm("addmm", a.tensor(1), a.tensor(2));
  return {add_scaled("addmm", a.tensor(0), matmul(a.tensor(1), a.tensor(2)), a.scalar(3), a.scalar(4))};
}

KILN_DECOMP(baddbmm) {
  check_bmm("baddbmm", a.tensor(1), a.tensor(2));
  return {add_scaled("baddbmm", a.tensor(0), matmul(a.tensor(1), a.tensor(2)), a.scalar(3), a.scalar(4))};
}

KILN_DECOMP(linear) {
  const Tensor &x = a.tensor(0), &w = a.tensor(1);
  const Tensor b = a.opt_tensor(2);
  KILN_CHECK(w.dim() == 1 || w.dim() == 2, "linear: weight must be 1-D or 2-D, got ", w.dim(), " dims");
  KILN_CHECK(x.dim() >= 1, "linear: input must have at least 1 dim");
  KILN_CHECK(x.sym_size(-1) == w.sym_size(-1), "linear: input features (", x.sym_size(-1),
             ") do not match the weight's in_features (", w.sym_size(-1), "); weight shape ",
             shape_str(w.sym_sizes()));
  Tensor y = matmul(x, w.dim() == 2 ? mT(w) : w);
  return {b.defined() ? add(y, b) : y};
}

void check_vectors(const char* op, const Tensor& x, const Tensor& y) {
  KILN_CHECK(x.dim() == 1 && y.dim() == 1, op, ": 1D tensors expected, but got ", x.dim(), "D and ", y.dim(),
             "D tensors");
  KILN_CHECK(x.sym_size(0) == y.sym_size(0), op, ": inconsistent tensor size, expected tensor [", x.sym_size(0),
             "] and src [", y.sym_size(0), "] to have the same number of elements");
  KILN_CHECK(x.dtype() == y.dtype(), op, ": expected both vectors to have same dtype, but found ", name(x.dtype()),
             " and ", name(y.dtype()));
}

KILN_DECOMP(dot) {
  check_vectors("dot", a.tensor(0), a.tensor(1));
  return {matmul(a.tensor(0), a.tensor(1))};
}

KILN_DECOMP(vdot) {  // real dtypes only: no conjugation
  check_vectors("vdot", a.tensor(0), a.tensor(1));
  return {matmul(a.tensor(0), a.tensor(1))};
}

KILN_DECOMP(outer) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  KILN_CHECK(x.dim() == 1 && y.dim() == 1, "outer: 1D tensors expected, but got ", x.dim(), "D and ", y.dim(), "D");
  return {mul(unsqueeze(x, 1), unsqueeze(y, 0))};
}

}  // namespace
}  // namespace kiln::decomp
