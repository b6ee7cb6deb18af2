// Custom ops made of tile kernels (docs/tile.md, "Custom ops"): a kernel, a meta function and a
// grid register as an op that is callable eagerly, captured by compile() as one graph node (no
// graph break) and differentiable when given a derivative.
//
//   tile::register_op({
//       .name = "mylib::vector_add",
//       .program = [](const TensorList& in) { return make_vector_add(in[0].dtype()); },  // per input dtypes
//       .meta = [](const TensorList& in, const std::vector<double>&) {                   // shapes, dtypes, checks
//         KILN_CHECK(in.size() == 2 && in[0].dtype() == in[1].dtype() && in[0].sizes() == in[1].sizes(), "...");
//         return std::vector<TensorSpec>{in[0].spec()};
//       },
//       .grid = [](const TensorList& in, const tile::Meta& m) { return tile::cpu::Grid(tile::cdiv(in[0].numel(), m.find("BLOCK")->to_int())); },
//       .ints = [](const TensorList& in) { return std::vector<int64_t>{in[0].numel()}; },
//   });
//   Tensor z = tile::call_op("mylib::vector_add", {x, y})[0];
//
// The kernel runs on (inputs..., outputs..., ints..., scalars...): the inputs made contiguous,
// the outputs allocated (contiguous) from the meta's specs. The op keeps its program builder,
// grid and argument rule (TileOp), so the compiler can find a graph node's tile program:
// dynamic_cast<const tile::TileOp*>(ops::find_custom_op(name).get()).
#pragma once
#include <map>
#include <mutex>

#include "ops/custom.h"
#include "tile/cpu/kernel.h"
#include "tile/ir.h"

namespace kiln::tile {

struct TileOpDef {
  std::string name{};  // "namespace::name"
  // The kernel for these inputs (read their dtypes, not their sizes: it is compiled once per
  // dtype signature).
  std::function<Program(const TensorList& inputs)> program{};
  std::function<std::vector<TensorSpec>(const TensorList& inputs, const std::vector<double>& scalars)> meta{};
  std::function<cpu::Grid(const TensorList& inputs, const Meta& meta)> grid{};
  // Optional: the integer arguments after the tensors (sizes: numel, strides).
  std::function<std::vector<int64_t>(const TensorList& inputs)> ints{};
  // Optional: the inputs' gradients (ops::CustomOp::derivative).
  std::function<TensorList(const ops::GradCtx& g)> derivative{};
};

class TileOp : public ops::CustomOp {
 public:
  explicit TileOp(TileOpDef def);
  const TileOpDef& def() const { return def_; }
  // The compiled kernel for these inputs' dtypes (compiled on first use).
  const cpu::Kernel& kernel_for(const TensorList& inputs) const;

 private:
  TileOpDef def_;
  mutable std::mutex mu_;
  mutable std::map<std::string, cpu::Kernel> kernels_;  // by the inputs' dtypes
};

// Registers the op (replacing one of that name) and returns it.
std::shared_ptr<const TileOp> register_op(TileOpDef def);
// Calls a custom op by name (any custom op, however registered).
inline TensorList call_op(const std::string& name, const TensorList& inputs, const std::vector<double>& scalars = {}) {
  return ops::call_custom_op(name, inputs, scalars);
}

}  // namespace kiln::tile
