// The pointwise prims as tile ops (prims.h): one table from OpId to its kiln::scalar function.
#include "tile/prims.h"

#include <type_traits>

#include "scalar/scalar.h"

namespace kiln::tile {
namespace {

using ops::OpId;

template <class T>
struct tag {
  using type = T;
};

// f(tag<C>) with C the compute type of dtype d (16-bit floats compute in float).
template <class F>
decltype(auto) visit_compute(DType d, F&& f) {
  switch (d) {
    case kBool: return f(tag<bool>{});
    case kUInt8: return f(tag<scalar::u8>{});
    case kInt8: return f(tag<scalar::i8>{});
    case kInt16: return f(tag<scalar::i16>{});
    case kInt32: return f(tag<scalar::i32>{});
    case kInt64: return f(tag<scalar::i64>{});
    case kFloat16:
    case kBFloat16:
    case kFloat32: return f(tag<float>{});
    case kFloat64: return f(tag<double>{});
  }
  return f(tag<float>{});
}

// The scalar function `fn` as a function object whose call exists only for the types it takes.
#define SCALAR_FN(fn) decltype([](auto... v) -> decltype(::kiln::scalar::fn(v...)) { return ::kiln::scalar::fn(v...); })

// Every pointwise prim but convert_element_type (the Cast op) and where (three operands).
// tests/unit/tile/tile_prims_test.cc checks this list against ops.def.
#define KILN_TILE_UNARY(X)                                                                              \
  X(neg) X(abs) X(sign) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log1p) X(sqrt) X(rsqrt) X(reciprocal) \
  X(sin) X(cos) X(tan) X(tanh) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(asinh) X(acosh) X(atanh)      \
  X(erf) X(erfc) X(erfinv) X(sigmoid) X(floor) X(ceil) X(round) X(trunc) X(isnan) X(isinf)             \
  X(isfinite) X(logical_not) X(bitwise_not) X(lgamma) X(digamma)
#define KILN_TILE_BINARY(X)                                                                                  \
  X(add) X(sub) X(mul) X(floor_divide) X(remainder) X(fmod) X(pow) X(maximum) X(minimum) X(atan2) X(eq)    \
  X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or) X(logical_xor) X(bitwise_and) X(bitwise_or)   \
  X(bitwise_xor) X(shift_left) X(shift_right_arithmetic) X(hypot) X(copysign) X(nextafter)

using DivFn = SCALAR_FN(div);
using DivTruncFn = SCALAR_FN(div_trunc);
using FloorDivFn = SCALAR_FN(floor_divide);

// g(function object) for the scalar function of (op, rounding); false if op is no tile prim.
template <class G>
bool with_function(OpId op, Rounding r, G&& g) {
  switch (op) {
#define CASE(fn) \
  case OpId::fn: g(SCALAR_FN(fn){}); return true;
    KILN_TILE_UNARY(CASE)
    KILN_TILE_BINARY(CASE)
#undef CASE
    case OpId::div:
      if (r == Rounding::Trunc) g(DivTruncFn{});
      else if (r == Rounding::Floor) g(FloorDivFn{});
      else g(DivFn{});
      return true;
    default: return false;
  }
}

template <class T>
T from_scalar(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) return s.to_bool();
  else if constexpr (std::is_floating_point_v<T>) return T(s.to_double());
  else if (s.is_float()) return scalar::float_to_int<T>(s.to_double());
  else return T(s.to_int());  // wraps to the width, as convert_element_type
}

// A compute value as a Scalar of dtype d (16-bit floats rounded to their format).
template <class T>
Scalar to_scalar(T v, DType d) {
  if constexpr (std::is_same_v<T, bool>) return Scalar(v);
  else if constexpr (std::is_floating_point_v<T>) {
    if (d == kFloat16) return Scalar(double(scalar::float16_to_float(scalar::float_to_float16(float(v)))));
    if (d == kBFloat16) return Scalar(double(scalar::bfloat16_to_float(scalar::float_to_bfloat16(float(v)))));
    return Scalar(double(v));
  } else {
    return Scalar(int64_t(v));
  }
}

}  // namespace

int prim_arity(OpId op) {
  switch (op) {
#define ONE(fn) case OpId::fn:
    KILN_TILE_UNARY(ONE) return 1;
    KILN_TILE_BINARY(ONE) case OpId::div : return 2;
#undef ONE
    case OpId::where: return 3;
    default: return 0;
  }
}

bool prim_supports(OpId op, DType d, Rounding r) {
  if (op == OpId::where) return true;
  if (r != Rounding::None && op != OpId::div) return false;
  bool ok = false;
  with_function(op, r, [&]<class F>(F) {
    visit_compute(d, [&]<class T>(tag<T>) {
      if (prim_arity(op) == 1) ok = std::is_invocable_v<F, T>;
      else ok = std::is_invocable_v<F, T, T>;
    });
  });
  return ok;
}

DType prim_result_dtype(OpId op, DType d) {
  return ops::op_info(op).dtype_rule == ops::DTypeRule::BOOL ? kBool : d;
}

std::string prim_function(OpId op, Rounding r, DType d) {
  if (op == OpId::div) return r == Rounding::Trunc ? "div_trunc" : r == Rounding::Floor ? "floor_divide" : "div";
  if (op == OpId::nextafter && d == kFloat16) return "nextafter_float16";
  if (op == OpId::nextafter && d == kBFloat16) return "nextafter_bfloat16";
  return ops::op_info(op).name;
}

Scalar eval_prim(OpId op, Rounding r, DType d, const std::vector<Scalar>& args) {
  KILN_CHECK(int(args.size()) == prim_arity(op), "eval_prim: ", ops::op_info(op).name, " takes ", prim_arity(op),
             " operands, got ", args.size());
  if (op == OpId::where) return represent(args[0].to_bool() ? args[1] : args[2], d);
  if (op == OpId::nextafter && (d == kFloat16 || d == kBFloat16)) {
    const float a = float(represent(args[0], d).to_double()), b = float(represent(args[1], d).to_double());
    return Scalar(double(d == kFloat16 ? scalar::nextafter_float16(a, b) : scalar::nextafter_bfloat16(a, b)));
  }
  const DType out = prim_result_dtype(op, d);
  Scalar result;
  bool done = false;
  with_function(op, r, [&]<class F>(F f) {
    visit_compute(d, [&]<class T>(tag<T>) {
      const T a = from_scalar<T>(represent(args[0], d));
      if constexpr (std::is_invocable_v<F, T>) {
        if (args.size() == 1) {
          const auto v = f(a);
          result = to_scalar(v, out == kBool ? kBool : d), done = true;
        }
      }
      if constexpr (std::is_invocable_v<F, T, T>) {
        if (args.size() == 2) {
          const auto v = f(a, from_scalar<T>(represent(args[1], d)));
          result = to_scalar(v, out == kBool ? kBool : d), done = true;
        }
      }
    });
  });
  KILN_CHECK(done, "eval_prim: ", ops::op_info(op).name, " is not defined for ", name(d));
  return result;
}

Scalar eval_cast(const Scalar& v, DType from, DType to) {
  const Scalar x = represent(v, from);
  return visit_compute(from, [&]<class F>(tag<F>) {
    const F a = from_scalar<F>(x);
    return visit_compute(to, [&]<class T>(tag<T>) { return to_scalar(scalar::convert_element_type<T>(a), to); });
  });
}

Scalar represent(const Scalar& v, DType d) {
  return visit_compute(d, [&]<class T>(tag<T>) { return to_scalar(from_scalar<T>(v), d); });
}

}  // namespace kiln::tile
