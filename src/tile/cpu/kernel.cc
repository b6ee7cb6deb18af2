// Compiling and launching tile kernels on the CPU (kernel.h).
#include "tile/cpu/kernel.h"

#include <cctype>
#include <limits>
#include <set>

#include "tile/cpu/emit_c.h"
#include "tile/passes/passes.h"

namespace kiln::tile::cpu {
namespace {

// The generated code's kiln_tile_arg (emit_c.cc): one 8-byte slot per parameter.
union RawArg {
  void* p;
  int64_t i;
  double f;
};
using EntryFn = void (*)(const RawArg* args, const int64_t* grid);

[[noreturn]] void fail(const std::string& kernel, const std::string& message, const std::string& hint = {}) {
  Error::Info info;
  info.op = "tile.launch";
  info.message = "kernel " + kernel + ": " + message;
  info.hint = hint;
  throw Error(std::move(info));
}

std::string param_text(const ParamSig& p) {
  switch (p.kind) {
    case ParamKind::Pointer: return std::string("ptr<") + short_name(p.dtype) + ">";
    case ParamKind::Sym: return "sym";
    default: return short_name(p.dtype);
  }
}

}  // namespace

struct Kernel::Data {
  std::string name;
  std::vector<ParamSig> params;
  Meta meta;
  std::string ir;
  std::string source;
  std::shared_ptr<Library> lib;
  EntryFn entry = nullptr;
};

const std::string& Kernel::name() const { return d_->name; }
const std::vector<ParamSig>& Kernel::params() const { return d_->params; }
const Meta& Kernel::meta() const { return d_->meta; }
const std::string& Kernel::ir() const { return d_->ir; }
const std::string& Kernel::source() const { return d_->source; }
const Library& Kernel::library() const { return *d_->lib; }

void Kernel::launch(const Grid& grid, std::span<const Arg> args) const {
  KILN_CHECK(d_, "tile: launching an empty Kernel (default-constructed)");
  const Data& k = *d_;
  if (args.size() != k.params.size())
    fail(k.name, detail::cat("takes ", k.params.size(), " argument(s), got ", args.size()));
  RawArg raw[64];
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamSig& p = k.params[i];
    const Arg& a = args[i];
    switch (p.kind) {
      case ParamKind::Pointer: {
        if (a.kind != Arg::Kind::Tensor)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be a tensor (", param_text(p), ")"));
        const Tensor& t = *a.tensor;
        if (!t.defined()) fail(k.name, detail::cat("argument ", i, " (", p.name, ") is an undefined tensor"));
        if (t.dtype() != p.dtype)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") is a ", kiln::name(t.dtype()), " tensor, the kernel takes ", param_text(p)),
               "convert it with .to() or build the kernel for this dtype");
        if (!t.device().is_cpu())
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") is on ", t.device().str(), "; this kernel runs on the CPU"));
        if (t.is_fake()) fail(k.name, detail::cat("argument ", i, " (", p.name, ") is a fake tensor (no data)"));
        raw[i].p = t.data_ptr();
        break;
      }
      case ParamKind::Int:
      case ParamKind::Sym:
        if (a.kind != Arg::Kind::Int)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be an integer (", param_text(p), ")"));
        if (p.dtype == kInt32 && (a.i < std::numeric_limits<int32_t>::min() || a.i > std::numeric_limits<int32_t>::max()))
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") = ", a.i, " does not fit in i32"),
               "declare the parameter i64");
        raw[i].i = a.i;
        break;
      case ParamKind::Float:
        if (a.kind == Arg::Kind::Tensor)
          fail(k.name, detail::cat("argument ", i, " (", p.name, ") must be a number (", param_text(p), ")"));
        raw[i].f = a.kind == Arg::Kind::Float ? a.f : double(a.i);
        break;
    }
  }
  const int64_t g[3] = {grid.x, grid.y, grid.z};
  for (int d = 0; d < 3; ++d)
    if (g[d] < 0 || g[d] > std::numeric_limits<int32_t>::max())
      fail(k.name, detail::cat("grid dim ", d, " is ", g[d], "; it must be in [0, 2^31)"));
  if (g[0] == 0 || g[1] == 0 || g[2] == 0) return;
  k.entry(raw, g);
}

std::vector<Kernel> compile_group(std::vector<Program> programs, const std::string& passes) {
  KILN_CHECK(!programs.empty(), "tile: compile_group of no kernels");
  std::set<std::string> names;
  std::vector<const Program*> ptrs;
  std::string stem;
  for (Program& p : programs) {
    KILN_CHECK(names.insert(entry_name(p)).second, "tile: two kernels named ", p.name, " in one compile group");
    verify(p);
    run_passes(p, passes);
    ptrs.push_back(&p);
    stem += (stem.empty() ? "" : "+") + p.name;
  }
  if (stem.size() > 60) stem = stem.substr(0, 60);
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '+') c = '_';
  const std::string source = translation_unit(ptrs);
  std::shared_ptr<Library> lib = compile_source(source, stem);
  std::vector<Kernel> out;
  for (const Program& p : programs) {
    auto d = std::make_shared<Kernel::Data>();
    d->name = p.name;
    for (const Param& prm : p.params) d->params.push_back({prm.name, prm.kind, prm.value->type.dtype});
    d->meta = p.meta;
    d->ir = print(p);
    d->source = source;
    d->lib = lib;
    d->entry = reinterpret_cast<EntryFn>(lib->symbol(entry_name(p)));
    Kernel k;
    k.d_ = std::move(d);
    out.push_back(std::move(k));
  }
  return out;
}

Kernel compile(Program p, const std::string& passes) {
  std::vector<Program> one;
  one.push_back(std::move(p));
  return compile_group(std::move(one), passes).at(0);
}

}  // namespace kiln::tile::cpu
