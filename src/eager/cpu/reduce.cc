// CPU kernels of the reduction prims: sum, prod, amax, amin, argmax, argmin over any dims.
#include <kiln/ops.h>

#include <limits>
#include <memory>

#include "eager/cpu/loops.h"
#include "ops/family.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;
using ops::OpId;

// The input split into kept dims (one output element each) and reduced dims, both coalesced.
struct ReducePlan {
  std::vector<int64_t> keep_sizes, keep_strides, red_sizes, red_strides;  // element strides
  std::vector<int64_t> red_outer_sizes, red_outer_strides;                 // red_* without the innermost
  int64_t n_out = 1, n_red = 1;
};

void coalesce(std::vector<int64_t>& sizes, std::vector<int64_t>& strides) {
  std::vector<int64_t> s, st;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (!s.empty() && st.back() == strides[i] * sizes[i]) {
      s.back() *= sizes[i];
      st.back() = strides[i];
    } else {
      s.push_back(sizes[i]);
      st.push_back(strides[i]);
    }
  }
  sizes = s;
  strides = st;
}

ReducePlan plan(const Tensor& x, const std::vector<int64_t>& dims) {
  ReducePlan p;
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool red = std::find(dims.begin(), dims.end(), d) != dims.end();
    (red ? p.red_sizes : p.keep_sizes).push_back(x.size(d));
    (red ? p.red_strides : p.keep_strides).push_back(x.stride(d));
  }
  p.n_out = numel_of(p.keep_sizes);
  p.n_red = numel_of(p.red_sizes);
  coalesce(p.keep_sizes, p.keep_strides);
  coalesce(p.red_sizes, p.red_strides);
  if (!p.red_sizes.empty()) {
    p.red_outer_sizes.assign(p.red_sizes.begin(), p.red_sizes.end() - 1);
    p.red_outer_strides.assign(p.red_strides.begin(), p.red_strides.end() - 1);
  }
  return p;
}

int64_t offset_of(int64_t linear, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    off += (linear % sizes[d]) * strides[d];
    linear /= sizes[d];
  }
  return off;
}

// Visits reduced elements [begin, end) of one output: f(value, reduced_linear_index).
template <class T, class F>
void walk(const T* base, const ReducePlan& p, int64_t begin, int64_t end, F&& f) {
  if (p.red_sizes.empty()) {
    if (begin < end) f(base[0], int64_t(0));
    return;
  }
  const size_t nd = p.red_sizes.size();
  const int64_t inner = p.red_sizes[nd - 1], ist = p.red_strides[nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t outer = pos / inner, i0 = pos % inner;
    const T* row = base + offset_of(outer, p.red_outer_sizes, p.red_outer_strides);
    const int64_t stop = std::min(inner, i0 + (end - pos));
    for (int64_t i = i0; i < stop; ++i) f(row[i * ist], outer * inner + i);
    pos += stop - i0;
  }
}

constexpr int64_t kGrain = 32768;  // elements below which a reduction runs on one thread

// one(i) for every output i: across threads when there is enough work (`elements` in all),
// otherwise serially — even a serialized OpenMP region costs more than a tiny reduction.
template <class One>
void each_output(int64_t n_out, int64_t elements, int threads, One one) {
  if (elements > kGrain && n_out > 1 && threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n_out; ++i) one(i);
  } else {
    for (int64_t i = 0; i < n_out; ++i) one(i);
  }
}

template <class R, class A>
auto acc_result(const A& a) {
  if constexpr (requires { a.first; }) return a.second;  // (value, index) pairs give the index
  else return a;
}

// Reduces with accumulator type A: init, step(acc, value), merge(acc, acc), finish(acc) -> R.
template <class T, class R, class A, class Step, class Merge>
void reduce_into(const Tensor& x, const Tensor& out, const std::vector<int64_t>& dims, A init, Step step, Merge merge) {
  ReducePlan p = plan(x, dims);
  const T* in = x.data<T>();
  R* o = out.data<R>();  // out is fresh and contiguous: output i <-> kept linear index i
  const int threads = max_threads();
  if (p.n_out >= threads || p.n_red < kGrain) {
    auto one = [&](int64_t i) {
      A acc = init;
      walk(in + offset_of(i, p.keep_sizes, p.keep_strides), p, 0, p.n_red,
           [&](const T& v, int64_t j) { acc = step(acc, acc_t<T>(v), j); });
      o[i] = R(acc_result<R>(acc));
    };
    each_output(p.n_out, p.n_out * p.n_red, threads, one);
    return;
  }
  // Few outputs, long reductions: split each reduction across threads and merge.
  for (int64_t i = 0; i < p.n_out; ++i) {
    const T* base = in + offset_of(i, p.keep_sizes, p.keep_strides);
    std::vector<A> part(size_t(threads), init);
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      A acc = init;
      walk(base, p, p.n_red * t / threads, p.n_red * (t + 1) / threads,
           [&](const T& v, int64_t j) { acc = step(acc, acc_t<T>(v), j); });
      part[size_t(t)] = acc;
    }
    A acc = init;
    for (const A& x2 : part) acc = merge(acc, x2);
    o[i] = R(acc_result<R>(acc));
  }
}

// ---- Fast paths for the associative reductions (sum, prod, amax, amin): op(A, A) -> A.
// Several independent accumulators per loop, so the compiler vectorizes the loops without
// reassociating anything itself; each lane keeps the accumulator type (double for floats).
constexpr int kLanes = 32;
constexpr int64_t kColBlock = 4096;  // outputs accumulated together in the outer-reduction path

// op over p[0..n) (contiguous), starting from init.
template <class T, class A, class Op>
A reduce_contig(const T* p, int64_t n, A init, Op op) {
  A acc[kLanes];
  for (int k = 0; k < kLanes; ++k) acc[k] = init;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    // Kept as a loop: GCC's loop vectorizer handles it (max/min included), its SLP pass on the
    // fully unrolled body does not.
#pragma GCC unroll 1
    for (int k = 0; k < kLanes; ++k) acc[k] = op(acc[k], A(acc_t<T>(p[i + k])));
  }
  for (; i < n; ++i) acc[0] = op(acc[0], A(acc_t<T>(p[i])));
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] = op(acc[k], acc[k + w]);
  return acc[0];
}

// Reduced dims coalesce to one contiguous run per output: each output (or, for few outputs,
// each thread's share of one) is a reduce_contig.
template <class T, class A, class Op>
void reduce_inner(const T* in, T* o, const ReducePlan& p, A init, Op op) {
  const int threads = max_threads();
  const int64_t n = p.n_red;
  if (p.n_out >= threads || n < kGrain) {
    auto one = [&](int64_t i) { o[i] = T(reduce_contig(in + offset_of(i, p.keep_sizes, p.keep_strides), n, init, op)); };
    each_output(p.n_out, p.n_out * n, threads, one);
    return;
  }
  for (int64_t i = 0; i < p.n_out; ++i) {
    const T* base = in + offset_of(i, p.keep_sizes, p.keep_strides);
    std::vector<A> part(size_t(threads), init);
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t b = n * t / nt, e = n * (t + 1) / nt;
      part[size_t(t)] = reduce_contig(base + b, e - b, init, op);
    }
    A acc = init;
    for (const A& v : part) acc = op(acc, v);
    o[i] = T(acc);
  }
}

// acc[j] = op(acc[j], row[j]) for j < m over the rows [r0, r1) of the reduced dims.
template <class T, class A, class Op>
void accumulate_rows(const T* base, const ReducePlan& p, int64_t r0, int64_t r1, A* acc, int64_t m, Op op) {
  auto at = [&](int64_t r) { return base + offset_of(r, p.red_sizes, p.red_strides); };
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {  // four rows per pass over acc: a quarter of its loads and stores
    const T *a = at(r), *b = at(r + 1), *c = at(r + 2), *d = at(r + 3);
    for (int64_t j = 0; j < m; ++j)
      acc[j] = op(acc[j], op(op(A(acc_t<T>(a[j])), A(acc_t<T>(b[j]))), op(A(acc_t<T>(c[j])), A(acc_t<T>(d[j])))));
  }
  for (; r < r1; ++r) {
    const T* row = at(r);
    for (int64_t j = 0; j < m; ++j) acc[j] = op(acc[j], A(acc_t<T>(row[j])));
  }
}

// The innermost kept dim is contiguous (e.g. sum over dim 0 of a row-major matrix): each row of
// a block of outputs is added into a buffer, so memory is read row after row. With fewer blocks
// than threads, the rows are split across threads too and the buffers merged.
template <class T, class A, class Op>
void reduce_outer(const T* in, T* o, const ReducePlan& p, A init, Op op) {
  const int64_t cols = p.keep_sizes.back(), groups = p.n_out / cols;
  const int64_t nblk = (cols + kColBlock - 1) / kColBlock, tasks = groups * nblk;
  const std::vector<int64_t> gs(p.keep_sizes.begin(), p.keep_sizes.end() - 1),
      gst(p.keep_strides.begin(), p.keep_strides.end() - 1);
  const int threads = max_threads();
  const bool par = p.n_out * p.n_red > kGrain && threads > 1;
  auto block = [&](int64_t t, int64_t& m) {  // task t's input and output, m columns
    const int64_t g = t / nblk, j0 = (t % nblk) * kColBlock;
    m = std::min(cols, j0 + kColBlock) - j0;
    return std::pair<const T*, T*>(in + offset_of(g, gs, gst) + j0, o + g * cols + j0);
  };
  if (tasks >= threads || !par || p.n_red < 2 * threads) {
    auto one = [&](int64_t t) {
      int64_t m;
      auto [src, dst] = block(t, m);
      std::unique_ptr<A[]> acc(new A[size_t(m)]);  // not std::vector: vector<bool> has no data()
      std::fill(acc.get(), acc.get() + m, init);
      accumulate_rows(src, p, 0, p.n_red, acc.get(), m, op);
      for (int64_t j = 0; j < m; ++j) dst[j] = T(acc[size_t(j)]);
    };
    if (par && tasks > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t t = 0; t < tasks; ++t) one(t);
    } else {
      for (int64_t t = 0; t < tasks; ++t) one(t);
    }
    return;
  }
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t m;
    auto [src, dst] = block(t, m);
    std::unique_ptr<A[]> acc(new A[size_t(threads * m)]);
    std::fill(acc.get(), acc.get() + threads * m, init);
#pragma omp parallel num_threads(threads)
    {
      const int q = omp_get_thread_num(), nq = omp_get_num_threads();
      accumulate_rows(src, p, p.n_red * q / nq, p.n_red * (q + 1) / nq, acc.get() + q * m, m, op);
    }
    for (int64_t j = 0; j < m; ++j) {
      A a = acc[size_t(j)];
      for (int q = 1; q < threads; ++q) a = op(a, acc[size_t(q * m + j)]);
      dst[j] = T(a);
    }
  }
}

// Picks a fast path when the layout has one, else the general walk. Returns false if none.
template <class T, class A, class Op>
bool reduce_fast(const Tensor& x, const Tensor& out, const std::vector<int64_t>& dims, A init, Op op) {
  const ReducePlan p = plan(x, dims);
  if (p.n_out == 0) return true;
  if (p.red_sizes.size() == 1 && p.red_strides[0] == 1) {
    reduce_inner<T, A>(x.data<T>(), out.data<T>(), p, init, op);
    return true;
  }
  if (!p.red_sizes.empty() && !p.keep_sizes.empty() && p.keep_strides.back() == 1 && p.keep_sizes.back() >= kLanes) {
    reduce_outer<T, A>(x.data<T>(), out.data<T>(), p, init, op);
    return true;
  }
  return false;
}

// An associative reduction: a fast path when the layout has one, else the general walk.
template <class T, class A, class Op>
void reduce_assoc(const Tensor& x, const Tensor& out, const std::vector<int64_t>& dims, A init, Op op) {
  if (!reduce_fast<T, A>(x, out, dims, init, op))
    reduce_into<T, T, A>(x, out, dims, init, [op](A s, acc_t<T> v, int64_t) { return op(s, A(v)); }, op);
}

// sum, prod, amax and amin share their first arguments (self, dim, keepdim): their kernels read
// them through amax's view.
using ReduceArgs = ops::args::amax;
static_assert(ops::args_prefix<ReduceArgs, ops::args::sum>() && ops::args_prefix<ReduceArgs, ops::args::prod>() &&
              ops::args_prefix<ReduceArgs, ops::args::amin>());

std::vector<int64_t> reduce_dims(const ReduceArgs& a, const Tensor& x) {
  auto dims = a.dim();
  if (dims && dims->empty()) dims.reset();
  return ops::wrap_dims(dims, x.dim());
}

std::vector<Tensor> sum_prod_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const ReduceArgs r{a};
  Tensor out = make_tensor(specs[0]);
  Tensor x = r.self().to(out.dtype());
  const std::vector<int64_t> dims = reduce_dims(r, x);
  const bool is_sum = a.op == OpId::sum;
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    // Floats accumulate in double (exact enough to match a float64 reference); ints in uint64,
    // so overflow wraps (two's complement, as PyTorch) instead of being undefined.
    using A = std::conditional_t<std::is_floating_point_v<acc_t<T>>, double, uint64_t>;
    if constexpr (std::is_same_v<T, bool>) {
      detail::fail("internal: bool reduction output");
    } else if (is_sum) {
      reduce_assoc<T, A>(x, out, dims, A(0), [](A s, A t) { return A(s + t); });
    } else {
      reduce_assoc<T, A>(x, out, dims, A(1), [](A s, A t) { return A(s * t); });
    }
  });
  return {out};
}

template <class V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
  else return false;
}

std::vector<Tensor> minmax_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const ReduceArgs r{a};
  Tensor out = make_tensor(specs[0]);
  const Tensor& x = r.self();
  const std::vector<int64_t> dims = reduce_dims(r, x);
  const bool is_max = a.op == OpId::amax;
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    // NaN wins and stays; the first element seeds the accumulator through a flag-free init.
    const A init = is_max ? (std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest())
                          : (std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max());
    // v replaces s when it is larger (smaller) or NaN; a NaN s is never replaced since no
    // comparison with it is true. Branch-free, so the fast paths vectorize.
    if (is_max) reduce_assoc<T, A>(x, out, dims, init, [](A s, A v) { return (v > s || is_nan(v)) ? v : s; });
    else reduce_assoc<T, A>(x, out, dims, init, [](A s, A v) { return (v < s || is_nan(v)) ? v : s; });
  });
  return {out};
}

static_assert(ops::args_prefix<ops::args::argmax, ops::args::argmin>());
std::vector<Tensor> arg_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const ops::args::argmax r{a};  // argmin's arguments too
  Tensor out = make_tensor(specs[0]);
  Tensor x = r.self();
  auto dim = r.dim();
  if (!dim) x = reshape(x, {-1});
  const std::vector<int64_t> dims = x.dim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{dim ? ops::wrap_dim(*dim, x.dim()) : 0};
  const bool is_max = a.op == OpId::argmax;
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    using V = acc_t<T>;
    using A = std::pair<V, int64_t>;
    auto better = [is_max](const A& s, const A& v) {  // does v replace the current best s?
      if (s.second < 0) return true;
      if (is_nan(s.first)) return is_nan(v.first) && v.second < s.second;
      if (is_nan(v.first)) return true;
      if (v.first == s.first) return v.second < s.second;
      return is_max ? v.first > s.first : v.first < s.first;
    };
    reduce_into<T, int64_t, A>(
        x, out, dims, A(V(0), -1), [&](A s, V v, int64_t j) { return better(s, A(v, j)) ? A(v, j) : s; },
        [&](A s, A t) { return t.second >= 0 && better(s, t) ? t : s; });
  });
  return {out};
}

}  // namespace

KILN_REGISTER(kernel, sum, sum_prod_kernel);
KILN_REGISTER(kernel, prod, sum_prod_kernel);
KILN_REGISTER(kernel, amax, minmax_kernel);
KILN_REGISTER(kernel, amin, minmax_kernel);
KILN_REGISTER(kernel, argmax, arg_kernel);
KILN_REGISTER(kernel, argmin, arg_kernel);

}  // namespace kiln::eager::cpu
