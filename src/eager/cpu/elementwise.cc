// CPU kernels of the elementwise prims (unary, binary, where, convert, copy_).
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "eager/cpu/special.h"
#include "ops/dispatch.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;
using ops::OpId;

template <class T>
constexpr bool is_flt = std::is_floating_point_v<acc_t<T>>;

// out = f(x) with x converted to dtype `in_dt` first; f sees acc_t<T> values.
template <class F>
void unary_run(const Tensor& out, const Tensor& x, DType in_dt, F f) {
  Tensor xin = x.dtype() == in_dt ? x : convert_element_type(x, in_dt);
  // The output is either of the compute dtype or bool (predicates): two instantiations per op.
  visit_all(in_dt, [&]<class T>(type_tag<T>) {
    if constexpr (requires(acc_t<T> v) { f(v); }) {
      if (out.dtype() == kBool)
        map_unary<bool, T>(out, xin, [&](acc_t<T> v) { return cast<bool>(f(v)); });
      else
        map_unary<T, T>(out, xin, [&](acc_t<T> v) { return cast<T>(f(v)); });
    } else {
      detail::fail(std::string("not implemented for ") + name(in_dt));
    }
  });
}

// A function object usable on every acc type: float ops get float or double.
#define FLOAT_FN(expr) [](auto x) -> decltype(x) requires std::is_floating_point_v<decltype(x)> { return expr; }

std::vector<Tensor> unary_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const Tensor& x = a.tensor(0);
  Tensor out = make_tensor(specs[0]);
  const DType rdt = out.dtype();
  using std::abs;
  switch (a.op) {
    case OpId::exp: unary_run(out, x, rdt, FLOAT_FN(std::exp(x))); break;
    case OpId::exp2: unary_run(out, x, rdt, FLOAT_FN(std::exp2(x))); break;
    case OpId::expm1: unary_run(out, x, rdt, FLOAT_FN(std::expm1(x))); break;
    case OpId::log: unary_run(out, x, rdt, FLOAT_FN(std::log(x))); break;
    case OpId::log2: unary_run(out, x, rdt, FLOAT_FN(std::log2(x))); break;
    case OpId::log1p: unary_run(out, x, rdt, FLOAT_FN(std::log1p(x))); break;
    case OpId::sqrt: unary_run(out, x, rdt, FLOAT_FN(std::sqrt(x))); break;
    case OpId::rsqrt: unary_run(out, x, rdt, FLOAT_FN(decltype(x)(1) / std::sqrt(x))); break;
    case OpId::reciprocal: unary_run(out, x, rdt, FLOAT_FN(decltype(x)(1) / x)); break;
    case OpId::sin: unary_run(out, x, rdt, FLOAT_FN(std::sin(x))); break;
    case OpId::cos: unary_run(out, x, rdt, FLOAT_FN(std::cos(x))); break;
    case OpId::tan: unary_run(out, x, rdt, FLOAT_FN(std::tan(x))); break;
    case OpId::tanh: unary_run(out, x, rdt, FLOAT_FN(std::tanh(x))); break;
    case OpId::asin: unary_run(out, x, rdt, FLOAT_FN(std::asin(x))); break;
    case OpId::acos: unary_run(out, x, rdt, FLOAT_FN(std::acos(x))); break;
    case OpId::atan: unary_run(out, x, rdt, FLOAT_FN(std::atan(x))); break;
    case OpId::sinh: unary_run(out, x, rdt, FLOAT_FN(std::sinh(x))); break;
    case OpId::cosh: unary_run(out, x, rdt, FLOAT_FN(std::cosh(x))); break;
    case OpId::asinh: unary_run(out, x, rdt, FLOAT_FN(std::asinh(x))); break;
    case OpId::acosh: unary_run(out, x, rdt, FLOAT_FN(std::acosh(x))); break;
    case OpId::atanh: unary_run(out, x, rdt, FLOAT_FN(std::atanh(x))); break;
    case OpId::erf: unary_run(out, x, rdt, FLOAT_FN(std::erf(x))); break;
    case OpId::erfc: unary_run(out, x, rdt, FLOAT_FN(std::erfc(x))); break;
    case OpId::erfinv: unary_run(out, x, rdt, FLOAT_FN(decltype(x)(erfinv(double(x))))); break;
    case OpId::sigmoid: unary_run(out, x, rdt, FLOAT_FN(decltype(x)(1) / (decltype(x)(1) + std::exp(-x)))); break;
    case OpId::lgamma: unary_run(out, x, rdt, FLOAT_FN(std::lgamma(x))); break;
    case OpId::digamma: unary_run(out, x, rdt, FLOAT_FN(decltype(x)(digamma(double(x))))); break;
    case OpId::neg:
      unary_run(out, x, rdt, [](auto v) requires(!std::is_same_v<decltype(v), bool>) { return wrap_neg(v); });
      break;
    case OpId::abs:
      unary_run(out, x, rdt, [](auto v) {
        if constexpr (std::is_same_v<decltype(v), bool> || std::is_unsigned_v<decltype(v)>) return v;
        else return decltype(v)(v < 0 ? wrap_neg(v) : v == 0 ? decltype(v)(0) : v);  // abs(INT_MIN) wraps to INT_MIN
      });
      break;
    case OpId::sign:
      unary_run(out, x, rdt, [](auto v) {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, bool>) return v;
        else if constexpr (std::is_floating_point_v<V>) return std::isnan(v) ? v : V((v > 0) - (v < 0));
        else return V((V(0) < v) - (v < V(0)));
      });
      break;
    case OpId::floor: unary_run(out, x, rdt, [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::floor(v); else return v; }); break;
    case OpId::ceil: unary_run(out, x, rdt, [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::ceil(v); else return v; }); break;
    case OpId::round: unary_run(out, x, rdt, [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::nearbyint(v); else return v; }); break;
    case OpId::trunc: unary_run(out, x, rdt, [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::trunc(v); else return v; }); break;
    case OpId::relu:  // as the decomposition where(x <= 0, 0, x): NaN stays NaN, -0.0 becomes 0
      unary_run(out, x, rdt, [](auto v) requires(!std::is_same_v<decltype(v), bool>) {
        return v <= decltype(v)(0) ? decltype(v)(0) : v;
      });
      break;
    case OpId::bitwise_not:
      unary_run(out, x, rdt, [](auto v) requires std::is_integral_v<decltype(v)> {
        if constexpr (std::is_same_v<decltype(v), bool>) return !v;
        else return decltype(v)(~v);
      });
      break;
    case OpId::isnan: unary_run(out, x, x.dtype(), [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::isnan(v); else return false; }); break;
    case OpId::isinf: unary_run(out, x, x.dtype(), [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::isinf(v); else return false; }); break;
    case OpId::isfinite: unary_run(out, x, x.dtype(), [](auto v) { if constexpr (std::is_floating_point_v<decltype(v)>) return std::isfinite(v); else return true; }); break;
    case OpId::logical_not: unary_run(out, x, x.dtype(), [](auto v) { return !(v != decltype(v)(0)); }); break;
    default: detail::fail("internal: no unary kernel");
  }
  return {out};
}

// Integer division and modulo by -1 are done without dividing: INT_MIN / -1 traps on x86.
template <class V>
bool is_minus_one(V b) {
  if constexpr (std::is_signed_v<V>) return b == V(-1); else return false;
}
template <class V>
V int_mod(V a, V b) { return is_minus_one(b) ? V(0) : V(a % b); }

template <class V>
V floor_div(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (b == 0) return a / b;
    V m = std::fmod(a, b), d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    V fd = std::floor(d);
    if (d - fd > V(0.5)) fd += 1;
    return d == 0 ? std::copysign(V(0), a / b) : fd;
  } else {
    if (is_minus_one(b)) return wrap_neg(a);
    V q = V(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? V(q - 1) : q;
  }
}

template <class V>
V py_mod(V a, V b) {
  if constexpr (std::is_floating_point_v<V>) {
    V m = std::fmod(a, b);
    if (m != 0 && ((b < 0) != (m < 0))) m += b;
    return m;
  } else {
    V m = int_mod(a, b);
    return (m != 0 && ((b < 0) != (m < 0))) ? V(m + b) : m;
  }
}

template <class V>
V int_pow(V base, V e) {
  if (e < 0) return base == 1 ? V(1) : base == V(-1) ? V(e % 2 ? -1 : 1) : V(0);
  V r = 1;
  while (e) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

// nextafter for Half/BFloat16 values (given as floats): step the 16-bit pattern by one.
template <class T>
float next_16bit(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return a + b;
  if (a == b) return b;
  uint16_t bits = T(a).bits;
  if (a == 0) bits = std::signbit(b) ? 0x8001 : 0x0001;  // the smallest subnormal towards b
  else if ((a < b) == (a > 0)) ++bits;                    // away from zero
  else --bits;
  T r;
  r.bits = bits;
  return float(r);
}

bool any_zero(const Tensor& t) {
  Tensor z = eq(t, ops::scalar_to_tensor(Scalar(int64_t(0))));
  return any(z).item<bool>();
}

template <class F>
void binary_run(const Tensor& out, const Tensor& x, const Tensor& y, DType dt, F f) {
  Tensor xa = x.dtype() == dt ? x : convert_element_type(x, dt);
  Tensor ya = y.dtype() == dt ? y : convert_element_type(y, dt);
  visit_all(dt, [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    if constexpr (requires(A u, A v) { f(u, v); }) {
      if (out.dtype() == kBool)
        map_binary<bool, T>(out, xa, ya, [&](A u, A v) { return cast<bool>(f(u, v)); });
      else
        map_binary<T, T>(out, xa, ya, [&](A u, A v) { return cast<T>(f(u, v)); });
    } else {
      detail::fail(std::string("not implemented for ") + name(dt));
    }
  });
}

std::vector<Tensor> binary_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const Tensor &x = a.tensor(0), &y = a.tensor(1);
  Tensor out = make_tensor(specs[0]);
  // The compute dtype; two non-wrapped tensors of one dtype skip result_type's general rules.
  const DType dt = x.dtype() == y.dtype() && !x.is_wrapped_number() && !y.is_wrapped_number()
                       ? x.dtype() : result_type({x, y});
  const DType rdt = out.dtype();
  switch (a.op) {
    case OpId::add:
      binary_run(out, x, y, rdt, [](auto u, auto v) {
        if constexpr (std::is_same_v<decltype(u), bool>) return bool(u || v); else return wrap_add(u, v);
      });
      break;
    case OpId::sub: binary_run(out, x, y, rdt, [](auto u, auto v) requires(!std::is_same_v<decltype(u), bool>) { return wrap_sub(u, v); }); break;
    case OpId::mul:
      binary_run(out, x, y, rdt, [](auto u, auto v) {
        if constexpr (std::is_same_v<decltype(u), bool>) return bool(u && v); else return wrap_mul(u, v);
      });
      break;
    case OpId::div: {
      if (a.is_none(2)) {
        binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_floating_point_v<decltype(u)> { return u / v; });
        break;
      }
      const bool floor_mode = a.str(2) == "floor";
      if (is_integral(rdt, true)) KILN_CHECK_HINT(!any_zero(y), "mask the zeros out first", "integer division by zero");
      binary_run(out, x, y, rdt, [floor_mode](auto u, auto v) requires(!std::is_same_v<decltype(u), bool>) {
        using V = decltype(u);
        if (floor_mode) return floor_div(u, v);
        if constexpr (std::is_floating_point_v<V>) return std::trunc(u / v);
        else return is_minus_one(v) ? wrap_neg(u) : V(u / v);
      });
      break;
    }
    case OpId::floor_divide:
      if (is_integral(rdt, true)) KILN_CHECK_HINT(!any_zero(y), "mask the zeros out first", "integer division by zero");
      binary_run(out, x, y, rdt, [](auto u, auto v) requires(!std::is_same_v<decltype(u), bool>) { return floor_div(u, v); });
      break;
    case OpId::remainder:
      if (is_integral(rdt, true)) KILN_CHECK_HINT(!any_zero(y), "mask the zeros out first", "integer modulo by zero");
      binary_run(out, x, y, rdt, [](auto u, auto v) requires(!std::is_same_v<decltype(u), bool>) { return py_mod(u, v); });
      break;
    case OpId::fmod:
      if (is_integral(rdt, true)) KILN_CHECK_HINT(!any_zero(y), "mask the zeros out first", "integer modulo by zero");
      binary_run(out, x, y, rdt, [](auto u, auto v) requires(!std::is_same_v<decltype(u), bool>) {
        if constexpr (std::is_floating_point_v<decltype(u)>) return std::fmod(u, v); else return int_mod(u, v);
      });
      break;
    case OpId::pow:
      // As PyTorch: a negative scalar exponent of an integer base is an error; a tensor of
      // exponents may hold negative ones (the result is then 1, -1 or 0).
      if (is_integral(rdt) && y.is_wrapped_number()) {
        Tensor neg_exp = lt(y, ops::scalar_to_tensor(Scalar(int64_t(0))));
        KILN_CHECK_HINT(!any(neg_exp).item<bool>(), "convert the base to a float dtype",
                        "integers to negative integer powers are not allowed");
      }
      binary_run(out, x, y, rdt, [](auto u, auto v) requires(!std::is_same_v<decltype(u), bool>) {
        if constexpr (std::is_floating_point_v<decltype(u)>) return decltype(u)(std::pow(u, v)); else return int_pow(u, v);
      });
      break;
    case OpId::maximum:
      binary_run(out, x, y, rdt, [](auto u, auto v) {
        if constexpr (std::is_floating_point_v<decltype(u)>) if (std::isnan(u) || std::isnan(v)) return u + v;
        return u > v ? u : v;
      });
      break;
    case OpId::minimum:
      binary_run(out, x, y, rdt, [](auto u, auto v) {
        if constexpr (std::is_floating_point_v<decltype(u)>) if (std::isnan(u) || std::isnan(v)) return u + v;
        return u < v ? u : v;
      });
      break;
    case OpId::atan2: binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_floating_point_v<decltype(u)> { return std::atan2(u, v); }); break;
    case OpId::hypot: binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_floating_point_v<decltype(u)> { return std::hypot(u, v); }); break;
    case OpId::copysign: binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_floating_point_v<decltype(u)> { return std::copysign(u, v); }); break;
    case OpId::nextafter:
      if (rdt == kFloat16 || rdt == kBFloat16) {
        // 16-bit floats step in their own precision: the neighbour of the storage value.
        Tensor xa = x.to(rdt), ya = y.to(rdt);
        if (rdt == kFloat16) map_binary<Half, Half>(out, xa, ya, next_16bit<Half>);
        else map_binary<BFloat16, BFloat16>(out, xa, ya, next_16bit<BFloat16>);
        break;
      }
      binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_floating_point_v<decltype(u)> { return std::nextafter(u, v); });
      break;
    case OpId::eq: binary_run(out, x, y, dt, [](auto u, auto v) { return u == v; }); break;
    case OpId::ne: binary_run(out, x, y, dt, [](auto u, auto v) { return u != v; }); break;
    case OpId::lt: binary_run(out, x, y, dt, [](auto u, auto v) { return u < v; }); break;
    case OpId::le: binary_run(out, x, y, dt, [](auto u, auto v) { return u <= v; }); break;
    case OpId::gt: binary_run(out, x, y, dt, [](auto u, auto v) { return u > v; }); break;
    case OpId::ge: binary_run(out, x, y, dt, [](auto u, auto v) { return u >= v; }); break;
    case OpId::logical_and: binary_run(out, x, y, dt, [](auto u, auto v) { return u != decltype(u)(0) && v != decltype(v)(0); }); break;
    case OpId::logical_or: binary_run(out, x, y, dt, [](auto u, auto v) { return u != decltype(u)(0) || v != decltype(v)(0); }); break;
    case OpId::logical_xor: binary_run(out, x, y, dt, [](auto u, auto v) { return (u != decltype(u)(0)) != (v != decltype(v)(0)); }); break;
    case OpId::bitwise_and: binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_integral_v<decltype(u)> { return decltype(u)(u & v); }); break;
    case OpId::bitwise_or: binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_integral_v<decltype(u)> { return decltype(u)(u | v); }); break;
    case OpId::bitwise_xor: binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_integral_v<decltype(u)> { return decltype(u)(u ^ v); }); break;
    case OpId::shift_left:
      binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_integral_v<decltype(u)> {
        using V = decltype(u);
        if constexpr (std::is_same_v<V, bool>) return V(v ? false : u);
        else {
          using U = std::make_unsigned_t<V>;
          return (v < 0 || v >= V(sizeof(V) * 8)) ? V(0) : V(U(u) << v);
        }
      });
      break;
    case OpId::shift_right_arithmetic:
      binary_run(out, x, y, rdt, [](auto u, auto v) requires std::is_integral_v<decltype(u)> {
        using V = decltype(u);
        if constexpr (std::is_same_v<V, bool>) return V(v ? false : u);
        else return (v < 0 || v >= V(sizeof(V) * 8)) ? V(u < 0 ? -1 : 0) : V(u >> v);
      });
      break;
    default: detail::fail("internal: no binary kernel");
  }
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
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
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

}  // namespace

#define UNARY_KERNEL(op) KILN_REGISTER(kernel, op, unary_kernel);
UNARY_KERNEL(neg) UNARY_KERNEL(abs) UNARY_KERNEL(sign) UNARY_KERNEL(exp) UNARY_KERNEL(exp2) UNARY_KERNEL(expm1)
UNARY_KERNEL(log) UNARY_KERNEL(log2) UNARY_KERNEL(log1p) UNARY_KERNEL(sqrt) UNARY_KERNEL(rsqrt)
UNARY_KERNEL(reciprocal) UNARY_KERNEL(sin) UNARY_KERNEL(cos) UNARY_KERNEL(tan) UNARY_KERNEL(tanh)
UNARY_KERNEL(asin) UNARY_KERNEL(acos) UNARY_KERNEL(atan) UNARY_KERNEL(sinh) UNARY_KERNEL(cosh)
UNARY_KERNEL(asinh) UNARY_KERNEL(acosh) UNARY_KERNEL(atanh) UNARY_KERNEL(erf) UNARY_KERNEL(erfc)
UNARY_KERNEL(erfinv) UNARY_KERNEL(sigmoid) UNARY_KERNEL(floor) UNARY_KERNEL(ceil) UNARY_KERNEL(round)
UNARY_KERNEL(trunc) UNARY_KERNEL(isnan) UNARY_KERNEL(isinf) UNARY_KERNEL(isfinite) UNARY_KERNEL(logical_not)
UNARY_KERNEL(bitwise_not) UNARY_KERNEL(lgamma) UNARY_KERNEL(digamma) UNARY_KERNEL(relu)
#undef UNARY_KERNEL

#define BINARY_KERNEL(op) KILN_REGISTER(kernel, op, binary_kernel);
BINARY_KERNEL(add) BINARY_KERNEL(sub) BINARY_KERNEL(mul) BINARY_KERNEL(div) BINARY_KERNEL(floor_divide)
BINARY_KERNEL(remainder) BINARY_KERNEL(fmod) BINARY_KERNEL(pow) BINARY_KERNEL(maximum) BINARY_KERNEL(minimum)
BINARY_KERNEL(atan2) BINARY_KERNEL(eq) BINARY_KERNEL(ne) BINARY_KERNEL(lt) BINARY_KERNEL(le) BINARY_KERNEL(gt)
BINARY_KERNEL(ge) BINARY_KERNEL(logical_and) BINARY_KERNEL(logical_or) BINARY_KERNEL(logical_xor)
BINARY_KERNEL(bitwise_and) BINARY_KERNEL(bitwise_or) BINARY_KERNEL(bitwise_xor) BINARY_KERNEL(shift_left)
BINARY_KERNEL(shift_right_arithmetic) BINARY_KERNEL(hypot) BINARY_KERNEL(copysign) BINARY_KERNEL(nextafter)
#undef BINARY_KERNEL

KILN_REGISTER(kernel, where, where_kernel);
KILN_REGISTER(kernel, convert_element_type, convert_kernel);
KILN_REGISTER(kernel, copy_, copy_kernel);

}  // namespace kiln::eager::cpu
