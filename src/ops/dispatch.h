// The op registry and dispatcher: how an op call (boxed arguments) finds its meta function,
// kernel, decomposition and derivative, and the macros that register them.
//
// Writing an op (see docs/internals.md):
//   KILN_META(add)   { ... return {spec}; }            // shapes/dtypes only; never reads data
//   KILN_KERNEL(add) { ... return {out}; }             // CPU kernel: `a` args, `specs` from meta
//   KILN_DEVICE_KERNEL(add, CUDA) { ... }              // the kernel of another device type
//   KILN_DECOMP(gelu){ ... return {kiln ops...}; }     // composite: written with kiln ops
//   KILN_DERIVATIVE(mul) { ... }                        // grads of the tensor inputs
#pragma once
#include <kiln/ops.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/call_site.h"

namespace kiln::ops {

enum class OpId : uint16_t {
#define KILN_OP(id, kind, family, dtype, flags, schema) id,
#include "ops/ops.def"
#undef KILN_OP
  NumOps
};
inline constexpr int kNumOps = int(OpId::NumOps);

enum class OpKind : uint8_t { PRIM, VIEW, COMPOSITE };
// What an op computes (ops.def's family column); layers that treat ops by kind read this.
enum class OpFamily : uint8_t {
  POINTWISE, REDUCTION, SCAN, INDEXING, VIEW, LAYOUT, CREATION, RANDOM, LINALG, SORT, DATADEP, MUTATION, NN
};
// The output dtype rule of an op's first output (ops.def's dtype column).
enum class DTypeRule : uint8_t { NONE, SAME, PROMOTE, INT_TO_FLOAT, INT_TO_LONG, BOOL, LONG, ARG };
const char* family_name(OpFamily f);     // "pointwise", ...
const char* dtype_rule_name(DTypeRule r);  // "int_to_float", ...; "none"
enum OpFlag : uint32_t {
  DIFF = 1, METHOD = 2, INPLACE = 4, SCALAR = 8, RANDOM = 16, DATADEP = 32, MUTATES = 64
};

// One boxed argument. None is std::monostate (also an undefined Tensor for Tensor?).
using Arg = std::variant<std::monostate, Tensor, TensorList, Scalar, int64_t, double, bool,
                         std::vector<int64_t>, SymInt, SymShape, DType, Device, std::string,
                         std::vector<double>>;

// Read an op's arguments by name through its typed view (ops/args_gen.h, generated from the
// schema): `ops::args::sum s{a}; s.keepdim()` rather than `a.b(2)`.
struct Args {
  OpId op;
  std::vector<Arg> v;

  size_t size() const { return v.size(); }
  bool is_none(size_t i) const;
  const Tensor& tensor(size_t i) const;  // throws if undefined
  Tensor opt_tensor(size_t i) const;     // undefined if None
  const TensorList& tensors(size_t i) const;
  Scalar scalar(size_t i) const;
  std::optional<Scalar> opt_scalar(size_t i) const;
  int64_t i64(size_t i) const;
  std::optional<int64_t> opt_i64(size_t i) const;
  double f64(size_t i) const;
  std::optional<double> opt_f64(size_t i) const;
  bool b(size_t i) const;
  std::optional<bool> opt_b(size_t i) const;
  const std::vector<int64_t>& ints(size_t i) const;
  std::optional<std::vector<int64_t>> opt_ints(size_t i) const;
  SymInt symint(size_t i) const;
  std::optional<SymInt> opt_symint(size_t i) const;
  const SymShape& symints(size_t i) const;
  std::optional<SymShape> opt_symints(size_t i) const;
  DType dtype(size_t i) const;
  std::optional<DType> opt_dtype(size_t i) const;
  std::optional<Device> opt_device(size_t i) const;
  const std::string& str(size_t i) const;
  std::optional<std::string> opt_str(size_t i) const;
  std::optional<std::vector<double>> opt_f64s(size_t i) const;
  // Every defined tensor argument, Tensor[] elements flattened, in argument order.
  std::vector<Tensor> tensor_inputs() const;
};

using MetaFn = std::vector<TensorSpec> (*)(const Args& a);
using KernelFn = std::vector<Tensor> (*)(const Args& a, const std::vector<TensorSpec>& specs);
using DecompFn = std::vector<Tensor> (*)(const Args& a);

// What a derivative formula sees. grads[i] is the gradient of outputs[i]; for floating outputs
// it is always defined (zeros where nothing flowed back). It returns one gradient per entry of
// inputs (= args.tensor_inputs()), undefined where none is needed or the input is not
// differentiable; needs(i) says which inputs want one.
// The forward outputs a formula reads. With `versions` (eager backward), reading one checks that
// its storage was not written since the forward ran, e.g. through a detach()ed alias: the formula
// would read the new values (PyTorch's saved-variable version check).
struct SavedOutputs {
  const std::vector<Tensor>& v;
  const std::vector<uint64_t>* versions = nullptr;
  OpId op{};
  SavedOutputs(const std::vector<Tensor>& v) : v(v) {}
  SavedOutputs(const std::vector<Tensor>& v, const std::vector<uint64_t>* versions, OpId op)
      : v(v), versions(versions), op(op) {}
  const Tensor& operator[](size_t i) const;
  size_t size() const { return v.size(); }
};

struct GradCtx {
  const Args& args;
  const std::vector<Tensor>& inputs;
  SavedOutputs outputs;
  const std::vector<Tensor>& grads;
  std::vector<bool> needs_grad;
  bool needs(size_t i) const { return i < needs_grad.size() && needs_grad[i]; }
};
using DerivFn = std::vector<Tensor> (*)(const GradCtx& g);

struct OpInfo {
  OpId id;
  const char* name;    // the op's id, e.g. "max_dim"
  const char* schema;  // e.g. "max.dim(Tensor self, int dim, bool keepdim=False) -> (...)"
  OpKind kind;
  OpFamily family;
  DTypeRule dtype_rule;
  uint32_t flags;
  MetaFn meta = nullptr;
  KernelFn kernels[kNumDeviceTypes] = {};  // per DeviceType; null: none for that device
  DecompFn decomp = nullptr;
  DerivFn derivative = nullptr;
  bool differentiable() const { return flags & DIFF; }
  KernelFn kernel(DeviceType t) const { return kernels[size_t(t)]; }
};

const OpInfo& op_info(OpId op);
const OpInfo* find_op(const std::string& name);
bool register_meta(OpId op, MetaFn fn);
bool register_kernel(OpId op, KernelFn fn);  // the CPU kernel
bool register_kernel(OpId op, DeviceType device, KernelFn fn);
bool register_decomp(OpId op, DecompFn fn);
bool register_derivative(OpId op, DerivFn fn);

// The boxed entry point every public op goes through.
std::vector<Tensor> call(OpId op, std::vector<Arg> args);
// Casts the op's floating tensor arguments as the active AutocastGuard asks (no-op when off).
void apply_autocast(Args& a);
// Below autograd: meta + the kernel of the inputs' device (or views, or the decomposition); fake
// inputs give fake outputs. Tensors on different devices are an error, except that 0-d CPU
// tensors (and wrapped numbers) may join another device's, as in PyTorch; copy_ between devices
// moves the bytes through the device interface. A composite without a kernel for the device runs
// its decomposition; any other op without one fails ("<op> has no kernel for <device>").
std::vector<Tensor> call_backend(const Args& a);

// Autograd sits above ops and attaches here: src/autograd/attach.cc installs these functions
// at static initialization. Until then (or without autograd) calls record no history.
struct AutogradHooks {
  bool (*any_requires_grad)(const Args& a) = nullptr;        // does this call record a node?
  std::vector<Tensor> (*call_with_grad)(const Args& a) = nullptr;  // runs it and records the node
  void (*before_inplace_write)(const Tensor& self) = nullptr;
  void (*note_view)(const Tensor& base, const Tensor& view) = nullptr;  // a view made with grad on
  void (*save_before_overwrite)(const Tensor& self, const Tensor& result) = nullptr;
};
bool set_autograd_hooks(const AutogradHooks& hooks);  // returns true, for static registration

// An interceptor for every op call (capture installs one to record graphs). Returns nullopt to
// let the call proceed normally.
struct DispatchMode {
  virtual ~DispatchMode() = default;
  virtual std::optional<std::vector<Tensor>> intercept(const Args& a) = 0;
};
DispatchMode* set_dispatch_mode(DispatchMode* m);  // returns the previous one
DispatchMode* dispatch_mode();                      // the active one (null: none)
// Runs ops for real (no mode) for its lifetime: for eager work done on the side of a recording
// (copying a constant, printing a graph, running a compiled segment).
struct SuspendDispatchMode {
  DispatchMode* prev = set_dispatch_mode(nullptr);
  ~SuspendDispatchMode() { set_dispatch_mode(prev); }
};

// The user's source location for errors lives in core (core/call_site.h); ops code names it
// ops::CallSite as before.
using kiln::CallSite;
using kiln::current_call_site;

// --- boxing helpers used by the generated API (ops_gen.cc)
inline Arg box(const Tensor& t) { return t.defined() ? Arg(t) : Arg(); }
inline Arg box(const TensorList& t) { return t; }
inline Arg box(Scalar s) { return s; }
inline Arg box(int64_t i) { return i; }
inline Arg box(double d) { return d; }
inline Arg box(bool b) { return b; }
inline Arg box(const IntList& l) { return l.is_none() ? Arg() : Arg(l.vec()); }
inline Arg box(const SymInt& s) { return s; }
inline Arg box(const SymIntList& l) { return l.vec(); }
inline Arg box(DType d) { return d; }
inline Arg box(Device d) { return d; }
inline Arg box(const std::string& s) { return s; }
inline Arg box(const std::vector<double>& d) { return d; }
template <class T>
Arg box(const std::optional<T>& o) { return o ? box(*o) : Arg(); }

Tensor unbox_one(std::vector<Tensor>&& r);
template <size_t N>
auto unbox_tuple(std::vector<Tensor>&& r) {
  return [&]<size_t... I>(std::index_sequence<I...>) { return std::make_tuple(std::move(r[I])...); }(
      std::make_index_sequence<N>{});
}
Tensor scalar_to_tensor(Scalar s);
// A float number as a wrapped 0-d tensor: the constant operand of decompositions and derivatives.
inline Tensor num(double v) { return scalar_to_tensor(Scalar(v)); }
// self = result for in-place methods (add_, relu_, ...): checks PyTorch's rules (same shape,
// result dtype castable to self's), then copy_.
Tensor& assign_inplace(Tensor& self, const Tensor& result, const char* name);

}  // namespace kiln::ops

// --- registration macros (use inside namespace-scope code of a .cc file)
#define KILN_CONCAT_(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_(a, b)
#define KILN_META(op)                                                                          \
  static std::vector<::kiln::TensorSpec> kiln_meta_##op(const ::kiln::ops::Args& a);           \
  [[maybe_unused]] static const bool kiln_meta_reg_##op =                                      \
      ::kiln::ops::register_meta(::kiln::ops::OpId::op, &kiln_meta_##op);                      \
  static std::vector<::kiln::TensorSpec> kiln_meta_##op([[maybe_unused]] const ::kiln::ops::Args& a)
#define KILN_KERNEL(op)                                                                        \
  static std::vector<::kiln::Tensor> kiln_kernel_##op(const ::kiln::ops::Args& a,              \
                                                      const std::vector<::kiln::TensorSpec>& specs); \
  [[maybe_unused]] static const bool kiln_kernel_reg_##op =                                    \
      ::kiln::ops::register_kernel(::kiln::ops::OpId::op, &kiln_kernel_##op);                  \
  static std::vector<::kiln::Tensor> kiln_kernel_##op([[maybe_unused]] const ::kiln::ops::Args& a, \
                                                      [[maybe_unused]] const std::vector<::kiln::TensorSpec>& specs)
#define KILN_DEVICE_KERNEL(op, device)                                                         \
  static std::vector<::kiln::Tensor> kiln_kernel_##device##_##op(const ::kiln::ops::Args& a,   \
                                                                 const std::vector<::kiln::TensorSpec>& specs); \
  [[maybe_unused]] static const bool kiln_kernel_reg_##device##_##op = ::kiln::ops::register_kernel( \
      ::kiln::ops::OpId::op, ::kiln::DeviceType::device, &kiln_kernel_##device##_##op);       \
  static std::vector<::kiln::Tensor> kiln_kernel_##device##_##op(                              \
      [[maybe_unused]] const ::kiln::ops::Args& a, [[maybe_unused]] const std::vector<::kiln::TensorSpec>& specs)
#define KILN_DECOMP(op)                                                                        \
  static std::vector<::kiln::Tensor> kiln_decomp_##op(const ::kiln::ops::Args& a);             \
  [[maybe_unused]] static const bool kiln_decomp_reg_##op =                                    \
      ::kiln::ops::register_decomp(::kiln::ops::OpId::op, &kiln_decomp_##op);                  \
  static std::vector<::kiln::Tensor> kiln_decomp_##op([[maybe_unused]] const ::kiln::ops::Args& a)
#define KILN_DERIVATIVE(op)                                                                    \
  static std::vector<::kiln::Tensor> kiln_deriv_##op(const ::kiln::ops::GradCtx& g);           \
  [[maybe_unused]] static const bool kiln_deriv_reg_##op =                                     \
      ::kiln::ops::register_derivative(::kiln::ops::OpId::op, &kiln_deriv_##op);               \
  static std::vector<::kiln::Tensor> kiln_deriv_##op([[maybe_unused]] const ::kiln::ops::GradCtx& g)
// Registers one existing function for an op (for families sharing a meta or kernel).
#define KILN_REGISTER(what, op, fn)                                                            \
  [[maybe_unused]] static const bool KILN_CONCAT(kiln_reg_##what##_##op##_, __LINE__) =        \
      ::kiln::ops::register_##what(::kiln::ops::OpId::op, fn)
