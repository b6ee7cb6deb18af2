// Tensor printing in PyTorch's style: tensor([[1., 2.], [3., 4.]], dtype=float64).
#include <kiln/grad_mode.h>
#include <kiln/ops.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/tensor_impl.h"
#include "ops/dispatch.h"

namespace kiln {
namespace {

constexpr int64_t kSummarizeAbove = 1000, kEdgeItems = 3;

struct Formatter {
  enum Kind { Int, Float, Bool } kind = Int;
  bool int_valued = true, sci = false;
  int width = 1;

  std::string operator()(double v) const {
    char buf[64];
    if (kind == Bool) return v != 0 ? "True" : "False";
    if (kind == Int) std::snprintf(buf, sizeof buf, "%lld", (long long)v);
    else if (std::isnan(v)) std::snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(v)) std::snprintf(buf, sizeof buf, "%sinf", v < 0 ? "-" : "");
    else if (sci) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_valued) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
};

// Prints dims [dim, ndim) of the shown values; `full` are the real sizes (for the "..." marks).
void print_rec(std::ostringstream& os, const Shape& shown, const Shape& full, const std::vector<double>& vals,
               const Formatter& f, size_t dim, size_t& flat, int indent) {
  if (shown.empty()) {
    os << f(vals[flat++]);
    return;
  }
  os << "[";
  const int64_t n = shown[dim];
  const bool last = dim + 1 == shown.size();
  const std::string row_sep =
      last ? ", " : ",\n" + std::string(shown.size() - dim - 2, '\n') + std::string(size_t(indent + 1), ' ');
  for (int64_t i = 0; i < n; ++i) {
    if (n < full[dim] && i == kEdgeItems) os << (last ? " ..., " : "..." + row_sep);
    if (last) {
      std::string s = f(vals[flat++]);
      os << std::string(size_t(std::max(0, f.width - int(s.size()))), ' ') << s;
    } else {
      print_rec(os, shown, full, vals, f, dim + 1, flat, indent + 1);
    }
    if (i + 1 < n) os << (last ? ", " : row_sep);
  }
  os << "]";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  // Printing reads the data: under capture that is a graph break (tracing) or a sync point that
  // materializes the tensor (lazy mode), as any other read.
  if (is_fake() && tensor_hooks().fake_data) tensor_hooks().fake_data(impl());
  if (is_fake()) return "FakeTensor(shape=" + shape_str(sym_sizes()) + ", dtype=" + name(dtype()) + ")";
  ops::SuspendDispatchMode eager;  // printing's own ops are not part of a capture
  NoGradGuard no_grad;
  // Large tensors show the first and last few entries of each long dim.
  Tensor shown_t = detach().cpu();  // a device's values are read on the host
  Shape shown = sizes();
  if (numel() > kSummarizeAbove) {
    for (int64_t d = 0; d < dim(); ++d) {
      if (size(d) <= 2 * kEdgeItems) continue;
      shown_t = kiln::cat({kiln::slice(shown_t, d, 0, kEdgeItems), kiln::slice(shown_t, d, size(d) - kEdgeItems, std::nullopt)}, d);
      shown[size_t(d)] = 2 * kEdgeItems;
    }
  }
  const std::vector<double> vals = shown_t.to_vector<double>();
  Formatter f;
  f.kind = dtype() == kBool ? Formatter::Bool : is_floating(dtype()) ? Formatter::Float : Formatter::Int;
  double maxabs = 0, minabs = INFINITY;
  for (double v : vals) {
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) f.int_valued = false;
    maxabs = std::max(maxabs, std::fabs(v));
    if (v != 0) minabs = std::min(minabs, std::fabs(v));
  }
  if (f.kind == Formatter::Float && (maxabs >= 1e8 || (!f.int_valued && minabs < 1e-4))) f.sci = true;
  for (double v : vals) f.width = std::max(f.width, int(f(v).size()));
  std::ostringstream os;
  os << "tensor(";
  size_t flat = 0;
  if (numel() == 0) os << "[]";
  else print_rec(os, shown, sizes(), vals, f, 0, flat, 7);
  const bool default_dt = dtype() == default_float_dtype() || dtype() == kInt64 || dtype() == kBool;
  if (numel() == 0 && dim() != 1) os << ", size=" << shape_str(sizes());
  if (!device().is_cpu()) os << ", device='" << device().str() << "'";
  if (!default_dt) os << ", dtype=" << name(dtype());
  if (is_leaf() && requires_grad()) os << ", requires_grad=True";
  if (!is_leaf()) os << ", grad_fn=<" << grad_fn_name() << ">";
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace kiln
