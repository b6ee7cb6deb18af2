// The verifier: SSA form, op schemas, output specs that match what each op's meta computes, and
// the graph's own bookkeeping (users lists, order index). Linear in the graph's size.
#include <unordered_set>

#include "graph/graph.h"
#include "graph/schema.h"

namespace kiln::graph {

// Reads the bookkeeping the graph keeps private (a friend of Value and Node).
struct UseCheck {
  // Whether n's use number k (of value v) is in v's users list where n says it is.
  static bool recorded(const Node& n, size_t k, const Value* v) {
    if (k >= n.use_slot_.size()) return false;
    const uint32_t i = n.use_slot_[k];
    return i < v->users.size() && i < v->user_use_.size() && v->users[i] == &n && v->user_use_[i] == k;
  }
  static size_t num_uses(const Node& n) { return n.use_slot_.size(); }
};

namespace {

std::string value_str(const Value* v) { return v->name.empty() ? "value #" + std::to_string(v->id) : "%" + v->name; }

class Verifier {
 public:
  explicit Verifier(const Graph& g) : g_(g) {}

  void run() {
    defined_.reserve(g_.inputs().size() + 2 * g_.nodes().size());  // most nodes have one output
    for (const Value* v : g_.inputs()) {
      if (!defined_.insert(v).second) detail::fail("graph verify: input " + value_str(v) + " is listed twice");
      if (v->producer) detail::fail("graph verify: input " + value_str(v) + " also has a producer");
    }
    size_t i = 0;
    const Node* prev = nullptr;
    for (const Node* n : g_.nodes()) {
      if (prev && !prev->before(*n)) fail(i, *n, "its order index is not after its predecessor's");
      node(i++, *n);
      prev = n;
    }
    if (i != g_.nodes().size()) detail::fail(detail::cat("graph verify: the graph counts ", g_.nodes().size(), " nodes, its list holds ", i));
    for (const Value* v : g_.outputs()) {
      if (!v || !defined_.count(v)) detail::fail("graph verify: a graph output is not a value of the graph");
      if (!g_.is_output(v)) detail::fail("graph verify: output " + value_str(v) + " is not marked as an output");
    }
  }

 private:
  [[noreturn]] void fail(size_t i, const Node& n, const std::string& m) const {
    detail::fail(detail::cat("graph verify: node ", i, " (", n.name(), "): ", m));
  }

  void node(size_t i, const Node& n) {
    if (n.kind == NodeKind::Constant) {
      if (!n.literal.defined() || n.literal.is_fake()) fail(i, n, "a constant needs a tensor with data");
      if (n.outputs.size() != 1) fail(i, n, "a constant has exactly one output");
      if (!same_spec(n.literal.spec(), n.outputs[0]->spec))
        fail(i, n, "output type " + spec_str(n.outputs[0]->spec) + " differs from the literal's " + spec_str(n.literal.spec()));
    } else {
      call(i, n);
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value* o = n.outputs[k];
      if (o->producer != &n || o->output_index != int(k)) fail(i, n, "output " + value_str(o) + " names another producer");
      if (!defined_.insert(o).second) fail(i, n, "output " + value_str(o) + " is defined twice");
    }
  }

  void call(size_t i, const Node& n) {
    if (int(n.op) >= ops::kNumOps) fail(i, n, "unknown op id");
    const Schema& sc = schema_of(n.op);
    if (n.args.size() != sc.args.size())
      fail(i, n, detail::cat("takes ", sc.args.size(), " arguments, got ", n.args.size()));
    for (size_t k = 0; k < sc.args.size(); ++k) {
      if (!arg_matches(sc.args[k], n.args[k]))
        fail(i, n, detail::cat("argument ", sc.args[k].name, " should be ", sc.args[k].type_text, ", got ", arg_kind_name(n.args[k])));
    }
    size_t k = 0;
    each_input(n, [&](const Value* v) {
      if (!defined_.count(v)) fail(i, n, "uses " + value_str(v) + " before its definition");
      // Passes edit through the users lists; a stale one would mislead DCE and replace_all_uses.
      if (!UseCheck::recorded(n, k++, v)) fail(i, n, "is missing from the users of " + value_str(v));
    });
    if (k != UseCheck::num_uses(n)) fail(i, n, "its arguments changed without Graph::set_args (stale users lists)");
    if (sc.num_returns >= 0 && int(n.outputs.size()) != sc.num_returns)
      fail(i, n, detail::cat("has ", n.outputs.size(), " outputs; the op returns ", sc.num_returns));
    std::vector<TensorSpec> want;
    try {
      want = infer_specs(n.op, n.args);
    } catch (const Error& e) {
      fail(i, n, std::string("the op rejects its arguments: ") + e.what());
    }
    if (want.size() != n.outputs.size())
      fail(i, n, detail::cat("has ", n.outputs.size(), " outputs; the op computes ", want.size()));
    for (size_t k = 0; k < want.size(); ++k)
      if (!same_spec(want[k], n.outputs[k]->spec))
        fail(i, n, detail::cat("output ", k, " has type ", spec_str(n.outputs[k]->spec), " but the op computes ", spec_str(want[k])));
  }

  const Graph& g_;
  std::unordered_set<const Value*> defined_;
};

}  // namespace

void verify(const Graph& g) { Verifier(g).run(); }

}  // namespace kiln::graph
