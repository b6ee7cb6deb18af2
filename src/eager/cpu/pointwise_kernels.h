// The runners of the pointwise prims' CPU kernels, shared by the elementwise_*.cc files (one
// op group each, so the ~70 ops x 12 dtypes of instantiations compile in parallel): what an op
// computes on one element is its kiln::scalar function (scalar/scalar.h, shared with generated
// code); these hold only the iteration, the dtype dispatch and the argument checks.
#pragma once
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "ops/dispatch.h"
#include "scalar/scalar.h"

namespace kiln::eager::cpu {
using ops::Args;
using ops::KernelFn;
using ops::OpId;

// The scalar function `fn` as a function object. Its call operator exists only for the types
// the function takes, so the runners below can tell which dtypes an op is implemented for.
#define SCALAR_FN(fn) decltype([](auto... v) -> decltype(::kiln::scalar::fn(v...)) { return ::kiln::scalar::fn(v...); })

// out = f(x) with x converted to dtype `in_dt` first; f sees acc_t<T> values.
template <class F>
void unary_run(const Tensor& out, const Tensor& x, DType in_dt, F f) {
  Tensor xin = x.dtype() == in_dt ? x : convert_element_type(x, in_dt);
  // The output is either of the compute dtype or bool (predicates): two instantiations per op.
  visit_all(in_dt, [&]<class T>(type_tag<T>) {
    if constexpr (requires(acc_t<T> v) { f(v); }) {
      // A predicate's loop is instantiated once, for its bool output: another output dtype
      // (never one a meta gives) goes through a bool temporary.
      if constexpr (std::is_same_v<decltype(f(std::declval<acc_t<T>>())), bool>) {
        const Tensor dst = out.dtype() == kBool ? out : make_tensor(out.sizes(), kBool, out.device());
        map_unary<bool, T>(dst, xin, [&](acc_t<T> v) { return f(v); });
        if (!dst.is_same(out)) copy_into(out, dst);
      } else {
        map_unary<T, T>(out, xin, [&](acc_t<T> v) { return cast<T>(f(v)); });
      }
    } else {
      detail::fail(std::string("not implemented for ") + name(in_dt));
    }
  });
}

template <class F>
void binary_run(const Tensor& out, const Tensor& x, const Tensor& y, DType dt, F f) {
  Tensor xa = x.dtype() == dt ? x : convert_element_type(x, dt);
  Tensor ya = y.dtype() == dt ? y : convert_element_type(y, dt);
  visit_all(dt, [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    if constexpr (requires(A u, A v) { f(u, v); }) {
      if constexpr (std::is_same_v<decltype(f(std::declval<A>(), std::declval<A>())), bool>) {  // as unary_run
        const Tensor dst = out.dtype() == kBool ? out : make_tensor(out.sizes(), kBool, out.device());
        map_binary<bool, T>(dst, xa, ya, [&](A u, A v) { return f(u, v); });
        if (!dst.is_same(out)) copy_into(out, dst);
      } else {
        map_binary<T, T>(out, xa, ya, [&](A u, A v) { return cast<T>(f(u, v)); });
      }
    } else {
      detail::fail(std::string("not implemented for ") + name(dt));
    }
  });
}

// Predicates and comparisons (dtype rule BOOL) compute in their inputs' dtype, every other
// pointwise op in its output dtype.
inline bool computes_in_input_dtype(OpId op) { return ops::op_info(op).dtype_rule == ops::DTypeRule::BOOL; }

template <class F>
std::vector<Tensor> unary_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const Tensor& x = a.tensor(0);
  Tensor out = make_tensor(specs[0]);
  unary_run(out, x, computes_in_input_dtype(a.op) ? x.dtype() : out.dtype(), F{});
  return {out};
}

// Whether t holds a zero (elementwise.cc).
bool any_zero(const Tensor& t);

// Integer division and modulo by zero raise (the scalar functions would give 0).
enum class ZeroDivisor { Allowed, DivisionError, ModuloError };

template <class F, ZeroDivisor Z = ZeroDivisor::Allowed>
std::vector<Tensor> binary_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  Tensor out = make_tensor(specs[0]);
  DType dt = out.dtype();
  // Two non-wrapped tensors of one dtype skip result_type's general rules.
  if (computes_in_input_dtype(a.op))
    dt = x.dtype() == y.dtype() && !x.is_wrapped_number() && !y.is_wrapped_number() ? x.dtype() : result_type({x, y});
  if constexpr (Z != ZeroDivisor::Allowed) {
    if (is_integral(dt, true) && out.numel() > 0)  // an empty result divides nothing (y may broadcast away)
      KILN_CHECK_HINT(!any_zero(y), "mask the zeros out first",
                      Z == ZeroDivisor::DivisionError ? "integer division by zero" : "integer modulo by zero");
  }
  binary_run(out, x, y, dt, F{});
  return {out};
}

// The case lines of the groups' tables (only the elementwise_*.cc files include this header).
#define UNARY(fn) case OpId::fn: return unary_kernel<SCALAR_FN(fn)>;
#define BINARY(fn) case OpId::fn: return binary_kernel<SCALAR_FN(fn)>;
#define BINARY_NONZERO(fn, error) case OpId::fn: return binary_kernel<SCALAR_FN(fn), ZeroDivisor::error>;

// The kernel of each op of one group, null for an op outside it (elementwise.cc registers them).
KernelFn unary_kernel_of(OpId op);        // elementwise_unary.cc: signs, rounding, predicates
KernelFn unary_math_kernel_of(OpId op);   // elementwise_math.cc: exp, log, trigonometric, special
KernelFn arith_kernel_of(OpId op);        // elementwise_arith.cc: add ... fmod, pow, nextafter
KernelFn compare_kernel_of(OpId op);      // elementwise_compare.cc: comparisons, logical, bitwise

}  // namespace kiln::eager::cpu
