// Meta functions of the elementwise prims: broadcasting and PyTorch's type promotion.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"
#include "core/tensor_impl.h"

namespace kiln::ops {
namespace {

// Both concrete and of one shape (the common case): no broadcasting to work out.
bool same_concrete_sizes(const Tensor& x, const Tensor& y) {
  const TensorImpl *a = x.impl(), *b = y.impl();
  return !a->sym && !b->sym && a->sizes == b->sizes;
}

// The dtype an elementwise op computes in (also its output dtype, except for comparisons).
DType compute_dtype(OpId op, const Tensor& x, const Tensor& y) {
  // Two non-wrapped tensors of one dtype promote to it: skip result_type's general rules.
  const bool same = x.dtype() == y.dtype() && !x.is_wrapped_number() && !y.is_wrapped_number();
  DType common = same ? x.dtype() : result_type({x, y});
  switch (op) {
    case OpId::atan2: case OpId::hypot: case OpId::copysign: case OpId::nextafter:
      return float_result(common);
    default:
      return common;
  }
}

std::vector<TensorSpec> unary_float(const Args& a) {
  const Tensor& x = a.tensor(0);
  return {spec_like(x, float_result(x.dtype()))};
}

std::vector<TensorSpec> unary_same(const Args& a) {
  const Tensor& x = a.tensor(0);
  if (a.op == OpId::neg)
    KILN_CHECK_HINT(x.dtype() != kBool, "use logical_not() (or ~) on bool tensors",
                    "negation of a bool tensor is not supported");
  // relu is a composite with a fast eager kernel (per-call cost on small tensors).
  if (a.op == OpId::relu) KILN_CHECK(x.dtype() != kBool, "relu: Boolean inputs not supported");
  if (a.op == OpId::bitwise_not)
    KILN_CHECK(is_integral(x.dtype(), true), "bitwise_not needs an integer or bool tensor, got ", name(x.dtype()));
  return {spec_like(x, x.dtype())};
}

std::vector<TensorSpec> unary_bool(const Args& a) { return {spec_like(a.tensor(0), kBool)}; }

std::vector<TensorSpec> binary(const Args& a) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  SymShape shape = same_concrete_sizes(x, y) ? x.sym_sizes() : broadcast_shapes(x.sym_sizes(), y.sym_sizes());
  DType dt = compute_dtype(a.op, x, y);
  const Tensor& ref = x.is_wrapped_number() ? y : x;
  switch (a.op) {
    case OpId::eq: case OpId::ne: case OpId::lt: case OpId::le: case OpId::gt: case OpId::ge:
    case OpId::logical_and: case OpId::logical_or: case OpId::logical_xor:
      return {spec_like(ref, shape, kBool)};
    case OpId::div:
      if (a.is_none(2)) return {spec_like(ref, shape, float_result(dt))};
      {
        const std::string& mode = a.str(2);
        KILN_CHECK_HINT(mode == "trunc" || mode == "floor", "use rounding_mode=None, \"trunc\" or \"floor\"",
                        "div: unknown rounding_mode \"", mode, "\"");
      }
      return {spec_like(ref, shape, dt)};
    case OpId::sub:
      KILN_CHECK_HINT(dt != kBool, "use logical_xor() (or ^) for bool tensors",
                      "subtraction of bool tensors is not supported");
      return {spec_like(ref, shape, dt)};
    case OpId::bitwise_and: case OpId::bitwise_or: case OpId::bitwise_xor:
    case OpId::shift_left: case OpId::shift_right_arithmetic:
      KILN_CHECK(is_integral(dt, true), a.op == OpId::shift_left || a.op == OpId::shift_right_arithmetic
                                            ? "shifts" : "bitwise ops",
                 " need integer or bool tensors, got ", name(dt));
      return {spec_like(ref, shape, dt)};
    default:
      return {spec_like(ref, shape, dt)};
  }
}

std::vector<TensorSpec> where_meta(const Args& a) {
  const Tensor &c = a.tensor(0), &x = a.tensor(1), &y = a.tensor(2);
  KILN_CHECK_HINT(c.dtype() == kBool, "compare first, e.g. where(x > 0, ...)",
                  "where: the condition must be a bool tensor, got ", name(c.dtype()));
  SymShape shape = broadcast_shapes(broadcast_shapes(c.sym_sizes(), x.sym_sizes()), y.sym_sizes());
  return {spec_like(x.is_wrapped_number() ? y : x, shape, result_type({x, y}))};
}

std::vector<TensorSpec> convert_meta(const Args& a) { return {spec_like(a.tensor(0), a.dtype(1))}; }

std::vector<TensorSpec> copy_meta(const Args& a) {
  const Tensor &self = a.tensor(0), &src = a.tensor(1);
  SymShape b = broadcast_shapes(self.sym_sizes(), src.sym_sizes());
  KILN_CHECK_HINT(b == self.sym_sizes(), "the source must broadcast to the destination's shape",
                  "copy_: source of shape ", shape_str(src.sym_sizes()), " does not broadcast to ",
                  shape_str(self.sym_sizes()));
  return {self.spec()};
}

}  // namespace

#define UNARY_META(op, fn) KILN_REGISTER(meta, op, fn);
UNARY_META(exp, unary_float) UNARY_META(exp2, unary_float) UNARY_META(expm1, unary_float)
UNARY_META(log, unary_float) UNARY_META(log2, unary_float) UNARY_META(log1p, unary_float)
UNARY_META(sqrt, unary_float) UNARY_META(rsqrt, unary_float) UNARY_META(reciprocal, unary_float)
UNARY_META(sin, unary_float) UNARY_META(cos, unary_float) UNARY_META(tan, unary_float)
UNARY_META(tanh, unary_float) UNARY_META(asin, unary_float) UNARY_META(acos, unary_float)
UNARY_META(atan, unary_float) UNARY_META(sinh, unary_float) UNARY_META(cosh, unary_float)
UNARY_META(asinh, unary_float) UNARY_META(acosh, unary_float) UNARY_META(atanh, unary_float)
UNARY_META(erf, unary_float) UNARY_META(erfc, unary_float) UNARY_META(erfinv, unary_float)
UNARY_META(sigmoid, unary_float) UNARY_META(lgamma, unary_float) UNARY_META(digamma, unary_float)
UNARY_META(neg, unary_same) UNARY_META(abs, unary_same) UNARY_META(sign, unary_same)
UNARY_META(floor, unary_same) UNARY_META(ceil, unary_same) UNARY_META(round, unary_same)
UNARY_META(trunc, unary_same) UNARY_META(bitwise_not, unary_same) UNARY_META(relu, unary_same)
UNARY_META(isnan, unary_bool) UNARY_META(isinf, unary_bool) UNARY_META(isfinite, unary_bool)
UNARY_META(logical_not, unary_bool)
#undef UNARY_META

#define BINARY_META(op) KILN_REGISTER(meta, op, binary);
BINARY_META(add) BINARY_META(sub) BINARY_META(mul) BINARY_META(div) BINARY_META(floor_divide)
BINARY_META(remainder) BINARY_META(fmod) BINARY_META(pow) BINARY_META(maximum) BINARY_META(minimum)
BINARY_META(atan2) BINARY_META(eq) BINARY_META(ne) BINARY_META(lt) BINARY_META(le) BINARY_META(gt)
BINARY_META(ge) BINARY_META(logical_and) BINARY_META(logical_or) BINARY_META(logical_xor)
BINARY_META(bitwise_and) BINARY_META(bitwise_or) BINARY_META(bitwise_xor) BINARY_META(shift_left)
BINARY_META(shift_right_arithmetic) BINARY_META(hypot) BINARY_META(copysign) BINARY_META(nextafter)
#undef BINARY_META

KILN_REGISTER(meta, where, where_meta);
KILN_REGISTER(meta, convert_element_type, convert_meta);
KILN_REGISTER(meta, copy_, copy_meta);

}  // namespace kiln::ops
