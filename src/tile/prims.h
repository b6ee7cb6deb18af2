// The pointwise prims of ops.def as tile ops: which exist, how many operands they take, which
// dtypes kiln::scalar defines them for, and their value on constants (constant folding). The
// answers come from the scalar functions themselves (src/scalar/scalar.h), so the tile IR accepts
// exactly what the scalar header computes.
#pragma once
#include <kiln/dtype.h>

#include "ops/dispatch.h"
#include "tile/ir.h"

namespace kiln::tile {

// Whether `op` is a pointwise prim of ops.def that the tile IR has as a Pointwise op (every one
// but convert_element_type, which is the Cast op). 0 arity: not one.
int prim_arity(ops::OpId op);
inline bool is_prim(ops::OpId op) { return prim_arity(op) > 0; }
// Whether the prim's scalar function takes operands of dtype `d` (16-bit floats: computed in
// float, as eager). For where, `d` is the dtype of its two value operands.
bool prim_supports(ops::OpId op, DType d, Rounding r = Rounding::None);
// The result dtype for operands of dtype `d`: bool for comparisons and predicates (ops.def's
// dtype rule BOOL), else `d`.
DType prim_result_dtype(ops::OpId op, DType d);
// The name of the kiln::scalar function computing the prim on dtype `d` ("exp", "div_trunc",
// "floor_divide" for div's modes, "nextafter_float16" for 16-bit nextafter).
std::string prim_function(ops::OpId op, Rounding r, DType d);

// The prim on constant operands of dtype `d` (where: a bool and two of `d`), as generated code
// computes it: the same scalar function, 16-bit results rounded. Numbers are kept as Scalar
// (bool, int64 or double).
Scalar eval_prim(ops::OpId op, Rounding r, DType d, const std::vector<Scalar>& args);
// convert_element_type of a constant from dtype `from` to `to` (Cast folding).
Scalar eval_cast(const Scalar& v, DType from, DType to);
// A number as dtype `d` holds it (wrapped to the integer width, rounded to the float format).
Scalar represent(const Scalar& v, DType d);

}  // namespace kiln::tile
