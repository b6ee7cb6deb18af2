// Compiling, loading and launching tile kernels on a GPU (kernel.h).
#include "tile/cuda/kernel.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "runtime/cache.h"
#include "runtime/cuda/nvrtc.h"
#include "tile/passes/passes.h"

namespace kiln::tile::cuda {
namespace {

namespace rc = runtime::cuda;

[[noreturn]] void fail(const std::string& kernel, const std::string& message, const std::string& hint = {}) {
  cpu::launch_failure(kernel, message, hint);
}
using cpu::param_text;

// One kernel parameter's value, as the entry point takes it (emit_cuda.cc: pointers, i32/i64,
// f32/f64 by value).
union Slot {
  void* p;
  int32_t i32;
  int64_t i64;
  float f32;
  double f64;
};

// One compiled form of a kernel: its CUDA, the translation unit, and the loaded function.
struct Variant {
  EmittedKernel emitted;
  std::string source;
  rc::Module module = nullptr;
  rc::Function fn = nullptr;
  Variant() = default;
  Variant(const Variant&) = delete;
  Variant& operator=(const Variant&) = delete;
  ~Variant() {
    try {
      if (module) rc::module_unload(module);
    } catch (const Error&) {  // the context may be gone at exit: nothing left to free
    }
  }
};

// Emits (arch: as emit_kernel's), compiles through the disk cache and loads `p` on `device`.
std::unique_ptr<Variant> load_variant(const Program& p, const std::string& arch, int device, bool aligned) {
  auto v = std::make_unique<Variant>();
  v->emitted = emit_kernel(p, arch, true, aligned);
  v->source = translation_unit(std::vector<EmittedKernel>{v->emitted});
  // wgmmas kept in flight across iterations, unless ptxas would serialize them (C7515: an
  // instruction other than a wgmma writes their accumulators): then each iteration waits for its own.
  std::string fallback;
  if (v->emitted.source.find("kiln_tile_wgmma_wait<1>") != std::string::npos)
    fallback = translation_unit(std::vector<EmittedKernel>{emit_kernel(p, arch, false, aligned)});
  const std::string image = cubin(v->source, p.name + ".cu", rc::properties(device).arch(), fallback);
  v->module = rc::module_load(image, device);
  v->fn = rc::module_function(v->module, v->emitted.entry.c_str());
  if (v->emitted.shared_bytes > 48 * 1024) rc::set_max_dynamic_shared(v->fn, int(v->emitted.shared_bytes));
  return v;
}

}  // namespace

// A kernel is compiled for 16-byte aligned pointer arguments (what the allocator hands out), so
// its runs' 16-byte accesses need no alignment test; a launch with a pointer that is not (a view
// at an odd offset) runs the variant without that assumption, compiled when first needed.
struct Kernel::Data {
  std::string name;
  std::vector<ParamSig> params;
  Meta meta;
  std::string arch, emit_arch;  // the device's; the one the emitter targets (KILN_TILE_WGMMA)
  int device = 0;
  Program program;  // verified, the passes run: for the unaligned variant
  std::unique_ptr<Variant> aligned;
  mutable std::once_flag unaligned_once;
  mutable std::unique_ptr<Variant> unaligned;
  const Variant& any_alignment() const {
    std::call_once(unaligned_once, [&] { unaligned = load_variant(program, emit_arch, device, false); });
    return *unaligned;
  }
};

const std::string& Kernel::name() const { return d_->name; }
const std::vector<ParamSig>& Kernel::params() const { return d_->params; }
const Meta& Kernel::meta() const { return d_->meta; }
const std::string& Kernel::source() const { return d_->aligned->source; }
const std::string& Kernel::arch() const { return d_->arch; }
int Kernel::threads() const { return d_->aligned->emitted.threads; }
int64_t Kernel::shared_bytes() const { return d_->aligned->emitted.shared_bytes; }
int Kernel::device() const { return d_->device; }
rc::FunctionResources Kernel::resources() const {
  return rc::function_resources(d_->aligned->fn, threads(), size_t(shared_bytes()));
}

void Kernel::launch(const Grid& grid, std::span<const Arg> args, rc::Stream stream) const {
  KILN_CHECK(d_, "tile: launching an empty cuda::Kernel (default-constructed)");
  const Data& k = *d_;
  if (args.size() != k.params.size())
    fail(k.name, detail::cat("takes ", k.params.size(), " argument(s), got ", args.size()));
  std::vector<Slot> slots(args.size());
  std::vector<void*> ptrs(args.size());
  bool aligned = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamSig& p = k.params[i];
    const Arg& a = args[i];
    Slot& s = slots[i];
    ptrs[i] = &s;
    switch (p.kind) {
      case ParamKind::Pointer: {
        if (a.kind == Arg::Kind::Pointer) {
          s.p = a.ptr;
          break;
        }
        if (a.kind != Arg::Kind::Tensor)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be a tensor (", param_text(p), ")"));
        const Tensor& t = *a.tensor;
        if (!t.defined()) fail(k.name, detail::cat("argument ", i, " (", p.name, ") is an undefined tensor"));
        if (t.dtype() != p.dtype)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") is a ", kiln::name(t.dtype()), " tensor, the kernel takes ", param_text(p)),
               "convert it with .to() or build the kernel for this dtype");
        if (!t.device().is_cuda() || t.device().index != k.device)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") is on ", t.device().str(), "; this kernel runs on cuda:", k.device),
               "move it with .to(\"cuda\")");
        s.p = t.data_ptr();
        break;
      }
      case ParamKind::Int:
      case ParamKind::Sym:
        if (a.kind != Arg::Kind::Int)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be an integer (", param_text(p), ")"));
        if (p.dtype == kInt32) {
          if (a.i < std::numeric_limits<int32_t>::min() || a.i > std::numeric_limits<int32_t>::max())
            fail(k.name, detail::cat("argument ", i, " (", p.name, ") = ", a.i, " does not fit in i32"), "declare the parameter i64");
          s.i32 = int32_t(a.i);
        } else {
          s.i64 = a.i;
        }
        break;
      case ParamKind::Float: {
        if (a.kind == Arg::Kind::Tensor || a.kind == Arg::Kind::Pointer)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be a number (", param_text(p), ")"));
        const double f = a.kind == Arg::Kind::Float ? a.f : double(a.i);
        if (p.dtype == kFloat32) s.f32 = float(f);
        else s.f64 = f;
        break;
      }
    }
  }
  // CUDA's grid limits: 2^31 - 1 blocks along x, 65535 along y and z.
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  const int64_t most[3] = {std::numeric_limits<int32_t>::max(), 65535, 65535};
  for (int d = 0; d < 3; ++d)
    if (g[d] < 0 || g[d] > most[d]) fail(k.name, detail::cat("grid dim ", d, " is ", g[d], "; on a GPU it must be in [0, ", most[d], "]"));
  if (g[0] == 0 || g[1] == 0 || g[2] == 0) return;
  rc::set_device(k.device);
  for (size_t i = 0; i < args.size(); ++i)
    if (k.params[i].kind == ParamKind::Pointer) aligned = aligned && reinterpret_cast<uintptr_t>(slots[i].p) % 16 == 0;
  const Variant& v = aligned ? *k.aligned : k.any_alignment();
  rc::launch(v.fn, rc::Dim3{unsigned(g[0]), unsigned(g[1]), unsigned(g[2])}, rc::Dim3{unsigned(v.emitted.threads), 1, 1},
             unsigned(v.emitted.shared_bytes), stream ? stream : rc::current_stream(k.device), ptrs.data());
}

std::string cubin(const std::string& source, const std::string& file, const std::string& arch, const std::string& fallback) {
  namespace cache = runtime::cache;
  const std::string key =
      cache::hash({source, arch, std::to_string(rc::nvrtc::version()), cache::kiln_version(), fallback}) + ".cubin";
  if (std::optional<std::string> hit = cache::get("tile-cuda", key)) return *std::move(hit);
  std::vector<std::string> options = {"-std=c++17"};
  if (!fallback.empty()) options.push_back("--ptxas-options=-v");  // (its report says whether it serialized)
  rc::nvrtc::Output out = rc::nvrtc::compile(source, file, arch, options);
  if (!fallback.empty() && out.log.find("C7515") != std::string::npos)  // kept under the source's key
    out = rc::nvrtc::compile(fallback, file, arch, {"-std=c++17"});
  cache::put("tile-cuda", key, out.binary);
  return std::move(out.binary);
}

Kernel compile(Program p, const std::string& passes) {
  verify(p);
  run_passes(p, passes);
  rc::require();
  auto d = std::make_shared<Kernel::Data>();
  d->name = p.name;
  d->meta = p.meta;
  for (const Param& prm : p.params) d->params.push_back({prm.name, prm.kind, prm.value->type.dtype});
  d->device = rc::current_device();
  d->arch = rc::properties(d->device).arch();
  // KILN_TILE_WGMMA=0: the dots on mma.sync even on sm_90a (to compare the two)
  const char* wgmma = std::getenv("KILN_TILE_WGMMA");
  d->emit_arch = wgmma && std::string(wgmma) == "0" ? std::string() : d->arch;
  d->aligned = load_variant(p, d->emit_arch, d->device, true);
  d->program = std::move(p);
  Kernel k;
  k.d_ = std::move(d);
  return k;
}

}  // namespace kiln::tile::cuda
