#include "ops/meta/meta_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::ops {

int64_t wrap_dim(int64_t d, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  KILN_CHECK_HINT(d >= -n && d < n, "dims are in [-ndim, ndim)", "dimension ", d, " is out of range for a ", ndim,
                  "-d tensor");
  return d < 0 ? d + n : d;
}

std::vector<int64_t> wrap_dims(const std::optional<std::vector<int64_t>>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  if (!dims) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t d : *dims) {
    int64_t w = wrap_dim(d, ndim);
    KILN_CHECK(std::find(out.begin(), out.end(), w) == out.end(), "dimension ", d, " appears more than once");
    out.push_back(w);
  }
  if (ndim == 0) out.clear();
  std::sort(out.begin(), out.end());
  return out;
}

SymShape broadcast_shapes(const SymShape& a, const SymShape& b) {
  const size_t n = std::max(a.size(), b.size());
  SymShape out(n);
  for (size_t i = 0; i < n; ++i) {
    const SymInt* x = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const SymInt* y = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!x) out[i] = *y;
    else if (!y) out[i] = *x;
    else if (*x == *y || *y == 1) out[i] = *x;
    else if (*x == 1) out[i] = *y;
    else
      detail::fail(detail::cat("shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast (dimension ",
                               i, ": ", x->str(), " vs ", y->str(), ")"),
                   "broadcast dims must be equal or 1, aligned from the right");
  }
  return out;
}

SymShape broadcast_shapes(const std::vector<Tensor>& ts) {
  SymShape out;
  for (const Tensor& t : ts)
    if (t.defined()) out = broadcast_shapes(out, t.sym_sizes());
  return out;
}

TensorSpec spec_like(const Tensor& t, const SymShape& sizes, DType dtype) {
  TensorSpec s;
  s.sizes = sizes;
  s.dtype = dtype;
  s.device = t.is_wrapped_number() ? kCPU : t.device();
  return s;
}

SymShape reduced_shape(const SymShape& in, const std::vector<int64_t>& dims, bool keepdim) {
  SymShape out;
  for (size_t i = 0; i < in.size(); ++i) {
    bool r = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
    if (!r) out.push_back(in[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

std::pair<int64_t, int64_t> int_range(DType t) {
  switch (t) {
    case kBool: return {0, 1};
    case kUInt8: return {0, 255};
    case kInt8: return {-128, 127};
    case kInt16: return {-32768, 32767};
    case kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

Scalar integer_scalar(const char* op, const char* arg, const Scalar& v, DType t) {
  if (v.is_bool()) return v;
  const auto [lo, hi] = int_range(t);
  bool fits;
  if (v.is_float()) {  // truncated toward zero; 2^63 and above do not fit int64
    const double d = v.to_double();
    fits = std::isfinite(d) && d >= double(lo) && d <= double(hi) && d < 9223372036854775808.0;
  } else {  // an unsigned dtype also takes -hi..-1, which wrap
    const int64_t i = v.to_int();
    fits = i <= hi && (i >= lo || (lo == 0 && i >= -hi));
  }
  KILN_CHECK_HINT(fits, "an integer tensor takes numbers in its dtype's range (NaN and inf are none)", op, ": ", arg,
                  " = ", v, " cannot be converted to ", name(t), " without overflow");
  return Scalar(v.to_int());
}

}  // namespace kiln::ops
