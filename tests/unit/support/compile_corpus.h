// The compile() acceptance harness: a function runs eagerly and compiled on identical fresh
// inputs; results (and the inputs afterwards, for in-place ops) must match bitwise, and the graph
// and break counts must equal both what explain() reports and what the test expects.
#pragma once
#include <kiln/compile.h>
#include <kiln/nn.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "support/test_util.h"

namespace kiln::corpus {

// Same dtype, shape and bytes (so NaNs and signed zeros count too).
inline void expect_bitwise(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  ASSERT_FALSE(a.is_fake()) << what << ": a fake tensor escaped";
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  Tensor ca = a.detach().contiguous(), cb = b.detach().contiguous();
  const size_t n = size_t(ca.numel()) * ca.element_size();
  if (n == 0) return;  // zero-size: nothing to compare (and no data pointer)
  EXPECT_EQ(std::memcmp(ca.data_ptr(), cb.data_ptr(), n), 0) << what << "\ncompiled:\n" << a << "\neager:\n" << b;
}

// The tensors among a call's arguments (to compare them after in-place ops).
inline void collect(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
inline void collect(const std::vector<Tensor>& l, std::vector<Tensor>& out) { out.insert(out.end(), l.begin(), l.end()); }
template <class T>
void collect(const T&, std::vector<Tensor>&) {}
template <class Tuple>
std::vector<Tensor> tensors_of(const Tuple& args) {
  std::vector<Tensor> out;
  std::apply([&](const auto&... a) { (collect(a, out), ...); }, args);
  return out;
}

template <class R>
std::vector<Tensor> flat(const R& r) {
  std::vector<Tensor> out;
  capture::flatten_result(r, out);
  return out;
}

// The report with every graph's IR (for failure messages).
inline std::string describe(const ExplainReport& r) {
  std::string s = r.str();
  for (const std::string& g : r.graphs) s += g;
  return s;
}

struct Expect {
  int graphs;      // after one call (what explain reports)
  int breaks;
  int total = -1;  // graphs after every input set (-1: the same as `graphs`)
};

// Same dtype and shape, values within the dtype's rounding (the "inductor" backend's generated
// kernels add in their own order); integers and bools exactly, NaNs in the same places.
inline void expect_within_dtype(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const DType d = a.dtype();
  const double tol = d == kFloat64 ? 1e-9 : d == kFloat32 ? 1e-4 : (d == kFloat16 || d == kBFloat16) ? 2e-2 : 0;
  auto x = a.detach().to_vector<double>(), y = b.detach().to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (x[i] == y[i]) continue;  // (infinities)
    ASSERT_NEAR(x[i], y[i], tol * (0.1 + std::abs(y[i]))) << what << " [" << i << "]\ncompiled:\n" << a << "\neager:\n" << b;
  }
}

// Calls `compiled` and fn on fresh arguments make(i), i < calls, each after manual_seed(seed) so
// random ops draw the same numbers, and compares outputs and argument tensors with `same`.
constexpr uint64_t kCorpusSeed = 20261129;
template <class F, class C, class Make, class Same>
void compare_calls(F fn, C& compiled, Make make, int calls, Same same) {
  for (int i = 0; i < calls; i++) {
    SCOPED_TRACE("call " + std::to_string(i));
    auto eager_args = make(i), compiled_args = make(i);
    manual_seed(kCorpusSeed);
    auto want = flat(std::apply(fn, eager_args));
    manual_seed(kCorpusSeed);
    auto got = flat(std::apply(compiled, compiled_args));
    EXPECT_EQ(got.size(), want.size());
    for (size_t k = 0; k < std::min(got.size(), want.size()); k++) same(got[k], want[k], "output " + std::to_string(k));
    auto ga = tensors_of(compiled_args), wa = tensors_of(eager_args);
    for (size_t k = 0; k < ga.size(); k++) same(ga[k], wa[k], "argument tensor " + std::to_string(k) + " after the call");
  }
}

// The same calls through the "inductor" backend, compared with eager within dtype tolerances
// (run by check() for every corpus function after the eager backend's bitwise pass).
template <class F, class Make>
void check_inductor(const std::string& name, F fn, Make make, int calls, int total, CompileOptions o) {
  SCOPED_TRACE(name + " (backend inductor)");
  o.backend = "inductor";
  auto compiled = compile(fn, o);
  compare_calls(fn, compiled, make, calls, [](auto&&... a) { expect_within_dtype(a...); });
  EXPECT_EQ(compiled.report().graph_count, total) << describe(compiled.report());
}

// `make(i)` builds the arguments for call i (a tuple, fresh tensors each time: in-place ops must
// not leak from one run into the other). Every run is preceded by manual_seed(seed) so random
// ops draw the same numbers eagerly and compiled.
template <class F, class Make>
ExplainReport check(const std::string& name, F fn, Make make, Expect e, int calls = 2, const CompileOptions& given = {}) {
  SCOPED_TRACE(name);
  CompileOptions o = given;
  o.backend = "eager";  // first the eager backend, compared bitwise; then inductor (below)
  const uint64_t seed = kCorpusSeed;
  auto compiled = compile(fn, o);
  compare_calls(fn, compiled, make, calls, [](auto&&... a) { expect_bitwise(a...); });
  ExplainReport r = compiled.report();
  const int total = e.total < 0 ? e.graphs : e.total;
  EXPECT_EQ(r.graph_count, total) << describe(r);
  EXPECT_EQ(int(r.breaks.size()), e.breaks) << describe(r);
  EXPECT_EQ(int(r.ops_per_graph.size()), r.graph_count);
  for (const auto& b : r.breaks) EXPECT_FALSE(b.reason.empty());
  // explain() on the first input set: a fresh compile, one call.
  auto args = make(0);
  manual_seed(seed);
  ExplainReport x = std::apply([&](auto&... a) { return explain(fn, a...); }, args);
  EXPECT_EQ(x.graph_count, e.graphs) << describe(x);
  EXPECT_EQ(int(x.breaks.size()), e.breaks) << describe(x);
  check_inductor(name, fn, make, calls, total, o);
  return r;
}

// Gradients of sum(outputs) with respect to `leaves` (tensors among the arguments that require
// grad), compiled against eager. Floating results are compared bitwise: the eager backend runs
// the same kernels, so the backward graph is the same too.
// Values within float32 rounding of each other (the aot_eager backend runs decomposed prims, so
// its sums may round differently from the eager kernels').
inline void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;  // where(): NaN * 0 in the unselected branch, both ways
    EXPECT_NEAR(x[i], y[i], 1e-5 + 1e-4 * std::abs(y[i])) << what << " [" << i << "]";
  }
}

template <class F, class Make>
void check_grads_with(const std::string& name, F fn, Make make, const std::string& backend) {
  SCOPED_TRACE(name + " (gradients, backend " + backend + ")");
  CompileOptions o;
  o.backend = backend;
  auto compiled = compile(fn, o);
  auto eager_args = make(0), compiled_args = make(0);
  auto backward = [](const std::vector<Tensor>& outs, const char* which) {
    Tensor total;
    for (const Tensor& t : outs)
      if (t.is_floating_point() && t.requires_grad()) total = total.defined() ? total + t.sum() : t.sum();
    ASSERT_TRUE(total.defined()) << "no differentiable output";
    try {
      total.backward();
    } catch (const Error& e) {
      FAIL() << which << " backward failed: " << e.what();
    }
  };
  backward(flat(std::apply(fn, eager_args)), "eager");
  backward(flat(std::apply(compiled, compiled_args)), "compiled");
  auto ga = tensors_of(compiled_args), wa = tensors_of(eager_args);
  int checked = 0;
  for (size_t k = 0; k < ga.size(); k++) {
    if (!wa[k].requires_grad()) continue;
    ASSERT_TRUE(ga[k].grad().defined()) << "argument " << k << " got no gradient through the compiled function";
    if (backend == "eager") expect_bitwise(ga[k].grad(), wa[k].grad(), "gradient of argument " + std::to_string(k));
    else expect_close(ga[k].grad(), wa[k].grad(), "gradient of argument " + std::to_string(k));
    checked++;
  }
  EXPECT_GT(checked, 0);
}

// Gradients through the "eager" backend (bitwise) and through "aot_eager" and "inductor" (the
// compiled forward and backward graphs, within float32 rounding).
template <class F, class Make>
void check_grads(const std::string& name, F fn, Make make) {
  check_grads_with(name, fn, make, "eager");
  check_grads_with(name, fn, make, "aot_eager");
  check_grads_with(name, fn, make, "inductor");
}

// A fixed random tensor, rebuilt identically on every call (same values, fresh storage).
struct Fixed {
  Tensor value;
  Fixed(const Shape& s, DType d = kFloat32, double lo = -2, double hi = 2) : value(test::random_tensor(s, d, nullptr, "contiguous", lo, hi)) {}
  Tensor operator()() const { return value.clone(); }
};

}  // namespace kiln::corpus
