// Custom ops made of tile kernels (op.h).
#include "tile/op.h"

namespace kiln::tile {

TileOp::TileOp(TileOpDef def) : def_(std::move(def)) {
  KILN_CHECK(def_.program && def_.meta && def_.grid, "tile.register_op: ", def_.name,
             " needs a program, a meta function and a grid");
  name = def_.name;
  meta = def_.meta;
  derivative = def_.derivative;
  kernel = [this](const TensorList& inputs, const std::vector<double>& scalars, const std::vector<TensorSpec>& specs) {
    TensorList in;
    for (const Tensor& t : inputs) in.push_back(t.is_contiguous() ? t : t.contiguous());
    TensorList out;
    for (const TensorSpec& s : specs) out.push_back(empty(s.sizes, s.dtype, s.device));
    std::vector<cpu::Arg> args(in.begin(), in.end());
    args.insert(args.end(), out.begin(), out.end());
    if (def_.ints)
      for (int64_t i : def_.ints(in)) args.emplace_back(i);
    for (double f : scalars) args.emplace_back(f);
    const cpu::Kernel& k = kernel_for(in);
    k.launch(def_.grid(in, k.meta()), args);
    return out;
  };
}

const cpu::Kernel& TileOp::kernel_for(const TensorList& inputs) const {
  std::string key;
  for (const Tensor& t : inputs) key += std::string(short_name(t.dtype())) + ",";
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(key);
  if (it == kernels_.end()) it = kernels_.emplace(key, cpu::compile(def_.program(inputs))).first;
  return it->second;
}

std::shared_ptr<const TileOp> register_op(TileOpDef def) {
  auto op = std::make_shared<const TileOp>(std::move(def));
  ops::register_custom_op(op);
  return op;
}

}  // namespace kiln::tile
