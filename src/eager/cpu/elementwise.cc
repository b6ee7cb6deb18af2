// CPU kernels of the pointwise prims (unary, binary, where, convert_element_type) and copy_.
// What an op computes on one element is its kiln::scalar function (scalar/scalar.h, shared
// with generated code); this file holds only the iteration, the dtype dispatch, the argument
// checks and the registration, which reads the op family from ops.def.
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "ops/dispatch.h"
#include "scalar/scalar.h"

namespace kiln::eager::cpu {
namespace {
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
      // A bool output of another dtype's input exists only for predicates (their function
      // returns bool): instantiating it for every op doubled this file's compile time.
      if constexpr (std::is_same_v<decltype(f(std::declval<acc_t<T>>())), bool>) {
        if (out.dtype() == kBool) return map_unary<bool, T>(out, xin, [&](acc_t<T> v) { return f(v); });
      }
      map_unary<T, T>(out, xin, [&](acc_t<T> v) { return cast<T>(f(v)); });
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
      if constexpr (std::is_same_v<decltype(f(std::declval<A>(), std::declval<A>())), bool>) {
        if (out.dtype() == kBool) return map_binary<bool, T>(out, xa, ya, [&](A u, A v) { return f(u, v); });
      }
      map_binary<T, T>(out, xa, ya, [&](A u, A v) { return cast<T>(f(u, v)); });
    } else {
      detail::fail(std::string("not implemented for ") + name(dt));
    }
  });
}

// Predicates and comparisons (dtype rule BOOL) compute in their inputs' dtype, every other
// pointwise op in its output dtype.
bool computes_in_input_dtype(OpId op) { return ops::op_info(op).dtype_rule == ops::DTypeRule::BOOL; }

template <class F>
std::vector<Tensor> unary_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const Tensor& x = a.tensor(0);
  Tensor out = make_tensor(specs[0]);
  unary_run(out, x, computes_in_input_dtype(a.op) ? x.dtype() : out.dtype(), F{});
  return {out};
}

bool any_zero(const Tensor& t) {
  Tensor z = eq(t, ops::scalar_to_tensor(Scalar(int64_t(0))));
  return any(z).item<bool>();
}

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

// div's rounding mode picks the function: None div, "trunc" div_trunc, "floor" floor_divide.
std::vector<Tensor> div_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  if (a.is_none(2)) return binary_kernel<SCALAR_FN(div)>(a, specs);
  if (a.str(2) == "floor") return binary_kernel<SCALAR_FN(floor_divide), ZeroDivisor::DivisionError>(a, specs);
  return binary_kernel<SCALAR_FN(div_trunc), ZeroDivisor::DivisionError>(a, specs);
}

std::vector<Tensor> pow_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  // As PyTorch: a negative scalar exponent of an integer base is an error; a tensor of
  // exponents may hold negative ones (the result is then 1, -1 or 0).
  const Tensor& y = a.tensor(1);
  if (is_integral(specs[0].dtype) && y.is_wrapped_number()) {
    Tensor neg_exp = lt(y, ops::scalar_to_tensor(Scalar(int64_t(0))));
    KILN_CHECK_HINT(!any(neg_exp).item<bool>(), "convert the base to a float dtype",
                    "integers to negative integer powers are not allowed");
  }
  return binary_kernel<SCALAR_FN(pow)>(a, specs);
}

std::vector<Tensor> nextafter_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const DType rdt = specs[0].dtype;
  if (rdt != kFloat16 && rdt != kBFloat16) return binary_kernel<SCALAR_FN(nextafter)>(a, specs);
  // 16-bit floats step in their own precision: the neighbour of the storage value.
  Tensor out = make_tensor(specs[0]);
  Tensor xa = a.tensor(0).to(rdt), ya = a.tensor(1).to(rdt);
  if (rdt == kFloat16) map_binary<Half, Half>(out, xa, ya, scalar::nextafter_float16);
  else map_binary<BFloat16, BFloat16>(out, xa, ya, scalar::nextafter_bfloat16);
  return {out};
}

std::vector<Tensor> where_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor out = make_tensor(specs[0]);
  const Tensor& c = a.tensor(0);
  Tensor x = a.tensor(1).to(out.dtype()), y = a.tensor(2).to(out.dtype());
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    StridedLoop loop({&out, &c, &x, &y}, out.sizes());
    loop.run([&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = scalar::where(*reinterpret_cast<const bool*>(p[1] + i * s[1]),
                                                               *reinterpret_cast<const T*>(p[2] + i * s[2]),
                                                               *reinterpret_cast<const T*>(p[3] + i * s[3]));
    });
  });
  return {out};
}

std::vector<Tensor> convert_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor out = make_tensor(specs[0]);
  copy_into(out, a.tensor(0));
  return {out};
}

std::vector<Tensor> copy_kernel(const Args& a, const std::vector<TensorSpec>&) {
  const Tensor &self = a.tensor(0), &src = a.tensor(1);
  // Overlapping source and destination (e.g. x.copy_(x.flip(0)) views): go through a temporary.
  const bool overlap = self.shares_storage(src) && !(self.impl() == src.impl());
  copy_into(self, overlap ? convert_element_type(src, src.dtype()) : src);
  return {self};
}

// The kernel of each pointwise op, by its scalar function; null for an op without one.
KernelFn pointwise_kernel(OpId op) {
#define UNARY(fn) case OpId::fn: return unary_kernel<SCALAR_FN(fn)>;
#define BINARY(fn) case OpId::fn: return binary_kernel<SCALAR_FN(fn)>;
#define BINARY_NONZERO(fn, error) case OpId::fn: return binary_kernel<SCALAR_FN(fn), ZeroDivisor::error>;
  switch (op) {
    UNARY(neg) UNARY(abs) UNARY(sign) UNARY(exp) UNARY(exp2) UNARY(expm1) UNARY(log) UNARY(log2) UNARY(log1p)
    UNARY(sqrt) UNARY(rsqrt) UNARY(reciprocal) UNARY(sin) UNARY(cos) UNARY(tan) UNARY(tanh) UNARY(asin)
    UNARY(acos) UNARY(atan) UNARY(sinh) UNARY(cosh) UNARY(asinh) UNARY(acosh) UNARY(atanh) UNARY(erf)
    UNARY(erfc) UNARY(erfinv) UNARY(sigmoid) UNARY(floor) UNARY(ceil) UNARY(round) UNARY(trunc) UNARY(isnan)
    UNARY(isinf) UNARY(isfinite) UNARY(logical_not) UNARY(bitwise_not) UNARY(lgamma) UNARY(digamma)
    UNARY(relu)  // a composite with a fast kernel
    BINARY(add) BINARY(sub) BINARY(mul) BINARY(maximum) BINARY(minimum) BINARY(atan2) BINARY(hypot)
    BINARY(copysign) BINARY(eq) BINARY(ne) BINARY(lt) BINARY(le) BINARY(gt) BINARY(ge) BINARY(logical_and)
    BINARY(logical_or) BINARY(logical_xor) BINARY(bitwise_and) BINARY(bitwise_or) BINARY(bitwise_xor)
    BINARY(shift_left) BINARY(shift_right_arithmetic)
    BINARY_NONZERO(floor_divide, DivisionError) BINARY_NONZERO(remainder, ModuloError) BINARY_NONZERO(fmod, ModuloError)
    case OpId::div: return div_kernel;
    case OpId::pow: return pow_kernel;
    case OpId::nextafter: return nextafter_kernel;
    case OpId::where: return where_kernel;
    case OpId::convert_element_type: return convert_kernel;
    default: return nullptr;
  }
#undef UNARY
#undef BINARY
#undef BINARY_NONZERO
}

// Every op of family POINTWISE in ops.def that has a scalar function gets its kernel (each
// pointwise prim must: tests/unit/scalar/scalar_semantics_test.cc checks).
[[maybe_unused]] const bool kPointwiseKernelsRegistered = [] {
  for (int i = 0; i < ops::kNumOps; ++i) {
    const ops::OpInfo& info = ops::op_info(OpId(i));
    if (info.family != ops::OpFamily::POINTWISE) continue;
    if (KernelFn k = pointwise_kernel(info.id)) ops::register_kernel(info.id, k);
  }
  return true;
}();

}  // namespace

KILN_REGISTER(kernel, copy_, copy_kernel);

}  // namespace kiln::eager::cpu
