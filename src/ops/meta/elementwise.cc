// The meta function of the pointwise family (every POINTWISE op of ops.def with a dtype rule):
// the tensor operands broadcast, and the output dtype is the op's dtype rule applied to PyTorch's
// type promotion of them. The few ops with their own checks have them here, keyed by op. copy_,
// the one mutation, has its meta here too.
#include <array>

#include "core/tensor_impl.h"
#include "ops/family.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

bool same_concrete_sizes(const Tensor& x, const Tensor& y) {
  const TensorImpl *a = x.impl(), *b = y.impl();
  return !a->sym && !b->sym && a->sizes == b->sizes;
}

// A pointwise op's tensor operands are its leading Tensor arguments (self, other; where's
// condition, self, other).
template <class V>
constexpr size_t num_operands() {
  size_t n = 0;
  while (n < V::kArgTypes.size() && V::kArgTypes[n] == ArgType::Tensor) ++n;
  return n;
}

template <class V>
std::vector<TensorSpec> pointwise_meta(const Args& boxed) {
  constexpr OpId op = V::kOp;
  constexpr DTypeRule rule = kOpDTypeRule[size_t(op)];
  [[maybe_unused]] const V a{boxed};
  // where's condition selects: it broadcasts with the values but takes no part in promotion.
  constexpr size_t first = op == OpId::where ? 1 : 0, n = num_operands<V>();
  static_assert(n - first == 1 || n - first == 2, "a pointwise prim takes one or two value operands");
  if constexpr (op == OpId::where)
    KILN_CHECK_HINT(a.condition().dtype() == kBool, "compare first, e.g. where(x > 0, ...)",
                    "where: the condition must be a bool tensor, got ", name(a.condition().dtype()));
  std::array<const Tensor*, n> operand;
  for (size_t i = 0; i < n; ++i) operand[i] = &boxed.tensor(i);
  const Tensor& x = *operand[first];
  if constexpr (n - first == 1) {  // unary
    if constexpr (op == OpId::neg)
      KILN_CHECK_HINT(x.dtype() != kBool, "use logical_not() (or ~) on bool tensors",
                      "negation of a bool tensor is not supported");
    if constexpr (op == OpId::relu) KILN_CHECK(x.dtype() != kBool, "relu: Boolean inputs not supported");
    if constexpr (op == OpId::bitwise_not)
      KILN_CHECK(is_integral(x.dtype(), true), "bitwise_not needs an integer or bool tensor, got ", name(x.dtype()));
    return {spec_like(x, rule_dtype(rule, x.dtype(), dtype_arg(a)))};
  } else {
    const Tensor& y = *operand[first + 1];
    // Operands of one concrete shape (the common case) need no broadcasting worked out.
    SymShape shape = operand[0]->sym_sizes();
    for (size_t i = 1; i < n; ++i)
      if (!same_concrete_sizes(*operand[0], *operand[i])) shape = broadcast_shapes(shape, operand[i]->sym_sizes());
    // Two non-wrapped tensors of one dtype promote to it: skip result_type's general rules.
    const bool same = x.dtype() == y.dtype() && !x.is_wrapped_number() && !y.is_wrapped_number();
    const DType promoted = same ? x.dtype() : result_type({x, y});
    DType dt = rule_dtype(rule, promoted, std::nullopt);
    if constexpr (op == OpId::div) {
      if (const auto mode = a.rounding_mode()) {  // rounded division keeps the promoted dtype
        KILN_CHECK_HINT(*mode == "trunc" || *mode == "floor", "use rounding_mode=None, \"trunc\" or \"floor\"",
                        "div: unknown rounding_mode \"", *mode, "\"");
        dt = promoted;
      }
    }
    if constexpr (op == OpId::sub)
      KILN_CHECK_HINT(dt != kBool, "use logical_xor() (or ^) for bool tensors",
                      "subtraction of bool tensors is not supported");
    if constexpr (op == OpId::bitwise_and || op == OpId::bitwise_or || op == OpId::bitwise_xor)
      KILN_CHECK(is_integral(dt, true), "bitwise ops need integer or bool tensors, got ", name(dt));
    if constexpr (op == OpId::shift_left || op == OpId::shift_right_arithmetic)
      KILN_CHECK(is_integral(dt, true), "shifts need integer or bool tensors, got ", name(dt));
    return {spec_like(x.is_wrapped_number() ? y : x, shape, dt)};
  }
}

}  // namespace

KILN_FAMILY_META(POINTWISE, pointwise_meta);

KILN_META(copy_) {
  const args::copy_ c{a};
  const Tensor &self = c.self(), &src = c.src();
  SymShape b = broadcast_shapes(self.sym_sizes(), src.sym_sizes());
  KILN_CHECK_HINT(b == self.sym_sizes(), "the source must broadcast to the destination's shape",
                  "copy_: source of shape ", shape_str(src.sym_sizes()), " does not broadcast to ",
                  shape_str(self.sym_sizes()));
  return {self.spec()};
}

}  // namespace kiln::ops
