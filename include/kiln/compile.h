// kiln::compile: capture a function as a graph (traced on fake tensors), guarded by the
// conditions it was traced under, and run the graph through a backend. See docs/compile.md.
//
//   auto step = kiln::compile([](const Tensor& x, const Tensor& w) { return (x.matmul(w)).relu(); });
//   Tensor y = step(x, w);            // traces once, then reuses the graph while its guards hold
//   std::cout << kiln::explain(fn, x, w);   // graphs, breaks, guards, recompiles, compile times
//
// This header is the compile layer's (src/compile/: the backend registry); what capture implements
// (CompileOptions, ExplainReport, cond, opaque, LazyScope, mark_dynamic, the engine) is declared in
// kiln/compile/capture.h, included here.
#pragma once
#include <kiln/compile/capture.h>

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

// Backends by name: "eager" (the graph interpreter), "aot_eager" (AOT autograd, docs/aot.md),
// and any a program registers (a new name, or one replacing a registered backend).
void register_backend(const std::string& name, Backend backend);
std::vector<std::string> list_backends();

// A compiled function: call it like the original.
template <class F>
class Compiled {
 public:
  Compiled(F fn, const CompileOptions& options) : fn_(std::move(fn)), engine_(capture::make_engine(options)) {}

  template <class... A>
  auto operator()(A&&... args) {
    using R = std::decay_t<std::invoke_result_t<F&, A&&...>>;
    std::vector<capture::ArgValue> flat;
    flat.reserve(sizeof...(A));
    (capture::flatten(args, flat), ...);
    size_t result_size = 0;  // for a std::vector<Tensor> result: its length in the trace
    capture::Body body = [&](const std::vector<capture::ArgValue>& vals) {
      size_t pos = 0;
      auto rebuilt = std::tuple<decltype(capture::rebuild(args, vals, pos))...>{capture::rebuild(args, vals, pos)...};
      R r = std::apply(fn_, rebuilt);
      std::vector<Tensor> out;
      capture::flatten_result(r, out);
      result_size = out.size();
      return out;
    };
    std::vector<Tensor> out = capture::run(*engine_, flat, body);
    size_t pos = 0;
    return capture::Unflatten<R>::get(out, pos, out.size());
  }

  ExplainReport report() const { return capture::report(*engine_); }

 private:
  F fn_;
  std::shared_ptr<capture::Engine> engine_;
};

template <class F>
Compiled<F> compile(F fn, const CompileOptions& options = {}) {
  return Compiled<F>(std::move(fn), options);
}

// Compiles `fn` afresh, calls it once with `args`, and reports what capture did.
template <class F, class... A>
ExplainReport explain(F fn, A&&... args) {
  Compiled<F> c(std::move(fn), CompileOptions{});
  c(std::forward<A>(args)...);
  return c.report();
}

}  // namespace kiln
