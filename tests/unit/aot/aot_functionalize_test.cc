// functionalize: golden IR tests (tests/golden/aot/*.kir) and interpreter checks that the
// functional graph gives the original's outputs and input writes on random inputs.
#include <gtest/gtest.h>

#include "aot/aot.h"
#include "core/tensor_impl.h"
#include "graph/pass_manager.h"
#include "support/golden.h"
#include "support/test_util.h"

namespace kiln::aot {
namespace {

std::vector<Tensor> random_inputs(const graph::Graph& g) {
  std::vector<Tensor> r;
  for (const graph::Value* v : g.inputs()) {
    Shape s;
    for (const SymInt& d : v->spec.sizes) s.push_back(d.hint());
    r.push_back(test::make(test::random_values(test::numel(s)), s, v->spec.dtype));
  }
  return r;
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  test::expect_close(got, want.to_vector<double>(), 1e-6, 1e-6, what);
}

const void* storage_of(const Tensor& t) { return t.impl()->storage.get(); }

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> r;
  for (const Tensor& t : ts) r.push_back(t.clone());
  return r;
}

// Runs g and its functionalized form on copies of the same random inputs: equal outputs,
// equal inputs afterwards, and no copy_ left except into inputs at the end.
void check_same_effects(const std::string& ir) {
  graph::Graph g = graph::parse(ir);
  graph::Graph f = functionalize(g);
  graph::verify(f);
  bool tail = true;  // copy_ nodes only in the tail, writing inputs
  for (auto it = f.nodes().rbegin(); it != f.nodes().rend(); ++it) {
    const graph::Node& n = **it;
    const bool is_copy = n.kind == graph::NodeKind::Call && n.op == ops::OpId::copy_;
    if (is_copy) {
      EXPECT_TRUE(tail) << "copy_ before other nodes:\n" << graph::print(f);
      EXPECT_EQ(std::get<graph::Value*>(n.args[0])->producer, nullptr) << "copy_ into an intermediate";
    } else if (n.kind == graph::NodeKind::Constant || ops::op_info(n.op).kind != ops::OpKind::VIEW) {
      tail = false;  // only views of the written inputs (aliased outputs) follow the writes
    }
  }
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<Tensor> in = random_inputs(g);
    std::vector<Tensor> a = clones(in), b = clones(in);
    std::vector<Tensor> ra = graph::interpret(g, a), rb = graph::interpret(f, b);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) expect_same(rb[i], ra[i], "output " + std::to_string(i) + "\n" + graph::print(f));
    for (size_t i = 0; i < a.size(); ++i) expect_same(b[i], a[i], "input " + std::to_string(i) + "\n" + graph::print(f));
    // Outputs that alias an input in the original still alias it.
    for (size_t i = 0; i < ra.size(); ++i)
      for (size_t k = 0; k < a.size(); ++k) {
        if (storage_of(ra[i]) == storage_of(a[k])) {
          EXPECT_EQ(storage_of(rb[i]), storage_of(b[k])) << "output " << i << " no longer aliases input " << k;
        }
      }
  }
}

// The graphs of a pipeline's output: one, or several after "// <name>" lines (partition).
std::vector<std::string> graph_sections(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = text.rfind("graph(", 0) == 0 ? 0 : text.find("\ngraph("); at != std::string::npos;) {
    if (text[at] == '\n') ++at;
    size_t end = text.find("\n// ", at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at));
    at = end == std::string::npos ? end : text.find("\ngraph(", end);
  }
  return out;
}

// tests/golden/aot/*.kir: aot pipelines through the pass manager (functionalize, decompose,
// joint, partition; support/golden.h). Each expected graph round-trips through the parser; the
// functionalize goldens' inputs also run through the interpreter against their functional form.
TEST(AotFunctionalize, Golden) {
  const auto goldens = test::check_goldens("aot", graph::run_pipeline);
  EXPECT_GE(goldens.size(), 9u);
  for (const test::Golden& g : goldens) {
    SCOPED_TRACE(g.path.filename().string());
    const graph::PrintOptions options{.origins = g.pipeline.rfind("--origins", 0) == 0};
    const std::vector<std::string> sections = graph_sections(g.expected);
    EXPECT_EQ(sections.size(), g.pipeline.find("partition") != std::string::npos ? 2u : 1u);
    for (const std::string& text : sections) EXPECT_EQ(graph::print(graph::parse(text), options), text);
    if (g.pipeline == "functionalize") check_same_effects(g.input);
  }
}

TEST(AotFunctionalize, WritesIntoInputViews) {
  // A write through a slice of an input, then a read of the whole input.
  check_same_effects(R"(graph(%x: f32[4, 3], %y: f32[2, 3]):
  %0: f32[2, 3] = slice(%x, 0, 1, 3, 1)
  %1: f32[2, 3] = mul(%0, %y)
  %2: f32[2, 3] = copy_(%0, %1)
  %3: f32[4, 3] = exp(%x)
  return (%3, %2)
)");
}

TEST(AotFunctionalize, RepeatedWritesAndStaleViews) {
  // Two views of one buffer; writing one changes what the other reads.
  check_same_effects(R"(graph(%x: f32[6]):
  %0: f32[6] = sin(%x)
  %1: f32[3] = slice(%0, 0, 0, 6, 2)
  %2: f32[3] = slice(%0, 0, 1, 6, 2)
  %3: f32[3] = copy_(%1, %2)
  %4: f32[3] = exp(%1)
  %5: f32[3] = copy_(%2, %4)
  %6: f32[6] = mul(%0, %0)
  return (%6, %1, %2)
)");
}

TEST(AotFunctionalize, DtypeAndBroadcastInCopy) {
  check_same_effects(R"(graph(%x: f64[2, 3], %y: f32[3]):
  %0: f64[2, 3] = copy_(%x, %y)
  %1: f64[3, 2] = permute(%x, [1, 0])
  return (%1)
)");
}

TEST(AotFunctionalize, TransposedInputWrittenByView) {
  check_same_effects(R"(graph(%x: f32[3, 4]):
  %0: f32[4, 3] = permute(%x, [1, 0])
  %1: f32[12] = reshape(%0, [12])
  %2: f32[4, 3] = neg(%0)
  %3: f32[4, 3] = copy_(%0, %2)
  return (%1)
)");
}

}  // namespace
}  // namespace kiln::aot
