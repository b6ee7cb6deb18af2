// Eager kernels of DeviceType::CUDA: the tiled programs (eager/tile/tiled.h) compiled by the
// tile layer's CUDA backend (NVRTC, through the disk cache) once per key and device, kept for
// the process, and queued on the device's current stream. Registered whether or not a GPU is
// present: without one no CUDA tensor exists, so none of them is called.
#include <map>
#include <mutex>

#include "eager/layout_copies.h"
#include "eager/tile/tiled.h"
#include "ops/dispatch.h"
#include "runtime/cuda/driver.h"
#include "tile/cuda/kernel.h"

namespace kiln::eager::cuda {
namespace {

namespace rc = runtime::cuda;

// The compiled kernel of a launch's key on the current device (compiled on first use).
const tile::cuda::Kernel& kernel_for(const tiled::Launch& l) {
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, tile::cuda::Kernel> kernels;
  const std::pair<int, std::string> key{rc::current_device(), l.key};
  {
    std::lock_guard<std::mutex> g(mu);
    if (auto it = kernels.find(key); it != kernels.end()) return it->second;
  }
  tile::cuda::Kernel k = tile::cuda::compile(l.build());  // (outside the lock: NVRTC takes a while)
  std::lock_guard<std::mutex> g(mu);
  return kernels.emplace(key, std::move(k)).first->second;
}

void run_on_cuda(const tiled::Launch& l) {
  // Every tensor of a launch is on one device (the dispatcher checked): run there.
  for (const tiled::KernelArg& a : l.args)
    if (a.kind == tiled::KernelArg::Kind::Tensor) {
      const int device = a.tensor.device().index;
      if (device != rc::current_device()) rc::set_device(device);
      break;
    }
  const tile::cuda::Kernel& k = kernel_for(l);
  std::vector<tile::cuda::Arg> args;
  args.reserve(l.args.size());
  for (const tiled::KernelArg& a : l.args) {
    switch (a.kind) {
      case tiled::KernelArg::Kind::Tensor: args.emplace_back(a.tensor); break;
      case tiled::KernelArg::Kind::Int: args.emplace_back(a.i); break;
      case tiled::KernelArg::Kind::Float: args.emplace_back(a.f); break;
    }
  }
  k.launch(tile::cuda::Grid(l.grid), args);
}

std::vector<Tensor> pointwise_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return tiled::pointwise(a, specs, run_on_cuda);
}
std::vector<Tensor> copy_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return tiled::copy(a, specs, run_on_cuda);
}
std::vector<Tensor> creation_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return tiled::creation(a, specs, run_on_cuda);
}
void copy_on_cuda(const Tensor& dst, const Tensor& src) { tiled::copy_into(dst, src, run_on_cuda); }
std::vector<Tensor> cat_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return cat_by_copies(a, specs, copy_on_cuda);
}
std::vector<Tensor> constant_pad_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return constant_pad_by_copies(a, specs, copy_on_cuda);
}
std::vector<Tensor> flip_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return flip_by_copies(a, specs, copy_on_cuda);
}
std::vector<Tensor> indexing_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return tiled::indexing(a, specs, run_on_cuda);
}
// The composites with a one-kernel form: it where it applies, else their decomposition.
std::vector<Tensor> rows_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  if (std::optional<std::vector<Tensor>> r = tiled::rows(a, specs, run_on_cuda)) return *std::move(r);
  return ops::op_info(a.op).decomp(a);
}
std::vector<Tensor> scan_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return tiled::scan(a, specs, run_on_cuda);
}
std::vector<Tensor> reduction_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  return tiled::reduction(a, specs, run_on_cuda);
}

[[maybe_unused]] const bool kRegistered = [] {
  for (int i = 0; i < ops::kNumOps; ++i) {
    const ops::OpInfo& info = ops::op_info(ops::OpId(i));
    if (info.family == ops::OpFamily::POINTWISE && info.kind == ops::OpKind::PRIM && tiled::has_pointwise(info.id))
      ops::register_kernel(info.id, DeviceType::CUDA, pointwise_kernel);
  }
  using ops::OpId;
  for (OpId op : {OpId::empty, OpId::full, OpId::iota}) ops::register_kernel(op, DeviceType::CUDA, creation_kernel);
  for (OpId op : {OpId::sum, OpId::prod, OpId::amax, OpId::amin, OpId::argmax, OpId::argmin}) ops::register_kernel(op, DeviceType::CUDA, reduction_kernel);
  ops::register_kernel(OpId::copy_, DeviceType::CUDA, copy_kernel);
  for (OpId op : {OpId::gather, OpId::index_select, OpId::scatter, OpId::scatter_add, OpId::index_put})
    ops::register_kernel(op, DeviceType::CUDA, indexing_kernel);
  for (OpId op : {OpId::softmax, OpId::log_softmax, OpId::layer_norm}) ops::register_kernel(op, DeviceType::CUDA, rows_kernel);
  for (OpId op : {OpId::cumsum, OpId::cumprod}) ops::register_kernel(op, DeviceType::CUDA, scan_kernel);
  ops::register_kernel(OpId::cat, DeviceType::CUDA, cat_kernel);
  ops::register_kernel(OpId::constant_pad, DeviceType::CUDA, constant_pad_kernel);
  ops::register_kernel(OpId::flip, DeviceType::CUDA, flip_kernel);
  return true;
}();

}  // namespace
}  // namespace kiln::eager::cuda
