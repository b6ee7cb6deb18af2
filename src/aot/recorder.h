// Records the prims that running ops on fake tensors calls: composites run their
// decompositions (so only prims reach the graph), prims become nodes. Random creation
// composites (rand_like, randn...) are recorded whole, so each run of the graph draws afresh. Shared by decompose and
// the joint graph's tracing of derivative formulas.
#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include <kiln/autocast.h>

#include "graph/graph.h"

namespace kiln::aot {

class Recorder : public ops::DispatchMode {
 public:
  explicit Recorder(graph::Graph& g) : g_(g) {}
  // A fake tensor standing for v.
  Tensor bind(graph::Value* v);
  graph::Value* value_of(const Tensor& t);
  // Runs op on the fake arguments (tensors must come from bind() or earlier calls).
  std::vector<Tensor> call(ops::OpId op, std::vector<ops::Arg> args);
  std::optional<std::vector<Tensor>> intercept(const ops::Args& a) override;
  // Called for every recorded prim with its arguments and fake outputs.
  std::function<void(const ops::Args&, const std::vector<Tensor>&)> on_prim;
  // Composites recorded whole instead of decomposed (unset: none).
  std::function<bool(ops::OpId)> keep;
  // A tensor detach()ed by a decomposition becomes a stop_gradient node (decompose for the joint
  // graph, which gives it no derivative); otherwise it stands for the value it was detached from.
  bool mark_stop_gradients = false;

 private:
  graph::Graph& g_;
  std::unordered_map<const TensorImpl*, graph::Value*> values_;
  std::vector<Tensor> keep_;  // every fake made, so no TensorImpl address is reused
};

// Installs a recorder as the dispatch mode, with grad mode and autocast off.
class RecordScope {
 public:
  explicit RecordScope(Recorder& r);
  ~RecordScope();
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  ops::DispatchMode* prev_;
  bool grad_;
  AutocastGuard no_autocast_{kBFloat16, false};
};

// The custom op a recorder with mark_stop_gradients writes for a detach(): the identity (run,
// it returns its input detached), no gradient. Registered at the first call; returns its name.
const std::string& stop_gradient_op();
// Whether n is such a node.
bool is_stop_gradient(const graph::Node& n);

// The node arguments for boxed op arguments, tensors mapped by value_of.
std::vector<graph::NodeArg> node_args(const std::vector<ops::Arg>& args,
                                      const std::function<graph::Value*(const Tensor&)>& value_of);

}  // namespace kiln::aot
