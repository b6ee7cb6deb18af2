// ops.def's kind, family and dtype columns at compile time, and registration of one function
// template for every op of a family, instantiated with each op's typed argument view
// (ops/args_gen.h). This is how a meta function (or kernel) written once for a family reaches its
// ops without a second list of them: the family column of ops.def is the list.
#pragma once
#include <string_view>
#include <utility>

#include "ops/args_gen.h"
#include "ops/dispatch.h"

namespace kiln::ops {

inline constexpr OpKind kOpKind[] = {
#define KILN_OP(id, kind, family, dtype, flags, schema) OpKind::kind,
#include "ops/ops.def"
#undef KILN_OP
};
inline constexpr OpFamily kOpFamily[] = {
#define KILN_OP(id, kind, family, dtype, flags, schema) OpFamily::family,
#include "ops/ops.def"
#undef KILN_OP
};
inline constexpr DTypeRule kOpDTypeRule[] = {
#define KILN_OP(id, kind, family, dtype, flags, schema) DTypeRule::dtype,
#include "ops/ops.def"
#undef KILN_OP
};

// The ops a family-wide function serves: those of the family with a dtype rule (its prims, and
// the composites whose fast eager kernel needs the family's meta, such as relu).
constexpr bool in_family(OpId op, OpFamily f) {
  return kOpFamily[size_t(op)] == f && kOpDTypeRule[size_t(op)] != DTypeRule::NONE;
}

// Calls fn.template operator()<op>() for every op in_family(op, F), in ops.def order.
template <OpFamily F, class Fn>
bool for_each_in_family(Fn fn) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    ([&] {
      if constexpr (in_family(OpId(I), F)) fn.template operator()<OpId(I)>();
    }(), ...);
  }(std::make_index_sequence<size_t(kNumOps)>{});
  return true;
}

// Whether A's arguments (names and types) are the first arguments of B, so that A's view reads
// B's boxed arguments correctly: lets ops of one schema share a kernel that reads one view,
// checked by a static_assert beside it.
template <class A, class B>
constexpr bool args_prefix() {
  if (A::kArgNames.size() > B::kArgNames.size()) return false;
  for (size_t i = 0; i < A::kArgNames.size(); ++i)
    if (std::string_view(A::kArgNames[i]) != B::kArgNames[i] || A::kArgTypes[i] != B::kArgTypes[i]) return false;
  return true;
}

}  // namespace kiln::ops

// Registers fn<args::of<op>> as the meta function of every op of the family (see in_family):
//   template <class V> std::vector<TensorSpec> reduction_meta(const Args& boxed) { V a{boxed}; ... }
//   KILN_FAMILY_META(REDUCTION, reduction_meta);
#define KILN_FAMILY_META(family, fn)                                                               \
  [[maybe_unused]] static const bool KILN_CONCAT(kiln_family_meta_##family##_, __LINE__) =         \
      ::kiln::ops::for_each_in_family<::kiln::ops::OpFamily::family>([]<::kiln::ops::OpId op>() {  \
        ::kiln::ops::register_meta(op, &fn<::kiln::ops::args::of<op>>);                            \
      })
