// Helpers shared by meta functions: dim wrapping, broadcasting, output specs.
#pragma once
#include <kiln/tensor.h>

#include <optional>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::ops {

// d in [-ndim, ndim) -> [0, ndim); a 0-d tensor accepts dims -1 and 0.
int64_t wrap_dim(int64_t d, int64_t ndim);
// Wraps each dim and checks none repeats. None (nullopt) means all dims.
std::vector<int64_t> wrap_dims(const std::optional<std::vector<int64_t>>& dims, int64_t ndim);
SymShape broadcast_shapes(const SymShape& a, const SymShape& b);
SymShape broadcast_shapes(const std::vector<Tensor>& ts);
// A contiguous output spec with the given sizes and dtype on t's device.
TensorSpec spec_like(const Tensor& t, const SymShape& sizes, DType dtype);
inline TensorSpec spec_like(const Tensor& t, DType dtype) { return spec_like(t, t.sym_sizes(), dtype); }
// Sizes after reducing `dims` (with keepdim: set to 1; else removed).
SymShape reduced_shape(const SymShape& in, const std::vector<int64_t>& dims, bool keepdim);
// The dtype unary float ops (exp, sin, ...) return: integers and bool become the default float.
inline DType float_result(DType t) { return is_floating(t) ? t : default_float_dtype(); }
// The output dtype of ops.def's dtype rule: `in` is the dtype the rule starts from (the first
// input's for SAME, the inputs' promoted one otherwise), `arg` the op's dtype argument if any.
// Inline: a family meta's rule is a constant, so the switch folds away.
inline DType rule_dtype(DTypeRule rule, DType in, std::optional<DType> arg) {
  switch (rule) {
    case DTypeRule::SAME: case DTypeRule::PROMOTE: return in;
    case DTypeRule::INT_TO_FLOAT: return float_result(in);
    case DTypeRule::INT_TO_LONG: return arg ? *arg : is_integral(in, true) ? kInt64 : in;
    case DTypeRule::BOOL: return kBool;
    case DTypeRule::LONG: return kInt64;
    case DTypeRule::ARG: return arg.value_or(default_float_dtype());
    case DTypeRule::NONE: break;
  }
  detail::fail("internal: rule_dtype of an op without a dtype rule");
}
// An op's dtype argument through its view, for code written once for ops with and without one.
template <class View>
std::optional<DType> dtype_arg(const View& a) {
  if constexpr (requires { a.dtype(); }) return a.dtype();
  else return std::nullopt;
}

}  // namespace kiln::ops

namespace kiln::ops {
// Resolves one -1 in a requested shape against numel; checks the element count matches.
SymShape infer_size(const SymShape& requested, const SymInt& numel);
// Strides that let a tensor (sizes, strides) be viewed with new_sizes without a copy, if any.
std::optional<SymShape> view_strides(const SymShape& sizes, const SymShape& strides, const SymShape& new_sizes);
// The smallest and largest value of an integer dtype (bool: 0 and 1).
std::pair<int64_t, int64_t> int_range(DType t);
// A number argument of an op computing in the integer dtype t, as PyTorch converts it
// (Scalar::to<T>): a float truncates toward zero, and NaN, inf or a value out of t's range is an
// error naming op and arg; a negative int may wrap into an unsigned t (-1 -> 255), as in PyTorch.
Scalar integer_scalar(const char* op, const char* arg, const Scalar& v, DType t);
}  // namespace kiln::ops
