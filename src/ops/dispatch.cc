// The dispatcher: capture interceptor -> autograd (through its hooks) -> backend (the kernel of
// the inputs' device, a view, or the decomposition).
#include "ops/dispatch.h"

#include <kiln/autocast.h>
#include <kiln/grad_mode.h>

#include "core/tensor_impl.h"
#include "ops/applies.h"
#include "runtime/device.h"

namespace kiln::ops {
namespace {
thread_local DispatchMode* t_mode = nullptr;

// Until autograd installs its hooks, calls record nothing.
AutogradHooks g_autograd = {
    [](const Args&) { return false; },
    [](const Args& a) { return call_backend(a); },
    [](const Tensor&) {},
    [](const Tensor&, const Tensor&) {},
    [](const Tensor&, const Tensor&) {},
};

std::string describe_inputs(const Args& a) {
  std::string s;
  for (const Tensor& t : a.tensor_inputs()) {
    if (!s.empty()) s += ", ";
    s += std::string(name(t.dtype())) + shape_str(t.sym_sizes());
    if (!t.device().is_cpu()) s += " on " + t.device().str();
  }
  return s;
}

// Calls f on every defined tensor argument (Tensor[] elements too) until it returns true,
// without building tensor_inputs()' vector.
template <class F>
bool any_tensor(const Args& a, F f) {
  for (const Arg& x : a.v) {
    if (auto* t = std::get_if<Tensor>(&x)) {
      if (t->defined() && f(*t)) return true;
    } else if (auto* l = std::get_if<TensorList>(&x)) {
      for (const Tensor& e : *l)
        if (e.defined() && f(e)) return true;
    }
  }
  return false;
}

// What the backend needs to know of the tensor arguments, from one walk over them (this runs on
// every op call).
struct Inputs {
  bool any = false, fake = false, off_cpu = false;  // some tensor argument; some fake; some off the CPU
};

[[gnu::always_inline]] inline Inputs scan_inputs(const Args& a) {
  Inputs in;
  any_tensor(a, [&](const Tensor& t) {
    const Storage& s = *t.impl_ptr()->storage;  // defined: any_tensor skips the others
    in.any = true;
    in.fake |= s.fake;
    in.off_cpu |= !s.device.is_cpu();
    return false;
  });
  return in;
}

// A factory's device (an op without tensor inputs runs where its device= argument says).
Device device_argument(const Args& a) {
  for (const Arg& x : a.v)
    if (auto* d = std::get_if<Device>(&x)) return *d;
  return kCPU;
}

// The device of an op with a tensor off the CPU: 0-d CPU tensors (and numbers) join any device;
// the other tensors must agree.
Device device_off_cpu(const Args& a) {
  std::optional<Device> dev;
  any_tensor(a, [&](const Tensor& t) {
    const TensorImpl& i = *t.impl_ptr();
    const Device d = i.storage->device;
    if (d.is_cpu() && i.sizes.empty()) return false;
    if (!dev) dev = d;
    KILN_CHECK_HINT(d == *dev,
                    "move them to one device first with .to(device) (e.g. b.to(a.device())); only 0-d CPU "
                    "tensors and numbers may join tensors on another device",
                    "expected all tensors on one device, got ", dev->str(), " and ", d.str());
    return false;
  });
  return *dev;  // set: some tensor is off the CPU, and not a 0-d CPU one
}

[[noreturn]] void fail_no_kernel(const OpInfo& info, Device dev) {
  detail::fail(std::string(info.name) + " has no kernel for " + dev.str(),
               runtime::find_device(dev.type)
                   ? "compute it on the CPU (.cpu(), then .to(device) for the result), or register a kernel for "
                     "the device (ops::register_kernel(op, DeviceType, fn), docs/devices.md)"
                   : runtime::no_device_message(dev.type));
}

// An in-place write must not store several values into one memory location (x.expand(3).add_(1)):
// the result would depend on the loop order. A fill (one value, as fill_ and zero_ write) is fine.
void check_writable(const Tensor& self, const Tensor& src) {
  if (src.dim() == 0 || !has_internal_overlap(*self.impl())) return;
  detail::fail(detail::cat("unsupported operation: more than one element of the written-to tensor (sizes ",
                           shape_str(self.impl()->sizes), ", strides ", shape_str(self.impl()->strides),
                           ") refers to a single memory location"),
               "clone() the tensor before performing the operation");
}

// The bytes a tensor's elements span, from its first element (strides are never negative).
size_t span_bytes(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return size_t(last + 1) * t.element_size();
}

// A CPU tensor with t's layout and (when `fetch`) values: t itself on the CPU; else a host copy
// of the bytes t spans, viewed with t's sizes and strides.
Tensor host_view(const Tensor& t, bool fetch) {
  if (t.device().is_cpu()) return t;
  const size_t bytes = span_bytes(t);
  Tensor block = make_tensor({int64_t(bytes)}, kUInt8);
  if (fetch) runtime::copy_bytes(block.data_ptr(), kCPU, t.data_ptr(), t.device(), bytes);
  return make_view(block, TensorSpec{t.sym_sizes(), t.sym_strides(), 0, t.dtype(), kCPU});
}

// copy_ between devices: the bytes move through the device interface, and whatever else the
// copy does (casting, broadcasting, strided layouts) runs on the host as the CPU's copy_, so a
// device needs no kernel to have tensors moved on and off it.
std::vector<Tensor> copy_between_devices(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.sizes() == src.sizes() && dst.is_contiguous() && src.is_contiguous()) {
    runtime::copy_bytes(dst.data_ptr(), dst.device(), src.data_ptr(), src.device(),
                        size_t(dst.numel()) * dst.element_size());
    return {dst};
  }
  const Tensor host_src = host_view(src, true);
  const Tensor host_dst = host_view(dst, !dst.is_contiguous());  // a dense destination is overwritten whole
  call_backend(Args{OpId::copy_, {host_dst, host_src}});
  if (!dst.device().is_cpu())
    runtime::copy_bytes(dst.data_ptr(), dst.device(), host_dst.data_ptr(), kCPU, span_bytes(dst));
  return {dst};
}
}  // namespace

const Tensor& SavedOutputs::operator[](size_t i) const {
  const Tensor& t = v.at(i);
  if (versions && t.defined())
    KILN_CHECK_HINT(t.impl()->storage->version == versions->at(i),
                    "clone() the result before modifying it in place (also through a detach()ed alias), or "
                    "modify it after backward()",
                    "one of the tensors needed to compute the gradient of ", op_info(op).name,
                    "Backward has been modified by an in-place operation (output ", i, " of ", op_info(op).name,
                    " is at version ", t.impl()->storage->version, "; expected version ", versions->at(i), ")");
  return t;
}

bool set_autograd_hooks(const AutogradHooks& hooks) {
  KILN_CHECK(hooks.any_requires_grad && hooks.call_with_grad && hooks.before_inplace_write && hooks.note_view &&
                 hooks.save_before_overwrite,
             "set_autograd_hooks: every hook must be set");
  g_autograd = hooks;
  return true;
}

DispatchMode* dispatch_mode() { return t_mode; }

DispatchMode* set_dispatch_mode(DispatchMode* m) {
  DispatchMode* prev = t_mode;
  t_mode = m;
  return prev;
}

std::vector<Tensor> call_backend(const Args& a) {
  const OpInfo& info = op_info(a.op);
  if (info.kind == OpKind::VIEW) {
    KILN_CHECK(info.meta, "internal: view op ", info.name, " has no meta function");
    return {make_view(a.tensor(0), info.meta(a).at(0))};
  }
  const Inputs in = scan_inputs(a);
  // Where the op runs: its tensors' device, or for a factory (no tensor inputs) its device argument.
  Device dev;
  if (!in.any) dev = device_argument(a);
  if (in.off_cpu) {
    const bool across = a.op == OpId::copy_ && !(a.tensor(0).device() == a.tensor(1).device());
    if (across && !in.fake) return copy_between_devices(a.tensor(0), a.tensor(1));
    dev = across ? a.tensor(0).device() : device_off_cpu(a);
  }
  // The outputs live there too: metas place them by their first tensor input, which may be a
  // 0-d CPU tensor joining another device's.
  auto run_meta = [&] {
    KILN_CHECK(info.meta, "internal: op ", info.name, " has a kernel but no meta function");
    std::vector<TensorSpec> specs = info.meta(a);
    if (in.off_cpu)
      for (TensorSpec& s : specs) s.device = dev;
    return specs;
  };
  if (in.fake) {  // metadata only: the meta function answers, or the decomposition does
    if (info.meta) {
      std::vector<Tensor> outs;
      for (auto& s : run_meta()) outs.push_back(make_fake(s));
      return outs;
    }
  } else {
    const KernelFn kernel = info.kernel(dev.type);  // a few loads: no lookup by name or map
    if (kernel && kernel_applies(a)) return kernel(a, run_meta());
    if (!kernel && !info.decomp) fail_no_kernel(info, dev);
  }
  if (info.decomp) return info.decomp(a);
  detail::fail(std::string("internal: op ") + info.name + " has neither a kernel nor a decomposition");
}

std::vector<Tensor> call(OpId op, std::vector<Arg> args) {
  Args a{op, std::move(args)};
  try {
    if (autocast_dtype()) apply_autocast(a);
    if (op_info(op).flags & MUTATES) check_writable(a.tensor(0), a.tensor(1));
    if (t_mode) {
      if (auto r = t_mode->intercept(a)) return std::move(*r);
    }
    const OpInfo& info = op_info(op);
    if (info.flags & MUTATES) g_autograd.before_inplace_write(a.tensor(0));
    std::vector<Tensor> outs;
    if (is_grad_enabled() && g_autograd.any_requires_grad(a)) {
      if (info.differentiable()) {
        if (info.flags & MUTATES) a.tensor(0).impl()->storage->version++;  // before the node saves versions
        return g_autograd.call_with_grad(a);
      }
      // Not differentiable: its outputs never require grad, whatever its inputs do.
      NoGradGuard no_grad;
      outs = call_backend(a);
    } else {
      outs = call_backend(a);
      // In-place writes into the view with grad mode on must reach the base (autograd rebases it).
      if (info.kind == OpKind::VIEW && is_grad_enabled()) g_autograd.note_view(a.tensor(0), outs.at(0));
    }
    if (info.flags & MUTATES) a.tensor(0).impl()->storage->version++;
    return outs;
  } catch (Error& e) {
    // Report the outermost op the user called with its inputs; inner ops become context.
    Error::Info info = e.info();
    if (!info.op.empty()) info.message = "in " + info.op + ": " + info.message;
    info.op = op_info(op).name;
    info.inputs = describe_inputs(a);
    throw Error(std::move(info));
  }
}

Tensor unbox_one(std::vector<Tensor>&& r) {
  KILN_CHECK(!r.empty(), "internal: op returned no tensor");
  return std::move(r[0]);
}

Tensor scalar_to_tensor(Scalar s) { return wrap_scalar(s); }

Tensor& assign_inplace(Tensor& self, const Tensor& result, const char* name) {
  KILN_CHECK_HINT(result.sym_sizes() == self.sym_sizes(), "use the out-of-place op and assign the result",
                  name, ": the result has shape ", shape_str(result.sym_sizes()),
                  " which differs from the in-place target's shape ", shape_str(self.sym_sizes()));
  KILN_CHECK_HINT(can_cast(result.dtype(), self.dtype()), "convert the target first (e.g. x = x.to(kFloat32))",
                  name, ": result type ", kiln::name(result.dtype()), " can't be cast to the desired output type ",
                  kiln::name(self.dtype()));
  // Fast path for plain eager tensors (no autograd state, recording, autocast, fakes or shared
  // memory), dense and of one dtype and device: copy the bytes straight in through the device
  // interface and bump the version as copy_ would, without dispatching.
  const TensorImpl *s = self.impl(), *r = result.impl();
  if (!t_mode && !autocast_dtype() && !s->autograd && !r->autograd && !s->storage->fake && !r->storage->fake &&
      s->storage != r->storage && s->dtype == r->dtype && !s->sym && !r->sym && s->device() == r->device() &&
      s->is_contiguous() && r->is_contiguous()) {
    runtime::copy_bytes(s->data(), s->device(), r->data(), r->device(), size_t(s->numel()) * itemsize(s->dtype));
    s->storage->version++;
    return self;
  }
  if (is_grad_enabled()) g_autograd.save_before_overwrite(self, result);
  copy_(self, result);
  return self;
}

}  // namespace kiln::ops

namespace kiln {

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

DType result_type(const std::vector<Tensor>& tensors) {
  // Three priority classes, as PyTorch: tensors with dims, 0-d tensors, wrapped numbers.
  enum { kDim, kZero, kWrapped };
  std::optional<DType> res[3];
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    int cls = t.is_wrapped_number() ? kWrapped : t.dim() == 0 ? kZero : kDim;
    DType d = t.dtype();
    if (cls == kWrapped && is_floating(d)) d = default_float_dtype();
    res[cls] = res[cls] ? promote_types(*res[cls], d) : d;
  }
  auto category = [](DType d) { return d == DType::Bool ? 0 : is_floating(d) ? 2 : 1; };
  // A lower-priority class wins only if it is of a higher category (bool < int < float).
  auto combine = [&](std::optional<DType> higher, std::optional<DType> lower) -> std::optional<DType> {
    if (!higher) return lower;
    if (!lower) return higher;
    if (category(*lower) > category(*higher)) return promote_types(*higher, *lower);
    return higher;
  };
  std::optional<DType> r = combine(res[kDim], combine(res[kZero], res[kWrapped]));
  return r ? *r : default_float_dtype();
}

}  // namespace kiln
