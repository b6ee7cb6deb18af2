// The executable plan: the scheduled loop IR as a flat list of steps (a kernel launch or an
// extern call), each with its arguments resolved to buffer slots and size expressions ahead of
// time. A call binds the size symbols from the inputs, allocates each buffer when its producer
// runs, and drops it after its last reader (memory_plan.cc), so peak memory follows the live set.
#include <kiln/grad_mode.h>
#include <kiln/log.h>
#include <kiln/ops.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>

#include "autograd/engine.h"
#include "core/tensor_impl.h"
#include "inductor/emit_tile.h"
#include "inductor/inductor.h"
#include "inductor/memory_plan.h"
#include "tile/cpu/kernel.h"

namespace kiln::inductor {
namespace {

using SymEnv = std::map<std::string, int64_t>;

SymInt concrete(const SymInt& s, const SymEnv& env) {
  return s.is_symbolic() ? SymInt(sym::evaluate(s.expr(), env)) : s;
}

// Size arguments of an extern with symbols get the values the inputs bind them to.
ops::Arg concrete_arg(ops::Arg a, const SymEnv& env) {
  if (auto* s = std::get_if<SymInt>(&a)) return concrete(*s, env);
  if (auto* l = std::get_if<SymShape>(&a))
    for (SymInt& s : *l) s = concrete(s, env);
  return a;
}

// A size a call needs: known when the plan is built (expr null), or an expression over the size
// symbols, evaluated against the call's bindings. A graph without symbols evaluates nothing.
struct Size {
  int64_t value = 0;
  ExprPtr expr;
};
Size size_of(const ExprPtr& e) {
  int64_t v = 0;
  return sym::is_const(e, &v) ? Size{v, nullptr} : Size{0, e};
}
Size size_of(const SymInt& s) { return s.is_symbolic() ? size_of(s.expr()) : Size{s.value(), nullptr}; }
std::vector<Size> sizes_of(const SymShape& v) {
  std::vector<Size> out;
  for (const SymInt& s : v) out.push_back(size_of(s));
  return out;
}
int64_t eval(const Size& s, const SymEnv& env) { return s.expr ? sym::evaluate(s.expr, env) : s.value; }

// A buffer's sizes and strides as a call evaluates them (Shape: when all are known at build time).
struct Layout {
  std::vector<Size> sizes, strides;
  std::optional<Shape> shape;
};
Layout layout_of(const Buffer& b) {
  Layout l{sizes_of(b.sizes), sizes_of(b.strides), std::nullopt};
  Shape shape;
  for (const Size& s : l.sizes) {
    if (s.expr) return l;
    shape.push_back(s.value);
  }
  l.shape = std::move(shape);
  return l;
}

// A tensor in the layout its buffer promises (inputs and extern outputs normally are; a
// contiguous copy otherwise, when the buffer is contiguous).
Tensor conform(Tensor t, const Buffer& b, const Layout& l, const SymEnv& env) {
  KILN_CHECK(t.dtype() == b.dtype && t.dim() == int64_t(b.sizes.size()), "inductor: ", b.name, " is ",
             name(t.dtype()), shape_str(t.sym_sizes()), " but the compiled graph expects ", name(b.dtype),
             shape_str(b.sizes));
  bool same = true, contiguous_expected = true;
  int64_t expect = 1;
  const TensorImpl& impl = *t.impl();
  for (size_t d = b.sizes.size(); d-- > 0;) {
    const int64_t size = impl.sizes[d], stride = eval(l.strides[d], env);
    if (size != 1 && stride != impl.strides[d]) same = false;
    if (size != 1 && stride != expect) contiguous_expected = false;
    expect *= size;
  }
  if (same || t.numel() == 0) return t;
  KILN_CHECK(contiguous_expected, "inductor: ", b.name, " has strides ", shape_str(t.strides()),
             "; the compiled graph expects ", shape_str(b.strides));
  return t.contiguous();
}

struct Step {
  int node = -1;
  int kernel = -1;                   // launches: index into kernels
  std::vector<KernelArg> args;       // launches
  ExprPtr grid;                      // launches
  std::vector<const graph::Value*> in_values;  // externs: per tensor argument, its value...
  std::vector<int> release;          // buffers dead after this step
  // What a launch evaluates per call (prepare_run): the grid, and each size argument.
  Size grid_size;
  std::vector<Size> arg_sizes;       // per entry of args (unused for buffers)
};

// Kernel groups compiled in this process, by their tile IR, so a graph compiled again (a
// recompile, another test) reuses the kernels it already has (or is compiling).
tile::cpu::PendingGroup compile_cached(std::vector<tile::Program> programs, const std::string& ir) {
  static std::mutex mu;
  static std::map<std::string, tile::cpu::PendingGroup> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(ir);
  if (it != cache.end()) return it->second;
  return cache[ir] = tile::cpu::compile_group_async(std::move(programs), "default", ir);
}

// The perf log's times: wall clock and this thread's CPU time (which a loaded machine inflates
// far less), as "12.3 ms (4.5 ms CPU)".
struct Timer {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = thread_cpu();
  static double thread_cpu() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  std::string ms() const {
    const double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f ms (%.1f ms CPU)", 1e3 * w, 1e3 * (thread_cpu() - cpu));
    return buf;
  }
};

class Plan {
 public:
  // (The in-place write-backs first: they rewrite kernels that recompute a written-back value.)
  explicit Plan(Program p) : p_(std::move(p)), in_place_(in_place_writes(p_)) {}

  // Emits the kernels and starts compiling them (in the background: a caller compiling several
  // graphs, as AOT's forward and backward, gets their compilers run at once).
  Compiled build() {
    const Timer timer;
    Compiled c;
    std::vector<tile::Program> programs;
    std::vector<GeneratedKernel> gen;
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      const Node& n = p_.nodes[i];
      Step s;
      s.node = int(i);
      if (n.kind == NodeKind::Extern) {
        for (const graph::Value* v : n.call->inputs()) s.in_values.push_back(v);
      } else {
        GeneratedKernel k = emit_tile(p_, n);
        s.kernel = int(programs.size());
        s.args = k.args;
        s.grid = k.grid;
        c.kernels.push_back(tile::print(k.program));
        programs.push_back(std::move(k.program));
      }
      steps_.push_back(std::move(s));
    }
    for (const auto& [step, bufs] : release_points(p_)) steps_[size_t(step)].release = bufs;
    if (!programs.empty()) {
      std::string ir;
      for (const std::string& k : c.kernels) ir += k;
      const size_t count = programs.size();
      pending_ = compile_cached(std::move(programs), ir);
      for (const std::string& tu : pending_.sources()) c.source += tu;
      KILN_LOG(output_code) << "inductor: " << count << " kernel(s) in " << pending_.sources().size()
                            << " translation unit(s)\n" << c.source;
    }
    KILN_LOG(perf) << "inductor: " << c.kernels.size() << " kernel(s) emitted in " << timer.ms()
                   << "; compiling in " << (pending_.valid() ? pending_.sources().size() : 0) << " translation unit(s)";
    return c;
  }

  // The run side's view of the built plan: every size known ahead of a call computed once.
  void prepare_run() {
    for (const Buffer& b : p_.buffers) layouts_.push_back(layout_of(b));
    KILN_LOG(fusion) << "inductor: " << in_place_.count << " copy_ into an input stored in place by its kernel";
    for (Step& s : steps_) {
      if (s.kernel < 0) continue;
      s.grid_size = size_of(s.grid);
      for (const KernelArg& a : s.args) s.arg_sizes.push_back(a.buffer >= 0 ? Size() : size_of(a.size));
      max_args_ = std::max(max_args_, s.args.size());
    }
    const graph::Graph& g = *p_.graph;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const auto& sizes = g.inputs()[i]->spec.sizes;
      for (size_t d = 0; d < sizes.size(); ++d)
        if (sizes[d].is_symbolic() && sizes[d].expr()->kind == sym::Kind::Symbol) binders_.push_back({i, d, sizes[d].expr()->name});
    }
  }

  // Waits for the kernels build() started (the first call; a compile error throws here).
  void await_kernels() const {
    if (!pending_.valid()) return;
    std::call_once(ready_, [&] {
      const Timer timer;
      kernels_ = pending_.kernels();
      KILN_LOG(perf) << "inductor: waited " << timer.ms() << " for the kernels' compilers";
    });
  }

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const {
    const graph::Graph& g = *p_.graph;
    KILN_CHECK(inputs.size() == g.inputs().size(), "inductor: the compiled graph takes ", g.inputs().size(),
               " inputs, got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) KILN_CHECK(inputs[i].defined(), "inductor: input ", i, " is undefined");
    SymEnv env;  // empty unless the graph has size symbols
    for (const Binder& b : binders_)
      if (b.dim < size_t(inputs[b.input].dim())) env[b.name] = inputs[b.input].size(int64_t(b.dim));
    std::vector<Tensor> bufs(p_.buffers.size());
    for (size_t b = 0; b < p_.buffers.size(); ++b) {
      const Buffer& buf = p_.buffers[b];
      if (buf.kind == BufferKind::Input) bufs[b] = conform(inputs[size_t(buf.input)], buf, layouts_[b], env);
      if (buf.kind == BufferKind::Constant) bufs[b] = buf.literal;
    }
    NoGradGuard no_grad;
    std::vector<tile::cpu::Arg> args;
    args.reserve(max_args_);
    for (const Step& s : steps_) {
      const Node& n = p_.nodes[size_t(s.node)];
      if (s.kernel >= 0) {
        int64_t numel = 0;
        for (int o : n.outputs) {
          const Buffer& out = p_.buffers[size_t(o)];
          const Layout& l = layouts_[size_t(o)];
          if (in_place_.into[size_t(o)] >= 0) {  // as copy_ would: its producer keeps what it saved
            bufs[size_t(o)] = bufs[size_t(in_place_.into[size_t(o)])];
            autograd::before_inplace_write(bufs[size_t(o)]);
          } else if (l.shape) {
            bufs[size_t(o)] = make_tensor(*l.shape, out.dtype);
          } else {
            Shape sizes;
            for (const Size& d : l.sizes) sizes.push_back(eval(d, env));
            bufs[size_t(o)] = make_tensor(sizes, out.dtype);
          }
          numel = std::max(numel, bufs[size_t(o)].numel());  // (a row group: its rows may be stored, its empty elements not)
        }
        const int64_t grid = eval(s.grid_size, env);
        if (grid > 0 && numel > 0) {
          args.clear();
          for (size_t k = 0; k < s.args.size(); ++k) {
            if (s.args[k].buffer >= 0) args.emplace_back(bufs[size_t(s.args[k].buffer)]);
            else args.emplace_back(eval(s.arg_sizes[k], env));
          }
          kernels_[size_t(s.kernel)].launch(tile::cpu::Grid(grid), std::span<const tile::cpu::Arg>(args));
        }
      } else if (in_place_.skip[size_t(s.node)] >= 0) {  // its kernel wrote the input already
        Tensor& dst = bufs[size_t(in_place_.skip[size_t(s.node)])];
        dst.impl()->storage->version++;  // (as copy_ does: saved tensors check it)
        bufs[size_t(n.outputs.at(0))] = dst;
      } else {
        auto tensor_of = [&](const graph::Value* v) -> Tensor {
          for (size_t i = 0; i < s.in_values.size(); ++i)
            if (s.in_values[i] == v) return bufs[size_t(n.inputs[i])];
          detail::fail("internal: inductor: an extern's argument has no buffer");
        };
        std::vector<ops::Arg> a;
        for (const graph::NodeArg& na : n.call->args) a.push_back(concrete_arg(graph::box_arg(na, tensor_of), env));
        std::vector<Tensor> outs = ops::call(n.call->op, std::move(a));
        KILN_CHECK(outs.size() == n.outputs.size(), "internal: inductor: ", n.call->name(), " returned ", outs.size(),
                   " tensors, the plan expects ", n.outputs.size());
        for (size_t k = 0; k < outs.size(); ++k) {
          const size_t o = size_t(n.outputs[k]);
          bufs[o] = conform(std::move(outs[k]), p_.buffers[o], layouts_[o], env);
        }
      }
      for (int b : s.release) bufs[size_t(b)] = Tensor();
    }
    std::vector<Tensor> result;
    result.reserve(p_.outputs.size());
    for (int b : p_.outputs) result.push_back(bufs[size_t(b)]);
    return result;
  }

  const Program& program() const { return p_; }

 private:
  Program p_;
  std::vector<Step> steps_;
  tile::cpu::PendingGroup pending_;
  mutable std::once_flag ready_;
  mutable std::vector<tile::cpu::Kernel> kernels_;
  // Run side (prepare_run).
  struct Binder {
    size_t input, dim;
    std::string name;
  };
  std::vector<Binder> binders_;  // where each size symbol's value comes from
  std::vector<Layout> layouts_;  // per buffer
  InPlace in_place_;             // kernels storing into inputs, the copies they replace
  size_t max_args_ = 0;
};

}  // namespace

Compiled compile_graph_verbose(std::shared_ptr<const graph::Graph> g) {
  const Timer timer;
  auto plan = std::make_shared<Plan>(lower_and_schedule(std::move(g)));
  KILN_LOG(perf) << "inductor: lowered and scheduled " << plan->program().nodes.size() << " node(s) in " << timer.ms();
  Compiled c = plan->build();
  plan->prepare_run();
  c.run = [plan](const std::vector<Tensor>& inputs) {
    plan->await_kernels();
    return (*plan)(inputs);
  };
  return c;
}

GraphFn compile_graph(std::shared_ptr<const graph::Graph> g) { return compile_graph_verbose(std::move(g)).run; }

}  // namespace kiln::inductor
