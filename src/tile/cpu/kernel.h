// Compiled tile kernels on the CPU: compile a program (or a group in one translation unit) and
// launch it on tensors, numbers and a grid.
//
//   tile::cpu::Kernel k = tile::cpu::compile(b.finish());
//   k(tile::cpu::Grid(cdiv(n, 1024)), x, y, out, n);            // tensors, ints, floats in order
//   k.launch([&](const tile::Meta& m) { return tile::cpu::Grid(cdiv(n, m.find("BLOCK")->to_int())); }, {x, y, out, n});
//
// A launch checks each argument against its parameter (a tensor's dtype and device against the
// pointer type, an int's range against i32) and calls the entry point: no allocation and no
// lookup by name on the way.
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <span>

#include "tile/cpu/cc.h"
#include "tile/ir.h"

namespace kiln::tile::cpu {

// The grid: how many program instances along each axis.
struct Grid {
  int64_t x = 1, y = 1, z = 1;
  Grid(int64_t gx = 1, int64_t gy = 1, int64_t gz = 1) : x(gx), y(gy), z(gz) {}
};
// A grid computed from the kernel's meta-parameters (Triton's `grid = lambda meta: ...`).
using GridFn = std::function<Grid(const Meta&)>;

// One launch argument: a tensor (for a pointer parameter), an integer (int and sym
// parameters), or a float (float parameters; an integer converts).
struct Arg {
  enum class Kind : uint8_t { Tensor, Int, Float } kind;
  const Tensor* tensor = nullptr;
  int64_t i = 0;
  double f = 0;
  Arg(const Tensor& t) : kind(Kind::Tensor), tensor(&t) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Arg(T v) : kind(Kind::Int), i(int64_t(v)) {}
  Arg(double v) : kind(Kind::Float), f(v) {}
  Arg(float v) : kind(Kind::Float), f(v) {}
};

struct ParamSig {
  std::string name;
  ParamKind kind;
  DType dtype;
};

// What a launcher's argument checks share with every backend's (the CUDA launcher too): a
// parameter as its errors name it ("ptr<f32>", "sym", "i64") and the kiln::Error of a bad launch.
std::string param_text(const ParamSig& p);
[[noreturn]] void launch_failure(const std::string& kernel, const std::string& message, const std::string& hint = {});

class PendingGroup;
struct GroupImage;

class Kernel {
 public:
  const std::string& name() const;
  const std::vector<ParamSig>& params() const;
  const Meta& meta() const;
  const std::string& ir() const;      // the program as compiled (after its passes), as text (empty: load_group)
  const std::string& source() const;  // the translation unit it was compiled in
  const Library& library() const;

  void launch(const Grid& grid, std::span<const Arg> args) const;
  void launch(const Grid& grid, std::initializer_list<Arg> args) const { launch(grid, std::span<const Arg>(args.begin(), args.size())); }
  void launch(const GridFn& grid, std::span<const Arg> args) const { launch(grid(meta()), args); }
  template <class... A>
  void operator()(const Grid& grid, const A&... args) const {
    const Arg a[] = {Arg(args)...};
    launch(grid, std::span<const Arg>(a, sizeof...(A)));
  }

 private:
  struct Data;
  friend PendingGroup load_group(GroupImage image, std::vector<std::string> ir);
  std::shared_ptr<const Data> d_;
};

// A group short of its objects: per translation unit its file stem and C, per kernel its
// signature, entry symbol and unit (not its IR: Kernel::ir() of a loaded group is empty). What a whole compiled graph keeps on
// disk (inductor's plan cache) to start its compilers again without the passes or the emitter.
// `fields` lists every member once for a reader and a writer (inductor/plan_cache.h).
struct GroupImage {
  struct Entry {
    std::string name, symbol;
    std::vector<ParamSig> params;
    Meta meta;
    size_t part = 0;
  };
  std::vector<std::string> stems, sources;  // per translation unit
  std::vector<Entry> kernels;
};
template <class A>
void fields(A& a, ParamSig& p) { a(p.name, p.kind, p.dtype); }
template <class A>
void fields(A& a, GroupImage::Entry& e) { a(e.name, e.symbol, e.params, e.meta, e.part); }
template <class A>
void fields(A& a, GroupImage& g) { a(g.stems, g.sources, g.kernels); }

// A group being compiled in the background (compile_group_async): its translation units are
// ready at once, kernels() waits for the compilers and throws what compile_group would.
class PendingGroup {
 public:
  PendingGroup() = default;
  const std::vector<std::string>& sources() const { return *sources_; }  // the translation units
  const std::vector<Kernel>& kernels() const { return kernels_.get(); }   // waits; rethrows
  bool valid() const { return kernels_.valid(); }
  const GroupImage& image() const { return *image_; }

 private:
  friend PendingGroup load_group(GroupImage image, std::vector<std::string> ir);
  std::shared_ptr<const GroupImage> image_;
  std::shared_ptr<const std::vector<std::string>> sources_;
  std::shared_future<std::vector<Kernel>> kernels_;
};

// A program's text without its names (the kernel's and its parameters') and origins: what its C
// depends on. Kernels with the same code text (a model's layers, an optimizer's per-parameter
// updates) compile once and launch one entry, and max-autotune tunes them once (inductor/autotune.cc).
// (p is left as it was.)
std::string code_text(Program& p);

// Verifies, runs the passes (a list for run_passes; "" for none), emits, compiles and loads.
Kernel compile(Program p, const std::string& passes = "default");
// Several kernels in as few translation units as pays (names must differ): one, or for a big
// group up to compile_jobs() of about equal size, compiled in parallel, each through the disk
// cache (a warm process runs no compiler).
std::vector<Kernel> compile_group(std::vector<Program> programs, const std::string& passes = "default");
// The same, returning while the compilers run (on threads of their own; at most compile_jobs()
// compilers at once in the process): a caller compiles several groups at once, or does other
// work meanwhile. Verification and the passes run before it returns (their errors throw here).
// `printed`: the programs' text (print() of each, concatenated) when the caller has it already.
PendingGroup compile_group_async(std::vector<Program> programs, const std::string& passes = "default", std::string printed = {});
// Starts the compilers of a group as compile_group_async made it (its image()), each unit
// through the disk cache; `ir`: per kernel its IR after the passes, where the caller has it
// (Kernel::ir()). A kiln::Error when the image is not self-consistent.
PendingGroup load_group(GroupImage image, std::vector<std::string> ir = {});

}  // namespace kiln::tile::cpu

namespace kiln::tile {
template <class A>
void fields(A& a, Meta& m) { a(m.constexprs, m.num_warps, m.num_stages); }
}  // namespace kiln::tile
