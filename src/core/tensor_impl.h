// The object behind a Tensor handle: storage, layout, dtype and autograd state.
#pragma once
#include <kiln/tensor.h>

#include <memory>

namespace kiln {

namespace autograd {
struct Node;
struct AutogradMeta;
// Core holds a tensor's autograd state without knowing its type: autograd, the layer above,
// defines this deleter and TensorImpl::autograd_meta() (src/autograd/attach.cc).
struct AutogradMetaDeleter {
  void operator()(AutogradMeta* m) const;
};
}  // namespace autograd

// A block of memory shared by a tensor and its views, on its device (allocated and freed
// through the device's runtime::DeviceInterface). A fake storage has no memory: it backs fake
// tensors, which carry metadata only (capture runs user code on them).
struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  bool fake = false;
  bool owned = false;    // allocated here, freed by the destructor; false: borrowed (from_blob)
  uint64_t version = 0;  // bumped by every in-place write; autograd checks saved tensors with it
  std::shared_ptr<void> owner;  // keeps borrowed memory alive (e.g. a file mapping)
  ~Storage();
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  static std::shared_ptr<Storage> make_fake(Device device);
};

// Sizes, strides and offset as symbolic expressions; present only on symbolic fake tensors.
struct SymLayout {
  SymShape sizes, strides;
  SymInt offset;
};

// A size the user marked dynamic (kiln::mark_dynamic): capture makes it symbolic from the start.
struct DynamicDim {
  int64_t dim;
  int64_t min, max;
};

class TensorImpl {
 public:
  std::vector<DynamicDim> dynamic_dims;
  std::shared_ptr<Storage> storage;
  Shape sizes, strides;  // concrete values (the hints, when sym is set)
  int64_t offset = 0;
  std::unique_ptr<SymLayout> sym;
  DType dtype = DType::Float32;
  bool wrapped_number = false;
  std::unique_ptr<autograd::AutogradMeta, autograd::AutogradMetaDeleter> autograd;

  TensorImpl();
  ~TensorImpl();
  int64_t numel() const;
  bool is_contiguous() const;
  Device device() const { return storage->device; }
  char* data() const;  // throws for fake tensors; memory on device(), not always the host's
  // Points this tensor at src's data and layout (PyTorch's `p.data = src`): every handle to this
  // TensorImpl, its autograd state and grad slot stay as they are.
  void adopt_data(const TensorImpl& src);
  autograd::AutogradMeta& autograd_meta();  // creates it on first use
};

// Capture's hooks into tensors, per thread (null outside capture).
struct TensorHooks {
  // The data of a fake tensor was asked for (item(), a kernel, printing): lazy mode materializes
  // it here; the tracer throws a graph break.
  void (*fake_data)(const TensorImpl* t) = nullptr;
  // The values of a real tensor were read (item(), to_vector()): while tracing, user code reading
  // a tensor it captured (a module buffer's item()) would bake today's value into the graph.
  void (*real_data)(const TensorImpl* t) = nullptr;
  // The concrete sizes/strides of a symbolic tensor were asked for: the tracer specializes its
  // symbols (a guard that each equals its hint), and the hints are returned.
  void (*concretize)(const TensorImpl* t) = nullptr;
};
TensorHooks& tensor_hooks();
// User code reads a real tensor's values (item(), to_vector()): calls real_data if set.
void note_values_read(const TensorImpl* t);

Shape contiguous_strides(const Shape& sizes);
SymShape contiguous_strides(const SymShape& sizes);
// Element and byte counts of a shape: a kiln::Error when they overflow, never a wrapped number.
int64_t numel_of(const Shape& sizes);
size_t nbytes_of(const Shape& sizes, DType dtype);
// The lowest and highest element (from the storage's start) a layout reaches; last < first when it
// has no elements. A kiln::Error when the arithmetic overflows.
struct StorageExtent {
  int64_t first, last;
};
StorageExtent storage_extent(const Shape& sizes, const Shape& strides, int64_t offset);
// Whether two elements of t surely share memory (a dim of size > 1 with stride 0, as expand makes;
// PyTorch's MemOverlap::Yes). Symbolic layouts answer false.
bool has_internal_overlap(const TensorImpl& t);
// A bool tensor over memory kiln did not write (NumPy, DLPack, a file) must hold bytes 0 and 1
// only: other bytes would print and compute as 2, 255, ... A kiln::Error naming `source` otherwise.
void check_bool_bytes(const TensorImpl& t, const char* source);

// Fresh tensors: contiguous, uninitialized.
Tensor make_tensor(const Shape& sizes, DType dtype, Device device = kCPU);
Tensor make_tensor(const TensorSpec& spec);  // fake if the spec is symbolic or fake is true
Tensor make_fake(const TensorSpec& spec);
// A tensor sharing `base`'s storage with the given layout.
Tensor make_view(const Tensor& base, const TensorSpec& spec);
// A 0-d tensor holding a number; marked as a wrapped number for type promotion.
Tensor wrap_scalar(Scalar s, Device device = kCPU);

}  // namespace kiln
