// The graph fuzzer's tests (tests/fuzz/README.md): random prim graphs through every registered
// backend against eager, the reducer on a planted bug, and the pieces it relies on.
//
//   KILN_FUZZ_ITERS=N      graphs per run (default 5000: seeds KILN_FUZZ_SEED .. +N)
//   KILN_FUZZ_SEED=S       the first seed (default 0)
//   KILN_FUZZ_BACKENDS=a,b the backends to test (default: every registered one but "eager")
//   KILN_FUZZ_OUT=DIR      where reduced failures are written (default: the temp dir)
//   KILN_FUZZ_SECONDS=T    stop after T seconds even if fewer graphs ran (default 100: a slow
//                          backend must not stall CI; the seeds run are always a prefix)
//   KILN_FUZZ_BATCH=B      graphs whose kernels compile in one batch (default 64, batch.h; 0: each
//                          graph's alone, as a user's compile)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <kiln/compile.h>
#include <kiln/ops.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "fuzz/batch.h"
#include "fuzz/differential.h"
#include "fuzz/program.h"
#include "fuzz/reduce.h"
#include "graph/pass_manager.h"
#include "inductor/inductor.h"
#include "tile/cpu/cc.h"

namespace kiln::fuzz {
namespace {

[[maybe_unused]] const bool verify_passes = (graph::set_verify_passes(true), true);

uint64_t env_int(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::stoull(v) : fallback;
}

std::vector<std::string> backends_under_test() {
  std::vector<std::string> out;
  if (const char* v = std::getenv("KILN_FUZZ_BACKENDS"); v && *v) {
    std::stringstream s(v);
    for (std::string b; std::getline(s, b, ',');) out.push_back(b);
    return out;
  }
  for (const std::string& b : list_backends())
    if (b != "eager") out.push_back(b);  // eager is the reference
  return out;
}

std::filesystem::path out_dir() {
  const char* v = std::getenv("KILN_FUZZ_OUT");
  return v && *v ? std::filesystem::path(v) : std::filesystem::temp_directory_path();
}

// "12.3 s (CPU: 4.5 s here, 15.6 s in compilers)": a wall time and where the machine's time went.
std::string cpu_times(std::chrono::steady_clock::duration wall) {
  auto seconds = [](const rusage& u) {
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  };
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.1f s (CPU: %.1f s in the process, %.1f s in compilers)",
                std::chrono::duration<double>(wall).count(), seconds(self), seconds(children));
  return buf;
}

size_t count_nodes(const Program& p) { return build(p).graph.nodes().size(); }

// What the generated graphs exercise, so a generator that stops producing a feature fails.
struct Coverage {
  std::set<std::string> ops;
  int graphs = 0, dynamic = 0, strided_inputs = 0, empty = 0, size_one = 0, nodes = 0;
  std::set<DType> dtypes;
  void add(const Program& p, const graph::Graph& g) {
    ++graphs;
    dynamic += !p.symbols.empty();
    nodes += int(g.nodes().size());
    bool has_empty = false, has_one = false;
    for (const graph::Value* v : g.inputs()) {
      dtypes.insert(v->spec.dtype);
      strided_inputs += !graph::is_contiguous_spec(v->spec);
      for (const SymInt& s : v->spec.sizes)
        if (!s.is_symbolic()) has_empty |= s.value() == 0, has_one |= s.value() == 1;
    }
    empty += has_empty, size_one += has_one;
    for (const graph::Node* n : g.nodes()) ops.insert(n->name());
  }
};

// Which optimization level a batch's kernels compile at (batch.h), in turn: mostly -O1 and -O0,
// the cheap levels (the fuzzer tests what the code computes), and every fourth batch at the
// backend's own -O3, so vectorized code is fuzzed too.
const char* const kBatchLevels[] = {"-O1", "-O0", "-O1", "-O3"};

// One generated graph and what each backend under test made of it.
struct Case {
  uint64_t seed;
  Program program;
  std::shared_ptr<const graph::Graph> graph;
  std::vector<SymEnv> calls;
  std::vector<ErrorBound> allowed;
  std::vector<Outcome> outcomes;  // per backend, up to the first ReferenceError
};

TEST(Fuzz, BackendsMatchEager) {
  const uint64_t first = env_int("KILN_FUZZ_SEED", 0), iters = env_int("KILN_FUZZ_ITERS", 5000);
  const uint64_t batch_size = env_int("KILN_FUZZ_BATCH", 64);
  const std::vector<std::string> names = backends_under_test();
  ASSERT_FALSE(names.empty()) << "no backend to test besides eager";
  std::vector<Backend> backends;
  for (const std::string& n : names) backends.push_back(backend_named(n));
  Coverage cov;
  int skipped = 0, failures = 0;
  std::string first_skip;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(env_int("KILN_FUZZ_SECONDS", 100));
  std::optional<KernelBatch> batch;  // KILN_FUZZ_BATCH=0: each graph's kernels compile alone, as a user's do
  if (batch_size > 0) batch.emplace();
  const auto start = std::chrono::steady_clock::now();
  auto run_checks = [&](Case& c) {
    for (const Backend& backend : backends) {
      c.outcomes.push_back(check(compile_with(backend, c.graph), *c.graph, c.seed, c.calls, c.allowed));
      if (c.outcomes.back().kind == Outcome::ReferenceError) break;
    }
  };
  uint64_t seed = first;
  std::chrono::steady_clock::duration last_batch{};  // a batch that would end past the deadline is not started
  for (size_t index = 0; seed < first + iters && failures < 3; ++index) {
    const auto batch_start = std::chrono::steady_clock::now();
    if (batch_start + last_batch > deadline) {
      std::cout << "[fuzz] KILN_FUZZ_SECONDS reached after " << seed - first << " of " << iters << " graphs\n";
      break;
    }
    // A batch of graphs, each checked on a thread of its own while the kernels of all of them
    // compile together (batch.h).
    const uint64_t to = std::min(first + iters, seed + std::max<uint64_t>(batch_size, 1));
    std::vector<Case> cases;
    for (; seed < to; ++seed) {
      Case c{seed, generate(seed), nullptr, {}, {}, {}};
      Built b = build(c.program);
      try {
        graph::verify(b.graph);
      } catch (const Error& e) {
        ADD_FAILURE() << "seed " << seed << ": the generator built an invalid graph: " << e.what() << "\n"
                      << graph::print(b.graph);
        ++failures;
        continue;
      }
      cov.add(c.program, b.graph);
      c.graph = std::make_shared<const graph::Graph>(std::move(b.graph));
      c.calls = std::move(b.calls);
      c.allowed = std::move(b.allowed);
      cases.push_back(std::move(c));
    }
    if (batch) {
      batch->open(int(cases.size()));
      std::vector<std::thread> tasks;
      for (Case& c : cases) tasks.emplace_back([&] { run_checks(c), batch->task_done(); });
      batch->close_when_ready(kBatchLevels[index % std::size(kBatchLevels)], tile::cpu::compile_jobs());
      for (std::thread& t : tasks) t.join();
    } else {
      for (Case& c : cases) run_checks(c);
    }
    last_batch = std::chrono::steady_clock::now() - batch_start;
    // In seed order: a skip, or a failure reduced (each candidate compiled alone) and written out.
    for (const Case& c : cases) {
      for (size_t k = 0; k < c.outcomes.size() && failures < 3; ++k) {
        const Outcome& o = c.outcomes[k];
        if (o.kind == Outcome::ReferenceError) {
          if (skipped++ == 0) first_skip = "seed " + std::to_string(c.seed) + ": " + o.message;
          break;
        }
        if (o.ok()) continue;
        ++failures;
        const Program small = reduce(backends[k], c.program);
        const Outcome again = run_program(backends[k], small);
        const std::string text = repro_text(small, names[k], again);
        const auto file = out_dir() / ("kiln_fuzz_" + names[k] + "_seed" + std::to_string(c.seed) + ".kir");
        std::ofstream(file) << text;
        ADD_FAILURE() << "seed " << c.seed << ", backend " << names[k] << ": " << kind_name(o.kind) << ": " << o.message
                      << "\nreduced from " << c.graph->nodes().size() << " to " << count_nodes(small)
                      << " nodes, written to " << file.string() << ":\n" << text;
      }
    }
  }
  if (batch) {
    const KernelBatch::Stats st = batch->stats();
    std::cout << "[fuzz] kernels: " << st.units << " translation units compiled in " << st.batches << " compiler calls, "
              << st.alone << " alone, " << st.failed << " failed batches, " << st.quiet_closes << " closed after 5 quiet seconds\n";
  }
  std::cout << "[fuzz] " << cov.graphs << " graphs (" << cov.nodes << " nodes, " << cov.ops.size() << " distinct ops, "
            << cov.dynamic << " dynamic, " << cov.strided_inputs << " strided inputs, " << cov.empty
            << " with a size-0 input) x " << names.size() << " backends; " << skipped << " skipped; "
            << cpu_times(std::chrono::steady_clock::now() - start) << "\n";
  // Eager rejects almost no generated graph: the generator keeps its choices valid.
  EXPECT_LE(skipped, cov.graphs / 50 + 1) << "first: " << first_skip;
  if (cov.graphs >= 1000) {  // every feature the fuzzer promises shows up in a run of this size
    for (const char* op : {"add", "mul", "div", "where", "eq", "lt", "convert_element_type", "sum", "prod", "amax",
                           "amin", "argmax", "cumsum", "cummax", "permute", "slice", "expand", "as_strided", "view",
                           "squeeze", "unsqueeze", "diagonal", "flip", "cat", "constant_pad", "exp", "log", "constant"})
      EXPECT_TRUE(cov.ops.count(op)) << op << " never generated";
    for (DType t : {kFloat32, kFloat64, kInt64, kBool, kFloat16, kBFloat16}) EXPECT_TRUE(cov.dtypes.count(t)) << name(t);
    EXPECT_GT(cov.dynamic, cov.graphs / 10);
    EXPECT_GT(cov.strided_inputs, cov.graphs / 10);
    EXPECT_GT(cov.empty, cov.graphs / 50);
    EXPECT_GT(cov.size_one, cov.graphs / 5);
  }
}

// A planted bug: a backend that miscompiles one op (a floating-point mul runs as add).
Backend mul_runs_as_add() {
  return [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
    auto wrong = std::make_shared<graph::Graph>(graph::parse(graph::print(*g)));
    for (graph::Node* n : wrong->nodes())
      if (n->kind == graph::NodeKind::Call && n->op == ops::OpId::mul && is_floating(n->outputs[0]->spec.dtype))
        n->op = ops::OpId::add;  // same schema and output spec
    return [wrong](const std::vector<Tensor>& inputs) { return graph::interpret(*wrong, inputs); };
  };
}

// A correct backend that rounds differently from eager, as a fusing compiler does: every float
// value is kept in float64 between the graph's explicit casts (which still round to their dtype),
// so 16-bit and float32 chains round once instead of after every op, with float64 libm.
Backend float64_inside() {
  return [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
    auto wide = std::make_shared<graph::Graph>();
    std::map<const graph::Value*, graph::Value*> to;
    auto f64 = [&](graph::Value* v) {
      return is_floating(v->spec.dtype) && v->spec.dtype != kFloat64
                 ? wide->add_call(ops::OpId::convert_element_type, {v, kFloat64})[0]
                 : v;
    };
    for (const graph::Value* in : g->inputs()) to[in] = f64(wide->add_input(in->spec));
    for (const graph::Node* n : g->nodes()) {
      std::vector<graph::Value*> outs;
      if (n->kind == graph::NodeKind::Constant) {
        outs = {wide->add_constant(n->literal, n->wrapped)};
      } else {
        std::vector<graph::NodeArg> args = n->args;
        for (graph::NodeArg& a : args) {
          if (auto* v = std::get_if<graph::Value*>(&a)) *v = to.at(*v);
          if (auto* l = std::get_if<graph::ValueList>(&a))
            for (graph::Value*& v : *l) v = v ? to.at(v) : nullptr;
        }
        outs = wide->add_call(n->op, args);
        if (n->op == ops::OpId::convert_element_type) outs[0] = f64(outs[0]);  // the cast rounds, then widens again
      }
      for (size_t k = 0; k < outs.size(); ++k) to[n->outputs[k]] = outs[k];
    }
    std::vector<graph::Value*> outs;
    for (const graph::Value* o : g->outputs()) {
      graph::Value* v = to.at(o);
      outs.push_back(v->spec.dtype == o->spec.dtype ? v : wide->add_call(ops::OpId::convert_element_type, {v, o->spec.dtype})[0]);
    }
    wide->set_outputs(outs);
    return [wide](const std::vector<Tensor>& inputs) { return graph::interpret(*wide, inputs); };
  };
}

// The error analysis allows what such a backend does: no false alarm over thousands of graphs.
TEST(FuzzTolerance, AcceptsABackendThatRoundsLessOften) {
  const Backend wide = float64_inside();
  int failures = 0, strict_failures = 0, graphs = 0;
#ifdef KILN_SANITIZE
  const uint64_t iters = env_int("KILN_FUZZ_ITERS", 1000);  // the sanitizers check the code paths, not the statistics
#else
  const uint64_t iters = env_int("KILN_FUZZ_ITERS", 5000);
#endif
  for (uint64_t seed = 0; seed < iters && failures < 5; ++seed) {
    const Program p = generate(seed);
    Built b = build(p);
    auto g = std::make_shared<const graph::Graph>(std::move(b.graph));
    ++graphs;
    strict_failures += !check(wide, g, seed, b.calls).ok();  // the dtype tolerance alone
    const Outcome o = check(wide, g, seed, b.calls, b.allowed);
    if (o.ok()) continue;
    ++failures;
    ADD_FAILURE() << "seed " << seed << ": " << o.message << "\n" << repro_text(reduce(wide, p), "float64_inside", o);
  }
  std::cout << "[fuzz] float64 inside: " << strict_failures << " of " << graphs
            << " graphs differ from eager beyond the dtype tolerance, none beyond the error bounds\n";
  EXPECT_GT(strict_failures, 0) << "the backend rounds like eager: this test would prove nothing";
}

TEST(FuzzReducer, ShrinksAPlantedBugToTheMiscompiledOp) {
  const Backend planted = mul_runs_as_add();
  std::optional<Program> found;
  for (uint64_t seed = 0; seed < 2000 && !found; ++seed) {
    Program p = generate(seed);
    if (prune(p).steps.size() >= 6 && run_program(planted, p).kind == Outcome::Mismatch) found = p;
  }
  ASSERT_TRUE(found) << "no generated graph in 2000 seeds exposes the planted bug";
  const size_t before = count_nodes(*found);
  const Program small = reduce(planted, *found);
  const Outcome o = run_program(planted, small);
  ASSERT_EQ(o.kind, Outcome::Mismatch) << "the reduced program no longer fails";
  const std::string text = repro_text(small, "planted", o);
  std::cout << "[fuzz] planted bug, seed " << found->seed << ": " << before << " nodes reduced to " << count_nodes(small)
            << ":\n" << text;
  Built b = build(small);
  EXPECT_LT(b.graph.nodes().size(), before);
  EXPECT_LE(b.graph.nodes().size(), 2u) << text;  // the mul, and at most a wrapped number it multiplies by
  bool has_mul = false;
  for (const graph::Node* n : b.graph.nodes()) has_mul |= n->kind == graph::NodeKind::Call && n->op == ops::OpId::mul;
  EXPECT_TRUE(has_mul) << text;
  for (const Input& in : small.inputs) {
    int64_t numel = 1;
    for (int64_t s : in.sizes) numel *= s;
    EXPECT_LE(numel, 2) << "sizes shrink to what still fails\n" << text;
  }
  // The printed text replays: parsed back, it fails the planted backend and passes a correct one.
  auto replay = std::make_shared<const graph::Graph>(graph::parse(text));
  EXPECT_EQ(check(planted, replay, small.seed, b.calls).kind, Outcome::Mismatch);
  EXPECT_TRUE(check(backend_named("aot_eager"), replay, small.seed, b.calls).ok());
}

TEST(FuzzReducer, KeepsOnlyWhatTheFailureNeeds) {
  // A predicate on the program alone: "fails" while some input is strided and has a dim of 3+.
  Program p = generate(7);
  p.inputs.push_back(Input{kFloat64, {5, 4}, {-1, -1}, Layout::Strided, 4});
  p.steps.push_back(Step{StepKind::Unary, {int(p.inputs.size() - 1)}, {0, 0, 0, 0}});
  // Renumber: the new input shifted the steps by one.
  for (size_t k = 0; k + 1 < p.steps.size(); ++k)
    for (int& i : p.steps[k].operands)
      if (i >= int(p.inputs.size()) - 1) ++i;
  for (int& o : p.outputs) ++o;
  p.outputs.push_back(int(p.num_values() - 1));
  ASSERT_NO_THROW(build(p));
  auto fails = [](const Program& q) {
    for (const Input& in : q.inputs)
      for (int64_t s : in.sizes)
        if (in.layout == Layout::Strided && s >= 3) return true;
    return false;
  };
  const Program small = reduce(p, fails);
  ASSERT_TRUE(fails(small));
  EXPECT_EQ(small.steps.size(), 0u);  // the output is the input itself
  EXPECT_EQ(small.outputs.size(), 1u);
  ASSERT_EQ(small.inputs.size(), 1u);
  EXPECT_EQ(small.inputs[0].dtype, kFloat32);  // simplified where the failure does not care
  EXPECT_EQ(small.inputs[0].sizes, (std::vector<int64_t>{3}));  // one dim, the smallest size that still fails
}

// Graphs checked on threads of their own while their kernels compile together: one compiler
// call for all, each graph's results right, though every graph names its kernels k0, k1, ...
// (the three negs below all have a kernel k0_neg, with different sizes and dtypes).
TEST(FuzzBatch, CompilesManyGraphsKernelsInOneCall) {
  const std::vector<std::string> registered = list_backends();
  if (std::find(registered.begin(), registered.end(), "inductor") == registered.end()) GTEST_SKIP() << "no inductor";
  const Backend inductor = backend_named("inductor");
  std::vector<std::shared_ptr<const graph::Graph>> graphs;
  for (const char* spec : {"f32[4]", "f32[5]", "f64[3, 2]"})
    graphs.push_back(std::make_shared<const graph::Graph>(graph::parse(
        std::string("graph(%x: ") + spec + "):\n  %0: " + spec + " = neg(%x)\n  return (%0)\n")));
  for (uint64_t seed = 900000; graphs.size() < 12; ++seed) graphs.push_back(std::make_shared<const graph::Graph>(build(generate(seed)).graph));
  std::vector<Outcome> outcomes(graphs.size());
  {
    KernelBatch batch;
    batch.open(int(graphs.size()));
    std::vector<std::thread> tasks;
    for (size_t i = 0; i < graphs.size(); ++i)
      tasks.emplace_back([&, i] {
        outcomes[i] = check(compile_with(inductor, graphs[i]), *graphs[i], 1, {});
        batch.task_done();
      });
    batch.close_when_ready("-O1");
    for (std::thread& t : tasks) t.join();
    const KernelBatch::Stats st = batch.stats();
    EXPECT_EQ(st.batches, 1);
    EXPECT_GE(st.units, 3);  // the negs' at least (a generated graph may have no kernel)
    EXPECT_EQ(st.alone + st.failed + st.quiet_closes, 0);
  }
  for (size_t i = 0; i < graphs.size(); ++i) EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].message;
}

TEST(FuzzCompare, TolerancesAndNaN) {
  const double nan = std::nan("");
  EXPECT_EQ(compare(tensor<double>({1.0, nan, INFINITY}, {3}), tensor<double>({1.0, nan, INFINITY}, {3})), "");
  EXPECT_NE(compare(tensor<double>({1.0, 2.0}, {2}), tensor<double>({1.0, nan}, {2})), "");
  EXPECT_NE(compare(tensor<double>({INFINITY}, {1}), tensor<double>({-INFINITY}, {1})), "");
  EXPECT_EQ(compare(tensor<double>({1.0, 2.0}, {2}, kFloat32), tensor<double>({1.00001, 2.0}, {2}, kFloat32)), "");
  EXPECT_NE(compare(tensor<double>({1.0, 2.0}, {2}, kFloat32), tensor<double>({1.001, 2.0}, {2}, kFloat32)), "");
  EXPECT_EQ(compare(tensor<double>({1.0}, {1}, kBFloat16), tensor<double>({1.0078125}, {1}, kBFloat16)), "");
  EXPECT_NE(compare(tensor<double>({3.0}, {1}, kInt64), tensor<double>({4.0}, {1}, kInt64)), "");  // ints: exact
  EXPECT_NE(compare(tensor<double>({1.0}, {1}, kFloat32), tensor<double>({1.0}, {1}, kFloat64)), "");  // dtypes differ
  EXPECT_NE(compare(tensor<double>({1.0, 2.0}, {2}), tensor<double>({1.0, 2.0}, {1, 2})), "");  // sizes differ
}

TEST(FuzzInputs, FollowTheSpecAndTheSeed) {
  graph::Graph g = graph::parse(
      "graph(%x: f32[3, 4]{strides=[1, 6], offset=2}, %y: i64[s0, 2]):\n  %0: f32[3, 4] = neg(%x)\n  return (%0)\n");
  const std::vector<Tensor> a = make_inputs(g, 5, {{"s0", 7}}), b = make_inputs(g, 5, {{"s0", 7}}),
                            c = make_inputs(g, 6, {{"s0", 7}});
  EXPECT_EQ(a[0].strides(), (Shape{1, 6}));
  EXPECT_EQ(a[0].storage_offset(), 2);
  EXPECT_EQ(a[1].sizes(), (Shape{7, 2}));
  EXPECT_EQ(a[0].to_vector<float>(), b[0].to_vector<float>());
  EXPECT_NE(a[0].to_vector<float>(), c[0].to_vector<float>());
  for (int64_t v : a[1].to_vector<int64_t>()) EXPECT_TRUE(v >= -4 && v <= 4);
  EXPECT_EQ(parse_calls(calls_str({{{"s0", 5}, {"s1", 3}}, {{"s0", 2}}})),
            (std::vector<SymEnv>{{{"s0", 5}, {"s1", 3}}, {{"s0", 2}}}));
  EXPECT_THROW(parse_calls("s0"), Error);
}

TEST(FuzzPrograms, DeterministicPerSeedAndPrunable) {
  for (uint64_t seed : {1, 2, 3, 99}) {
    EXPECT_EQ(graph::print(build(generate(seed)).graph), graph::print(build(generate(seed)).graph));
    EXPECT_EQ(build(prune(generate(seed))).graph.nodes().size(), build(generate(seed)).graph.nodes().size());
  }
  EXPECT_NE(graph::print(build(generate(1)).graph), graph::print(build(generate(2)).graph));
}

// The loop IR of the fuzzer's graphs (dynamic dims, strided inputs, views, scans, externs...)
// parses back into a program that prints the same and passes the verifier.
TEST(FuzzPrograms, LoopIRParsesBack) {
  int lowered = 0;
  for (uint64_t seed = 0; seed < 1500; ++seed) {
    auto g = std::make_shared<const graph::Graph>(build(generate(seed)).graph);
    const std::string text = inductor::print(inductor::lower_and_schedule(g));
    inductor::Program p = inductor::parse(text);
    ASSERT_EQ(inductor::print(p), text) << "seed " << seed;
    inductor::verify(p);
    ++lowered;
  }
  EXPECT_EQ(lowered, 1500);
}

}  // namespace
}  // namespace kiln::fuzz
