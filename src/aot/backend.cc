// The runtime of the "aot_eager" backend (registered by src/compile/backends.cc). Per
// requires-grad pattern of the inputs (decided at the first call that sees it): decompose ->
// functionalize -> joint -> partition. A call runs the forward graph under no_grad, applies the
// input writes, and hands the outputs one autograd node (CompiledFunction) whose backward runs
// the backward graph on the saved values.
#include <kiln/aot.h>
#include <kiln/autograd.h>
#include <kiln/log.h>

#include <atomic>
#include <map>
#include <mutex>

#include "aot/aot.h"
#include "autograd/engine.h"
#include "core/tensor_impl.h"
#include "runtime/timer.h"

namespace kiln::aot {
namespace {

std::atomic<double> g_budget{0.0};

using Plan = CompiledPlan;  // the partition's graphs, compiled, and the joint's signature

// The graph compiler of the options, or the interpreter.
GraphFn compile_with(const AotOptions& o, std::shared_ptr<const graph::Graph> g) {
  if (o.compile_graph) return o.compile_graph(std::move(g));
  return [g](const std::vector<Tensor>& in) { return graph::interpret(*g, in); };
}

struct CompiledFunction : autograd::Node {
  std::shared_ptr<const Plan> plan;
  std::vector<Tensor> saved;
  std::vector<uint64_t> saved_versions;  // storage versions at save time (in-place writes after it are errors)
  std::vector<TensorSpec> tangent_specs;  // concrete shapes of the outputs, for missing grads
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    KILN_CHECK(!is_grad_enabled(), "aot_eager: double backward (create_graph=True) through a compiled graph is "
                                   "not supported; compile with the \"eager\" backend");
    KILN_CHECK(!released, "aot_eager: backward through the compiled graph a second time; pass retain_graph=true");
    for (size_t i = 0; i < saved.size(); ++i)
      KILN_CHECK_HINT(saved[i].impl()->storage->version == saved_versions[i],
                      "do the in-place update after backward(), or on a clone()",
                      "one of the tensors the compiled backward needs was modified by an in-place operation "
                      "after the forward ran (saved tensor ", i, ")");
    std::vector<Tensor> in = saved;
    for (size_t i = 0; i < tangent_specs.size(); ++i) {
      const TensorSpec& s = tangent_specs[i];
      in.push_back(i < grads.size() && grads[i].defined() ? grads[i].contiguous() : zeros(s.sizes, s.dtype, s.device));
    }
    return plan->backward(in);
  }
  std::string name() const override { return "CompiledFunctionBackward"; }
  void release() override {
    saved.clear();
    released = true;
  }
  bool released = false;
};

std::string describe(const Partition& p) {
  std::ostringstream os;
  os << "partition: " << p.num_saved << " saved tensors, " << p.saved_bytes << " bytes (" << p.saved_activation_bytes
     << " not inputs); recomputed in backward: "
     << p.recomputed.size() << " nodes\nforward graph:\n" << graph::print(*p.forward) << "backward graph:\n"
     << graph::print(*p.backward);
  const auto& ins = p.backward->inputs();
  for (size_t i = 0; i < p.num_saved; ++i)
    os << "saved " << i << ": " << graph::spec_str(ins[i]->spec) << " (" << value_bytes(ins[i]) << " bytes)\n";
  return os.str();
}

class Runtime {
 public:
  Runtime(std::shared_ptr<const graph::Graph> g, AotOptions o) : options_(o), graph_(std::move(g)) {
    if (!options_.load_plan) functional();  // (its errors at compile time, unless a cache may spare the work)
  }
  GraphFn& inference() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (inference_) return inference_;
    if (options_.load_plan)
      if (auto cached = options_.load_plan(std::vector<bool>(graph_->inputs().size(), false))) return inference_ = cached->forward;
    inference_ = compile_with(options_, functional());
    if (options_.built_plan) options_.built_plan(std::vector<bool>(graph_->inputs().size(), false), Signature(), functional_.get(), nullptr);
    return inference_;
  }

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) {
    std::vector<bool> needs;
    bool any = false;
    for (const Tensor& t : inputs) needs.push_back(is_grad_enabled() && autograd::requires_grad(t)), any |= needs.back();
    if (!any) {  // inference: the functional graph writes its inputs itself
      NoGradGuard no_grad;
      return inference()(inputs);
    }
    std::shared_ptr<const Plan> plan = plan_for(needs);
    const Signature& j = plan->sig;
    std::vector<Tensor> outs;
    {
      NoGradGuard no_grad;
      outs = plan->forward(inputs);
      // A saved value sharing storage with an input the forward writes would see the write: copy it first.
      for (size_t s = j.num_outputs + j.mutated_inputs.size(); s < outs.size(); ++s)
        for (size_t m : j.mutated_inputs)
          if (outs[s].impl()->storage == inputs[m].impl()->storage) outs[s] = outs[s].clone();
      for (size_t k = 0; k < j.mutated_inputs.size(); ++k) {
        Tensor dst = inputs[j.mutated_inputs[k]];
        copy_(dst, outs[j.num_outputs + k]);
      }
    }
    auto node = std::make_shared<CompiledFunction>();
    node->plan = plan;
    const size_t first_saved = j.num_outputs + j.mutated_inputs.size();
    node->saved.assign(outs.begin() + long(first_saved), outs.end());
    for (const Tensor& t : node->saved) node->saved_versions.push_back(t.impl()->storage->version);
    for (size_t i : j.grad_inputs) node->next.push_back(autograd::gradient_edge(inputs[i]));
    node->tangent_specs.resize(j.num_tangents);
    node->num_outputs = j.num_tangents;
    node->pre_hooks.resize(node->num_outputs);
    node->seq = autograd::next_sequence_nr();
    outs.resize(j.num_outputs);
    std::vector<bool> attached(j.num_tangents, false);
    for (size_t i = 0; i < outs.size(); ++i) {
      const int t = j.output_tangent[i];
      if (t < 0 || attached[size_t(t)]) continue;
      attached[size_t(t)] = true;
      node->tangent_specs[size_t(t)] = outs[i].spec();
      auto& m = outs[i].impl()->autograd_meta();
      m.grad_fn = node;
      m.output_nr = uint32_t(t);
    }
    return outs;
  }

 private:
  std::shared_ptr<const Plan> plan_for(const std::vector<bool>& needs) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(needs);
    if (it != plans_.end()) return it->second;
    if (options_.load_plan)
      if (auto cached = options_.load_plan(needs)) return plans_[needs] = cached;
    auto plan = std::make_shared<Plan>();
    const Joint joint = build_joint(*functional(), needs);
    KILN_LOG(aot) << "joint graph (" << joint.num_primals << " primals, " << joint.num_tangents()
                  << " tangents):\n" << graph::print(*joint.graph);
    PartitionOptions po = options_.partition;
    if (options_.use_global_budget) po.activation_memory_budget = activation_memory_budget();
    const Partition part = partition(joint, po);
    KILN_LOG(aot) << describe(part);
    plan->sig = signature(joint);
    plan->forward = compile_with(options_, part.forward);
    plan->backward = compile_with(options_, part.backward);
    if (options_.built_plan) options_.built_plan(needs, plan->sig, part.forward.get(), part.backward.get());
    plans_[needs] = plan;
    return plan;
  }

  // The decomposed, functional graph (made at the first need).
  const std::shared_ptr<graph::Graph>& functional() {
    if (functional_) return functional_;
    const runtime::Timer timer;
    functional_ = std::make_shared<graph::Graph>(functionalize(decompose(*graph_)));
    KILN_LOG(perf) << "aot: decomposed and functionalized in " << timer.ms();
    return functional_;
  }

  AotOptions options_;
  std::shared_ptr<const graph::Graph> graph_;  // as captured
  std::shared_ptr<graph::Graph> functional_;
  GraphFn inference_;  // functional_, compiled at the first call without gradients
  std::mutex mutex_;
  std::map<std::vector<bool>, std::shared_ptr<const Plan>> plans_;
};

}  // namespace

void set_activation_memory_budget(double budget) {
  KILN_CHECK(budget >= 0 && budget <= 1, "activation_memory_budget must be in [0, 1], got ", budget);
  g_budget = budget;
}
double activation_memory_budget() { return g_budget; }

Signature signature(const Joint& j) {
  return Signature{.num_outputs = j.num_outputs,
                   .num_tangents = j.num_tangents(),
                   .mutated_inputs = j.mutated_inputs,
                   .grad_inputs = j.grad_inputs,
                   .output_tangent = j.output_tangent};
}

GraphFn compile_aot(std::shared_ptr<const graph::Graph> g, const AotOptions& options) {
  auto rt = std::make_shared<Runtime>(std::move(g), options);
  return [rt](const std::vector<Tensor>& inputs) { return (*rt)(inputs); };
}

}  // namespace kiln::aot
