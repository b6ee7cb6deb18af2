// Eager kernels generated through the tile layer: on a device other than the CPU, eager
// execution is the compiler on one op (docs/devices.md). For an op's arguments this file gives
// the tile program that computes it and the launch that runs it. A program is made per op x
// dtypes x layout class and is shape-generic: sizes and strides are arguments, so a new size
// needs no compile. What an element computes is the prim's kiln::scalar function, as in the
// CPU's reference kernels and in compiled code.
//
// The programs are backend-neutral. A device backend compiles each one once (by its key) and
// launches it (src/eager/cuda/). The tests run the same launches on the CPU backend against the
// reference kernels (tests/unit/eager/tiled_test.cc).
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "tile/builder.h"
#include "tile/ir.h"

namespace kiln::eager::tiled {

// One launch argument: a tensor of the device (its data pointer: storage offset included), an
// integer or a float.
struct KernelArg {
  enum class Kind : uint8_t { Tensor, Int, Float } kind;
  Tensor tensor;
  int64_t i = 0;
  double f = 0;
  KernelArg(const Tensor& t) : kind(Kind::Tensor), tensor(t) {}
  KernelArg(int64_t v) : kind(Kind::Int), i(v) {}
  KernelArg(double v) : kind(Kind::Float), f(v) {}
};

// One launch of a generated kernel along grid axis 0. Two launches with one key run one
// program: `build` is called once per key (per backend and device).
struct Launch {
  std::string key;
  std::function<tile::Program()> build;
  int64_t grid = 1;
  std::vector<KernelArg> args;
};

// Compiles a launch's program (once per key) and queues it on the device.
using Runner = std::function<void(const Launch&)>;

// --- the op kernels, for tensors of the runner's device (0-d CPU tensors and wrapped numbers
// may join as the dispatcher allows).
// A pointwise prim of ops.def (every one with a kiln::scalar function, where and
// convert_element_type). Integer division and modulo by zero raise, as on the CPU.
std::vector<Tensor> pointwise(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);
// Whether `pointwise` computes `op`.
bool has_pointwise(ops::OpId op);
// dst = src converted to dst's dtype, src broadcast to dst's shape (both on the device; dst's
// layout any that does not overlap itself).
void copy_into(const Tensor& dst, const Tensor& src, const Runner& run);
// copy_(self, src) within the device.
std::vector<Tensor> copy(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);
// full and iota.
std::vector<Tensor> creation(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);
// gather, index_select, scatter, scatter_add and index_put (src/eager/tile/indexing.cc).
std::vector<Tensor> indexing(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);
// softmax and log_softmax over the last dim and layer_norm, one program per row; nullopt where
// the call is not one of those (another dim, rows over 16384, integer dtypes): the caller runs
// the decomposition.
std::optional<std::vector<Tensor>> rows(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);
// cumsum and cumprod along a dim (src/eager/tile/scan.cc).
std::vector<Tensor> scan(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);
// sum, prod, amax and amin over any dims; argmax and argmin over one dim or all.
std::vector<Tensor> reduction(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run);

// --- layouts (shared by the kernels above; exposed for the tests)
// A set of same-shaped strided views collapsed to the fewest dims: size-1 dims dropped, and a
// dim merged into the next where every view steps over both as over one.
struct Collapsed {
  Shape sizes;                 // at least one dim
  std::vector<Shape> strides;  // per view
};
// `strides[v]` are view v's strides for `sizes` (0 along broadcast dims).
Collapsed collapse(const Shape& sizes, const std::vector<Shape>& strides);
// A tensor's strides broadcast to `sizes` (right-aligned; 0 where it broadcasts).
Shape broadcast_strides(const Tensor& t, const Shape& sizes);
// The largest offset (in elements, either sign) a view of `strides` reaches over `sizes`.
int64_t reach(const Shape& sizes, const Shape& strides);
// In a program: the coordinates of linear index `i` over dims of `sizes` (innermost last; sizes[0]
// is not needed, nor read), and a view's offset at coordinates (sum of coord * stride).
std::vector<tile::Val> coordinates(tile::Builder& b, tile::Val i, const std::vector<tile::Val>& sizes);
// The flat element indices of this program's block: program_id * BLOCK + [0, BLOCK), with the
// BLOCK meta-parameter declared and 4 warps (i64 when `wide`).
tile::Val flat_block(tile::Builder& b, int64_t block, bool wide);
// Int parameters `name<from>` .. `name<to - 1>` (of dtype `d`), at their positions of a vector of `to`.
std::vector<tile::Val> int_args(tile::Builder& b, const std::string& name, int from, int to, DType d);
tile::Val offset_of(const std::vector<tile::Val>& coords, const std::vector<tile::Val>& strides);

}  // namespace kiln::eager::tiled
