// The pointwise prims, convert_element_type and copy_ as tile programs: one program element per
// output element, BLOCK of them per program. Each operand is one of four layout classes, which
// with the op and the dtypes make the program's key:
//   d  dense: steps as the output does over the collapsed dims (offset = linear index)
//   s  strided: its own strides, arguments of the launch (offset from the index's coordinates)
//   b  a tensor of one element broadcast (one scalar load)
//   n  a number (a 0-d CPU tensor or a wrapped number): an argument of the launch
// Only a kernel with a strided operand (the output included) computes coordinates: one division
// and remainder per collapsed dim. An index wider than 31 bits makes a kernel of i64 offsets.
#include <kiln/ops.h>

#include <limits>

#include "core/tensor_impl.h"
#include "eager/cpu/pointwise_kernels.h"
#include "eager/tile/tiled.h"
#include "tile/builder.h"
#include "tile/prims.h"

namespace kiln::eager::tiled {
namespace {

using ops::OpId;
constexpr int64_t kBlock = 1024;

enum class Layout : char { Dense = 'd', Strided = 's', Broadcast = 'b', Number = 'n' };

struct Operand {
  Layout layout;
  DType dtype;  // the tensor's; for a number: i64 (integers, bool) or f64
};

struct PointwiseKernel {
  OpId op;
  tile::Rounding rounding;
  DType out, compute;
  Layout out_layout;  // Dense or Strided
  std::vector<Operand> ins;
  int rank;
  bool wide;

  std::string key() const {
    std::string k = std::string("pointwise.") + ops::op_info(op).name + "." + std::to_string(int(rounding)) + "." +
                    tile::short_name(out) + "." + tile::short_name(compute) + "." + char(out_layout);
    for (const Operand& o : ins) k += std::string(".") + char(o.layout) + tile::short_name(o.dtype);
    return k + ".r" + std::to_string(rank) + (wide ? ".i64" : ".i32");
  }
};

bool needs_coordinates(const PointwiseKernel& k) {
  if (k.out_layout == Layout::Strided) return true;
  for (const Operand& o : k.ins)
    if (o.layout == Layout::Strided) return true;
  return false;
}

// Parameters, in order: out, each operand (pointer or number), n, sizes[1..rank) when
// coordinates are needed, then the strides of each strided view (out first) over every dim.
tile::Program build(const PointwiseKernel& k) {
  tile::Builder b(std::string("eager_") + ops::op_info(k.op).name);
  const DType index = k.wide ? kInt64 : kInt32;
  tile::Val out = b.arg_ptr("out", k.out);
  std::vector<tile::Val> in;
  for (size_t i = 0; i < k.ins.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    const Operand& o = k.ins[i];
    if (o.layout == Layout::Number) in.push_back(o.dtype == kFloat64 ? b.arg_float(name, kFloat64) : b.arg_int(name, kInt64));
    else in.push_back(b.arg_ptr(name, o.dtype));
  }
  tile::Val n = b.arg_int("n", index);
  const bool coords = needs_coordinates(k);
  const std::vector<tile::Val> sizes = int_args(b, "size", 1, coords ? k.rank : 0, index);
  auto strides_of = [&](const std::string& view) { return int_args(b, view + "_stride", 0, k.rank, index); };
  std::vector<tile::Val> out_strides;
  if (k.out_layout == Layout::Strided) out_strides = strides_of("out");
  std::vector<std::vector<tile::Val>> in_strides(k.ins.size());
  for (size_t i = 0; i < k.ins.size(); ++i)
    if (k.ins[i].layout == Layout::Strided) in_strides[i] = strides_of("in" + std::to_string(i));
  tile::Val lin = flat_block(b, kBlock, k.wide);
  tile::Val mask = lin < n;
  // Coordinates along the collapsed dims, innermost last.
  const std::vector<tile::Val> coord = coords ? coordinates(b, lin, sizes) : std::vector<tile::Val>{};
  auto offset = [&](const std::vector<tile::Val>& strides) { return offset_of(coord, strides); };

  const bool is_cast = k.op == OpId::convert_element_type;
  std::vector<tile::Operand> args;
  for (size_t i = 0; i < k.ins.size(); ++i) {
    tile::Val v;
    switch (k.ins[i].layout) {
      case Layout::Dense: v = b.load(in[i] + lin, mask); break;
      case Layout::Strided: v = b.load(in[i] + offset(in_strides[i]), mask); break;
      case Layout::Broadcast: v = b.load(in[i]); break;
      case Layout::Number: v = in[i]; break;
    }
    // where's condition stays bool; every other operand meets in the compute dtype (as the
    // reference kernels convert them first).
    const bool condition = k.op == OpId::where && i == 0;
    if (condition) v = b.cast(v, kBool);
    else if (!is_cast) v = b.cast(v, k.compute);
    args.emplace_back(v);
  }
  tile::Val r = is_cast ? b.cast(args.at(0), k.out)
                        : b.cast(b.call(k.op, std::move(args), k.rounding), k.out);
  tile::Val dst = k.out_layout == Layout::Dense ? out + lin : out + offset(out_strides);
  b.store(dst, r, mask);
  return b.finish();
}

tile::Rounding rounding_of(const ops::Args& a) {
  if (a.op != OpId::div || a.is_none(2)) return tile::Rounding::None;
  return a.str(2) == "trunc" ? tile::Rounding::Trunc : tile::Rounding::Floor;
}

// The dtype the op computes in: its output's, but for comparisons and predicates (bool
// results), whose operands meet in their promoted dtype; where's values meet in the output's.
DType compute_dtype(const ops::Args& a, DType out) {
  if (a.op == OpId::where || a.op == OpId::convert_element_type || !cpu::computes_in_input_dtype(a.op)) return out;
  std::vector<Tensor> ts = a.tensor_inputs();
  if (ts.size() == 2 && ts[0].dtype() == ts[1].dtype() && !ts[0].is_wrapped_number() && !ts[1].is_wrapped_number())
    return ts[0].dtype();
  return result_type(ts);
}

bool fits_i32(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }

// Computes `op` of `inputs` into `out` (any layout that does not overlap itself).
void run_pointwise(OpId op, tile::Rounding rounding, DType compute, const Tensor& out, const std::vector<Tensor>& inputs,
                   const Runner& run) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Shape& sizes = out.sizes();
  // The views to collapse together: the output, then every operand that is a tensor of the device.
  const auto is_number = [&](const Tensor& t) { return t.dim() == 0 && (t.is_wrapped_number() || t.device() != out.device()); };
  std::vector<Shape> views{out.strides()};
  for (const Tensor& t : inputs)
    if (!is_number(t)) views.push_back(broadcast_strides(t, sizes));
  const Collapsed c = collapse(sizes, views);
  const Shape dense = contiguous_strides(c.sizes);
  const auto layout_of = [&](const Shape& s) {
    bool zero = true;
    for (int64_t x : s) zero = zero && x == 0;
    return s == dense ? Layout::Dense : zero ? Layout::Broadcast : Layout::Strided;
  };

  PointwiseKernel k{op, rounding, out.dtype(), compute, layout_of(c.strides[0]), {}, int(c.sizes.size()), false};
  if (k.out_layout == Layout::Broadcast) k.out_layout = Layout::Strided;  // (one element: never written twice)
  k.wide = !fits_i32(n);
  for (const Shape& s : c.strides) k.wide = k.wide || !fits_i32(reach(c.sizes, s));

  Launch l;
  l.args.emplace_back(out);
  size_t view = 1;
  std::vector<const Shape*> strided;
  if (k.out_layout == Layout::Strided) strided.push_back(&c.strides[0]);
  for (const Tensor& t : inputs) {
    if (is_number(t)) {
      const Scalar v = t.item_scalar();
      const bool real = v.is_float();
      k.ins.push_back({Layout::Number, real ? kFloat64 : kInt64});
      if (real) l.args.emplace_back(v.to_double());
      else l.args.emplace_back(v.to_int());
      continue;
    }
    const Shape& s = c.strides[view++];
    k.ins.push_back({layout_of(s), t.dtype()});
    if (k.ins.back().layout == Layout::Strided) strided.push_back(&s);
    l.args.emplace_back(t);
  }
  l.args.emplace_back(n);
  if (needs_coordinates(k))
    for (size_t d = 1; d < c.sizes.size(); ++d) l.args.emplace_back(c.sizes[d]);
  for (const Shape* s : strided)
    for (int64_t x : *s) l.args.emplace_back(x);
  l.key = k.key();
  l.build = [k] { return build(k); };
  l.grid = (n + kBlock - 1) / kBlock;
  run(l);
}

bool is_division(OpId op, tile::Rounding r) {
  return op == OpId::floor_divide || op == OpId::remainder || op == OpId::fmod ||
         (op == OpId::div && r != tile::Rounding::None);
}

}  // namespace

bool has_pointwise(OpId op) {
  return op == OpId::where || op == OpId::convert_element_type || tile::is_prim(op);
}

std::vector<Tensor> pointwise(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  Tensor out = make_tensor(specs.at(0));
  const tile::Rounding r = rounding_of(a);
  const DType compute = compute_dtype(a, out.dtype());
  if (a.op != OpId::where && a.op != OpId::convert_element_type && !tile::prim_supports(a.op, compute, r))
    detail::fail(std::string(ops::op_info(a.op).name) + " is not implemented for " + name(compute));
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::holds_alternative<Tensor>(a.v[i])) inputs.push_back(a.tensor(i));
  if (is_division(a.op, r) && is_integral(compute, true) && out.numel() > 0)
    KILN_CHECK_HINT(!cpu::any_zero(inputs.at(1)), "mask the zeros out first",
                    a.op == OpId::remainder || a.op == OpId::fmod ? "integer modulo by zero" : "integer division by zero");
  run_pointwise(a.op, r, compute, out, inputs, run);
  return {out};
}

void copy_into(const Tensor& dst, const Tensor& src, const Runner& run) {
  run_pointwise(OpId::convert_element_type, tile::Rounding::None, dst.dtype(), dst, {src}, run);
}

std::vector<Tensor> copy(const ops::Args& a, const std::vector<TensorSpec>&, const Runner& run) {
  const Tensor &self = a.tensor(0), &src = a.tensor(1);
  // Overlapping views (x.copy_(x.flip(0))): through a temporary, as on the CPU.
  const bool overlap = self.shares_storage(src) && !(self.impl() == src.impl());
  if (overlap) {
    Tensor tmp = make_tensor(src.sizes(), src.dtype(), src.device());
    copy_into(tmp, src, run);
    copy_into(self, tmp, run);
  } else if (!(self.impl() == src.impl())) {
    copy_into(self, src, run);
  }
  return {self};
}

}  // namespace kiln::eager::tiled
