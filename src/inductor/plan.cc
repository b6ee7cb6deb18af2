// The executable plan: the scheduled loop IR as a flat list of steps (a kernel launch or an
// extern call), each with its arguments resolved to buffer slots and size expressions ahead of
// time. A call binds the size symbols from the inputs, allocates each buffer when its producer
// runs, and drops it after its last reader (memory_plan.cc), so peak memory follows the live set.
#include <kiln/grad_mode.h>
#include <kiln/log.h>
#include <kiln/ops.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "autograd/engine.h"
#include "core/tensor_impl.h"
#include "inductor/autotune.h"
#include "inductor/emit_tile.h"
#include "inductor/index_error.h"
#include "inductor/inductor.h"
#include "inductor/memory_plan.h"
#include "inductor/plan_cache.h"
#include "runtime/cache.h"
#include "runtime/timer.h"
#include "tile/cpu/kernel.h"

namespace kiln::inductor {

// What the plan cache keeps of the loop IR's structs (plan_cache.h): every field, one line each.
template <class A>
void fields(A& a, Buffer& b) { a(b.name, b.kind, b.dtype, b.sizes, b.strides, b.offset, b.input, b.literal, b.producer); }
template <class A>
void fields(A& a, KernelArg& k) { a(k.buffer, k.size); }
template <class A>
void fields(A& a, InPlace& p) { a(p.into, p.skip, p.count); }

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
  std::vector<int> release;          // buffers dead after this step
  // Run side (prepare_run): an extern's tensor arguments (its value per Node::inputs entry...);
  // what a launch evaluates per call: the grid, and each size argument.
  std::vector<const graph::Value*> in_values;
  bool transposed = false;           // a matmul stored transposed: computed as (y^T x^T)^T
  Size grid_size;
  std::vector<Size> arg_sizes;       // per entry of args (unused for buffers)
};
template <class A>
void fields(A& a, Step& s) { a(s.node, s.kernel, s.args, s.grid, s.release); }

// A node as the run side sees it: the plan cache keeps these fields of the loop IR's Node (the
// bodies and ranges are the build side's) and the extern's graph node by its position.
struct RunNode {
  NodeKind kind = NodeKind::Pointwise;
  std::string name, extern_op;
  std::vector<int> outputs, inputs;
  int64_t call = -1;  // index in the graph's node list
};
template <class A>
void fields(A& a, RunNode& n) { a(n.kind, n.name, n.extern_op, n.outputs, n.inputs, n.call); }

// A built plan as the cache stores it: the graph as text (externs run its nodes), the buffers,
// nodes, outputs and steps, and the kernel group (no IR text: it is most of a plan's bytes and
// no call reads it).
struct PlanImage {
  std::string graph;
  std::vector<Buffer> buffers;
  std::vector<RunNode> nodes;
  std::vector<int> outputs;
  std::vector<Step> steps;
  InPlace in_place;
  std::optional<tile::cpu::GroupImage> group;
};
template <class A>
void fields(A& a, PlanImage& p) { a(p.graph, p.buffers, p.nodes, p.outputs, p.steps, p.in_place, p.group); }

// Kernel groups compiled in this process, by their tile IR, so a graph compiled again (a
// recompile, another test) reuses the kernels it already has (or is compiling); `start` starts
// one that is not there.
tile::cpu::PendingGroup compile_cached(const std::string& ir, const std::function<tile::cpu::PendingGroup()>& start) {
  static std::mutex mu;
  static std::map<std::string, tile::cpu::PendingGroup> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(ir);
  if (it != cache.end()) return it->second;
  return cache[ir] = start();
}

using runtime::Timer;  // the perf log's times

// The perf log's breakdown of one call: time per extern (by op and argument shapes) and per
// kernel, summed over the steps that share the key, the largest first. Beside the calling
// thread's CPU time, the process's (all threads): a step whose process time is about its
// calling thread's ran on one core while the others waited, which on idle cores is wall time
// lost (the "one thread" total), however loaded the machine is.
class StepTimes {
 public:
  static constexpr size_t kShown = 40;  // lines after the total
  void start() { step_ = Timer(), process_ = process_cpu(); }
  void stop(const Step& s, const Node& n, const std::vector<Tensor>& bufs);
  void print() const {
    double total = 0, externs = 0, cpu = 0, extern_cpu = 0, all = 0, alone = 0;
    int launches = 0;
    for (const auto& [key, e] : by_key_) {
      total += e.ms, cpu += e.cpu_ms, all += e.all_ms, alone += e.alone_ms;
      if (e.is_extern) externs += e.ms, extern_cpu += e.cpu_ms;
      else launches += e.count;
    }
    std::vector<std::pair<std::string, Entry>> order(by_key_.begin(), by_key_.end());
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "inductor: call %.1f ms (%.1f ms CPU of this thread, %.1f ms of all threads; %.1f ms CPU in steps "
                  "that ran on one thread): externs %.1f ms (%.1f ms CPU), %d kernel launches %.1f ms (%.1f ms CPU)",
                  total, cpu, all, alone, externs, extern_cpu, launches, total - externs, cpu - extern_cpu);
    std::string text = buf;
    for (size_t i = 0; i < order.size() && i < kShown; ++i) {
      const Entry& e = order[i].second;
      std::snprintf(buf, sizeof buf, "\n  %8.2f ms (%8.2f CPU, %8.2f all threads) %4d x ", e.ms, e.cpu_ms, e.all_ms, e.count);
      text += buf;
      text += order[i].first;
    }
    if (order.size() > kShown) {
      double rest = 0;
      for (size_t i = kShown; i < order.size(); ++i) rest += order[i].second.ms;
      std::snprintf(buf, sizeof buf, "\n  %8.2f ms in %zu more", rest, order.size() - kShown);
      text += buf;
    }
    KILN_LOG(perf) << text;
  }

 private:
  static double process_cpu() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  struct Entry {
    double ms = 0, cpu_ms = 0, all_ms = 0, alone_ms = 0;
    int count = 0;
    bool is_extern = false;
  };
  Timer step_;
  double process_ = 0;
  std::map<std::string, Entry> by_key_;
};

void StepTimes::stop(const Step& s, const Node& n, const std::vector<Tensor>& bufs) {
  std::string key = n.name;
  if (s.kernel < 0 && n.call) {
    key = std::string("extern ") + n.call->name();
    for (int b : n.inputs) {
      key += ' ';
      const Tensor& t = bufs[size_t(b)];
      if (!t.defined()) {
        key += '?';
        continue;
      }
      key += shape_str(t.sizes());
      if (!t.is_contiguous()) key.append(1, 's').append(shape_str(t.strides()));
    }
  }
  Entry& e = by_key_[key];
  const double cpu = step_.cpu_ms(), all = 1e3 * (process_cpu() - process_);
  e.ms += step_.wall_ms(), e.cpu_ms += cpu, e.all_ms += all, e.count += 1, e.is_extern = s.kernel < 0;
  if (all < 1.1 * cpu) e.alone_ms += cpu;  // (the other threads did under a tenth of this thread's work)
}

class Plan {
 public:
  // (The in-place write-backs first: they rewrite kernels that recompute a written-back value.)
  explicit Plan(Program p) : p_(std::move(p)), in_place_(in_place_writes(p_)) {}
  // A loaded plan (load()): its write-backs as the built one decided them.
  Plan(Program p, InPlace in_place) : p_(std::move(p)), in_place_(std::move(in_place)) {}

  // Emits the kernels and starts compiling them (in the background: a caller compiling several
  // graphs, as AOT's forward and backward, gets their compilers run at once).
  Compiled build(const Options& options) {
    const Timer timer;
    Compiled c;
    std::vector<tile::Program> programs;
    std::vector<GeneratedKernel> gen;
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      const Node& n = p_.nodes[i];
      Step s;
      s.node = int(i);
      // max-autotune: tuned block sizes; a matmul extern becomes a generated kernel that beat BLAS.
      std::optional<GeneratedKernel> k;
      if (n.kind != NodeKind::Extern) k = emit_tile(p_, n, options.max_autotune ? tune_blocks(p_, n) : BlockSizes());
      else if (options.max_autotune) k = tune_matmul(p_, n);
      if (k) {
        s.kernel = int(programs.size());
        s.args = k->args;
        s.grid = k->grid;
        c.kernels.push_back(tile::print(k->program));
        programs.push_back(std::move(k->program));
      }
      steps_.push_back(std::move(s));
    }
    for (const auto& [step, bufs] : release_points(p_)) steps_[size_t(step)].release = bufs;
    const std::string programs_ms = timer.ms();  // the tile programs; then the passes and C (or the group's entry)
    if (!programs.empty()) {
      std::string ir;
      for (const std::string& k : c.kernels) ir += k;
      const size_t count = programs.size();
      pending_ = compile_cached(ir, [&] { return tile::cpu::compile_group_async(std::move(programs), "default", ir); });
      for (const std::string& tu : pending_.sources()) c.source += tu;
      KILN_LOG(output_code) << "inductor: " << count << " kernel(s) in " << pending_.sources().size()
                            << " translation unit(s)\n" << c.source;
    }
    KILN_LOG(perf) << "inductor: " << c.kernels.size() << " kernel(s) emitted in " << timer.ms() << " (tile programs "
                   << programs_ms << "); compiling in " << (pending_.valid() ? pending_.sources().size() : 0) << " translation unit(s)";
    return c;
  }

  // The built plan as the cache keeps it (after build()).
  PlanImage image() const {
    PlanImage im;
    im.graph = graph::print(*p_.graph);
    im.buffers = p_.buffers;
    std::map<const graph::Node*, int64_t> position;
    for (const graph::Node* n : p_.graph->nodes()) position.emplace(n, int64_t(position.size()));
    for (const Node& n : p_.nodes)
      im.nodes.push_back({n.kind, n.name, n.extern_op, n.outputs, n.inputs, n.call ? position.at(n.call) : -1});
    im.outputs = p_.outputs;
    im.steps = steps_;
    im.in_place = in_place_;
    if (pending_.valid()) im.group = pending_.image();
    return im;
  }

  // A plan from its image (the graph parsed, the kernels' objects loaded from the disk cache or
  // compiled again), as build() leaves it; `key`: its entry's, which names its kernel group.
  static std::shared_ptr<Plan> load(PlanImage im, const std::string& key) {
    Program p;
    const Timer timer;
    p.graph = std::make_shared<const graph::Graph>(graph::parse(im.graph));
    KILN_LOG(perf) << "inductor: parsed the plan's graph in " << timer.ms();
    std::vector<const graph::Node*> nodes;
    for (const graph::Node* n : p.graph->nodes()) nodes.push_back(n);
    p.buffers = std::move(im.buffers);
    for (RunNode& rn : im.nodes) {
      KILN_CHECK(rn.call >= -1 && rn.call < int64_t(nodes.size()), "inductor plan: node ", rn.name, " runs graph node ",
                 rn.call, " of ", nodes.size());
      Node& n = p.nodes.emplace_back();
      n.kind = rn.kind, n.name = std::move(rn.name), n.extern_op = std::move(rn.extern_op);
      n.outputs = std::move(rn.outputs), n.inputs = std::move(rn.inputs);
      n.call = rn.call >= 0 ? nodes[size_t(rn.call)] : nullptr;
      KILN_CHECK(n.kind != NodeKind::Extern || n.call, "inductor plan: extern ", n.name, " without its graph node");
    }
    p.outputs = std::move(im.outputs);
    auto plan = std::make_shared<Plan>(std::move(p), std::move(im.in_place));
    plan->steps_ = std::move(im.steps);
    if (im.group)
      plan->pending_ = compile_cached("plan " + key, [&] { return tile::cpu::load_group(std::move(*im.group)); });
    plan->check();
    return plan;
  }

  // The run side's view of the built plan: every size known ahead of a call computed once.
  void prepare_run() {
    for (const Buffer& b : p_.buffers) layouts_.push_back(layout_of(b));
    KILN_LOG(fusion) << "inductor: " << in_place_.count << " copy_ into an input stored in place by its kernel";
    for (Step& s : steps_) {
      const Node& n = p_.nodes[size_t(s.node)];
      if (n.kind == NodeKind::Extern) {
        for (const graph::Value* v : n.call->inputs()) s.in_values.push_back(v);
        s.transposed = stored_transposed(n);
      }
      if (s.kernel < 0) continue;
      s.grid_size = size_of(s.grid);
      for (const KernelArg& a : s.args) s.arg_sizes.push_back(a.size ? size_of(a.size) : Size());
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
    Tensor error_record;  // the index range checks' (index_error.h), at the first kernel with checks
    std::optional<StepTimes> times;  // KILN_LOGS=perf: where the call's time goes
    if (log_enabled(LogComponent::perf)) times.emplace();
    for (const Step& s : steps_) {
      const Node& n = p_.nodes[size_t(s.node)];
      if (times) times->start();
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
            if (s.args[k].buffer >= 0) {
              args.emplace_back(bufs[size_t(s.args[k].buffer)]);
            } else if (s.args[k].buffer == kIndexErrorArg) {  // (index_error.h)
              if (!error_record.defined()) error_record = new_index_error_record();
              args.emplace_back(error_record);
            } else {
              args.emplace_back(eval(s.arg_sizes[k], env));
            }
          }
          kernels_[size_t(s.kernel)].launch(tile::cpu::Grid(grid), std::span<const tile::cpu::Arg>(args));
          if (error_record.defined()) check_index_error(error_record);
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
        std::vector<Tensor> outs = s.transposed ? transposed_product(a) : ops::call(n.call->op, std::move(a));
        KILN_CHECK(outs.size() == n.outputs.size(), "internal: inductor: ", n.call->name(), " returned ", outs.size(),
                   " tensors, the plan expects ", n.outputs.size());
        for (size_t k = 0; k < outs.size(); ++k) {
          const size_t o = size_t(n.outputs[k]);
          bufs[o] = conform(std::move(outs[k]), p_.buffers[o], layouts_[o], env);
        }
      }
      if (times) times->stop(s, n, bufs);
      for (int b : s.release) bufs[size_t(b)] = Tensor();
    }
    if (times) times->print();
    std::vector<Tensor> result;
    result.reserve(p_.outputs.size());
    for (int b : p_.outputs) result.push_back(bufs[size_t(b)]);
    return result;
  }

  const Program& program() const { return p_; }

 private:
  // An extern matmul whose buffer the lowering laid out transposed (lower/fallback.cc: its
  // readers read it through transposes), so its strides are not those of its graph value.
  bool stored_transposed(const Node& n) const {
    if (n.call->op != ops::OpId::matmul || n.outputs.size() != 1) return false;
    const Buffer& b = p_.buffers[size_t(n.outputs[0])];
    const SymShape& spec = n.call->outputs.at(0)->spec.strides;
    for (size_t d = 0; d < b.strides.size(); ++d)
      if (!sym::statically_known_equal(b.sizes[d], SymInt(1)) && !sym::statically_known_equal(b.strides[d], spec[d])) return true;
    return false;
  }
  // matmul(x, y) as (y^T x^T)^T: the product in the transposed layout its buffer has.
  static std::vector<Tensor> transposed_product(const std::vector<ops::Arg>& a) {
    auto mT = [](const Tensor& t) {
      std::vector<int64_t> perm(size_t(t.dim()));
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = int64_t(d);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      return ops::call(ops::OpId::permute, {t, perm}).at(0);
    };
    const Tensor &x = std::get<Tensor>(a.at(0)), &y = std::get<Tensor>(a.at(1));
    return {mT(ops::call(ops::OpId::matmul, {mT(y), mT(x)}).at(0))};
  }
  // A loaded plan's indices in range (an entry that checks out but is not this build's plan).
  void check() const {
    const auto buffer_ok = [&](int b) { return b >= 0 && size_t(b) < p_.buffers.size(); };
    const size_t kernels = pending_.valid() ? pending_.image().kernels.size() : 0;
    const auto none_or_buffer = [&](int b) { return b == -1 || buffer_ok(b); };
    bool ok = std::all_of(p_.outputs.begin(), p_.outputs.end(), buffer_ok) && in_place_.into.size() == p_.buffers.size() &&
              in_place_.skip.size() == p_.nodes.size() &&
              std::all_of(in_place_.into.begin(), in_place_.into.end(), none_or_buffer) &&
              std::all_of(in_place_.skip.begin(), in_place_.skip.end(), none_or_buffer);
    for (const Buffer& b : p_.buffers) ok = ok && (b.kind != BufferKind::Input || (b.input >= 0 && size_t(b.input) < p_.graph->inputs().size()));
    for (const Node& n : p_.nodes) {
      ok = ok && std::all_of(n.outputs.begin(), n.outputs.end(), buffer_ok) && std::all_of(n.inputs.begin(), n.inputs.end(), buffer_ok);
      if (n.call) ok = ok && n.inputs.size() == n.call->inputs().size();
    }
    for (const Step& s : steps_) {
      ok = ok && s.node >= 0 && size_t(s.node) < p_.nodes.size() && s.kernel < int(kernels) &&
           std::all_of(s.release.begin(), s.release.end(), buffer_ok);
      if (ok && s.kernel >= 0) {
        ok = s.grid && s.args.size() == pending_.image().kernels[size_t(s.kernel)].params.size();
        for (const KernelArg& a : s.args)
          ok = ok && (a.buffer >= 0 ? buffer_ok(a.buffer) : a.buffer == kIndexErrorArg || bool(a.size));
      } else if (ok) {
        ok = p_.nodes[size_t(s.node)].kind == NodeKind::Extern;
      }
    }
    KILN_CHECK(ok, "inductor plan: an index out of range");
  }

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

// The plan cache's key of a graph: what the plan depends on. The graph's text (ops, args,
// constants, the inputs' dtypes, sizes, strides and symbols) and the symbols' hints (block
// sizes follow them), the ops its index errors name, this build of kiln (its lowering and fusion) and what keys the kernels'
// objects (compiler, flags, CPU, version) with the compile jobs (the group's split).
std::string plan_key(const graph::Graph& g, const Options& options) {
  std::string hints;
  for (const graph::Value* v : g.inputs())
    for (const SymInt& s : v->spec.sizes)
      if (s.is_symbolic()) hints += sym::str(s.expr()) + "=" + std::to_string(s.hint()) + " ";
  return runtime::cache::hash({plan_cache::kFormat, graph::print(g), hints, index_error_ops(g), options.max_autotune ? "max-autotune" : "default", runtime::cache::build_id(),
                               tile::cpu::cache_key("inductor plan"), std::to_string(tile::cpu::compile_jobs())});
}

namespace {

constexpr const char* kPlanNamespace = "inductor-plan";

// The plan the cache holds under `key`, loaded (its kernels loading); false on a miss.
bool load_plan(const std::string& key, std::shared_ptr<Plan>& plan) {
  const Timer timer;
  PlanImage image;
  std::string parts;  // the perf log's breakdown
  const bool hit = plan_cache::load(kPlanNamespace, key + ".plan", [&](plan_cache::Reader& r) {
    parts = "read " + timer.ms();
    const Timer fields;
    r(image);
    parts += ", decoded " + fields.ms();
    const Timer rebuild;
    plan = Plan::load(std::move(image), key);
    parts += ", rebuilt " + rebuild.ms();
  });
  if (hit) {
    KILN_LOG(perf) << "inductor: plan loaded from the cache in " << timer.ms() << ": " << parts;
  }
  return hit;
}

Compiled finish(std::shared_ptr<Plan> plan, Compiled c) {
  plan->prepare_run();
  c.run = [plan](const std::vector<Tensor>& inputs) {
    plan->await_kernels();
    return (*plan)(inputs);
  };
  return c;
}

// cached: through the plan cache (compile_graph_verbose builds, to show what it generates).
Compiled compile_keyed(std::shared_ptr<const graph::Graph> g, std::string* plan_key, const Options& options, bool cached = true) {
  const std::string key = cached && runtime::cache::enabled() ? inductor::plan_key(*g, options) : std::string();
  if (plan_key) *plan_key = key;
  Compiled c;
  std::shared_ptr<Plan> plan;
  if (!key.empty() && load_plan(key, plan)) return finish(std::move(plan), std::move(c));
  const Timer timer;
  plan = std::make_shared<Plan>(lower_and_schedule(std::move(g)));
  KILN_LOG(perf) << "inductor: lowered and scheduled " << plan->program().nodes.size() << " node(s) in " << timer.ms();
  c = plan->build(options);
  if (!key.empty()) plan_cache::store(kPlanNamespace, key + ".plan", [&](plan_cache::Writer& w) { w(plan->image()); });
  return finish(std::move(plan), std::move(c));
}

}  // namespace

Compiled compile_graph_verbose(std::shared_ptr<const graph::Graph> g, const Options& options) {
  return compile_keyed(std::move(g), nullptr, options, false);
}

GraphFn compile_graph(std::shared_ptr<const graph::Graph> g, const Options& options) { return compile_keyed(std::move(g), nullptr, options).run; }

GraphFn compile_graph_keyed(std::shared_ptr<const graph::Graph> g, std::string* plan_key, const Options& options) {
  return compile_keyed(std::move(g), plan_key, options).run;
}

GraphFn load_graph(const std::string& plan_key) {
  std::shared_ptr<Plan> plan;
  if (plan_key.empty() || !load_plan(plan_key, plan)) return {};
  return finish(std::move(plan), Compiled()).run;
}

}  // namespace kiln::inductor
