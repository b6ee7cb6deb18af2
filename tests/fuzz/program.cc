// The fuzzer's generator (random programs from a seed) and builder (a program into a graph of
// prims). The builder keeps, per value, whether every correct backend must compute it bit for
// bit ("exact": inputs, views, selections, casts and integer arithmetic of exact values) and a
// bound on its magnitude. Discontinuous ops (comparisons, float-to-int casts, floor, argmax...)
// and ill-conditioned ones (log, sqrt, division's denominator) only take exact operands, and no
// op may overflow its dtype, so a backend that fuses, reorders or computes 16-bit floats in
// float32 (as inductor does) is compared at tolerances without false alarms.
#include "fuzz/program.h"

#include <kiln/ops.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "graph/passes/passes.h"
#include "sym/expr.h"

namespace kiln::fuzz {
namespace {

using graph::NodeArg;
using graph::Value;
using ops::OpId;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The largest magnitude a value of this dtype may reach (overflow would be a legitimate
// difference between backends that round intermediates differently).
double safe_bound(DType t) {
  switch (t) {
    case kFloat16: return 3e4;
    case kBFloat16:
    case kFloat32: return 1e30;
    case kFloat64: return 1e200;
    case kBool: return 1;
    default: return 1e15;  // integers: far from int64 overflow (and exact in a double)
  }
}

struct Val {
  Value* v = nullptr;
  bool exact = true;
  double bound = 0;
  ErrorBound err;  // how far a correct backend may be from eager here (zero when exact)
  bool number = false;  // a wrapped Python number (its values are exact in every float dtype)
  DType dtype() const { return v->spec.dtype; }
  const SymShape& sizes() const { return v->spec.sizes; }
  int64_t rank() const { return int64_t(v->spec.sizes.size()); }
  bool is_float() const { return is_floating(dtype()); }
};

bool concrete(const SymInt& s) { return !s.is_symbolic(); }
bool is_one(const SymInt& s) { return concrete(s) && s.value() == 1; }
bool all_concrete(const SymShape& s) { return std::all_of(s.begin(), s.end(), concrete); }
bool nonempty(const SymInt& s) { return !concrete(s) || s.value() > 0; }  // symbols are >= 2
int64_t max_size(const SymInt& s) { return concrete(s) ? s.value() : 64; }
bool same(const SymInt& a, const SymInt& b) { return sym::statically_known_equal(a, b); }

// Whether v converts to t without rounding. Where it does not, eager rounds v to t before the
// op, and a backend that keeps narrow floats wider (as inductor computes 16-bit ops in float32)
// may not: the result is then not exact.
bool converts_exactly(const Val& v, DType t) {
  if (!is_floating(t) || v.number) return true;
  const DType f = v.dtype();
  if (is_floating(f)) return f == t || t == kFloat64 || (t == kFloat32 && (f == kFloat16 || f == kBFloat16));
  const double limit = t == kFloat64 ? 9e15 : t == kFloat32 ? 16777216 : t == kFloat16 ? 2048 : 256;
  return v.bound <= limit;  // integers up to the mantissa's reach
}

// The dtype a promoting binary op gives (0-d tensors and wrapped numbers promote by kind only).
DType result_type(const Val& a, const Val& b) { return graph::infer_specs(OpId::maximum, {a.v, b.v}).at(0).dtype; }

double clamp_pow(double b, double n) { return n == 0 ? 1 : std::pow(std::max(b, 1.0), n); }

// The rounding unit of a dtype (0: integers and bools are exact), and of float accumulation.
double eps(DType t) {
  switch (t) {
    case kFloat64: return 2.2e-16;
    case kFloat32: return 1.2e-7;
    case kFloat16: return 9.8e-4;
    case kBFloat16: return 7.9e-3;
    default: return 0;
  }
}
double acc_eps(DType t) { return t == kFloat64 ? eps(kFloat64) : eps(kFloat32); }

// The error bound of a value as an absolute one (its bound is finite where this is used).
double spread(const Val& v) { return v.err.rel == 0 ? v.err.abs : v.err.abs + v.err.rel * v.bound; }
ErrorBound larger(const ErrorBound& a, const ErrorBound& b) { return {std::max(a.abs, b.abs), std::max(a.rel, b.rel)}; }
// A bounded function of x with Lipschitz constant `lip` and sup |x f'(x)| = `scale` (how a
// relative error of x moves f), plus a few units of its own rounding.
ErrorBound through(const Val& x, double lip, double scale, double u) { return {lip * x.err.abs + scale * x.err.rel + 4 * u, 0}; }

class Builder {
 public:
  explicit Builder(graph::Graph& g) : g_(g) {}

  Val input(const Program& p, const Input& in) {
    TensorSpec spec;
    spec.dtype = in.dtype;
    const size_t r = in.sizes.size();
    for (size_t d = 0; d < r; ++d) {
      const int s = in.symbol[d];
      spec.sizes.push_back(s < 0 ? SymInt(in.sizes[d])
                                 : SymInt(sym::symbol(p.symbols[size_t(s)].name, {2, 64}), p.symbols[size_t(s)].values[0]));
    }
    if (in.layout != Layout::Contiguous && r > 0) spec.strides = layout_strides(in), spec.offset = int64_t(in.layout_choice % 3);
    const bool is_f = is_floating(in.dtype);
    return {g_.add_input(spec), true, in.dtype == kBool ? 1.0 : is_f ? 3.0 : 4.0, {}};  // make_inputs' ranges
  }

  // One step; nullopt when its choice does not apply (the step then defines its first operand).
  std::optional<Val> step(const Step& s, const std::vector<Val>& ops) {
    switch (s.kind) {
      case StepKind::Unary: return unary(ops[0], s.choice);
      case StepKind::Binary: return binary(ops[0], ops[1], s.choice);
      case StepKind::Compare: return compare(ops[0], ops[1], s.choice);
      case StepKind::Where: return where(ops[0], ops[1], ops[2]);
      case StepKind::Cast: return cast(ops[0], s.choice);
      case StepKind::Reduce: return reduce(ops[0], s.choice);
      case StepKind::Scan: return scan(ops[0], s.choice);
      case StepKind::View: return view(ops[0], s.choice);
      case StepKind::Layout: return layout(ops[0], ops[1], s.choice);
    }
    return std::nullopt;
  }

 private:
  static SymShape layout_strides(const Input& in) {
    const size_t r = in.sizes.size();
    std::vector<int64_t> phys = in.sizes;  // the buffer's sizes, in the order they are laid out
    std::vector<size_t> order(r);
    for (size_t d = 0; d < r; ++d) order[d] = d;
    const size_t pick = in.layout_choice / 3 % r;
    if (in.layout == Layout::Permuted) {
      std::mt19937 rng(in.layout_choice);
      std::shuffle(order.begin(), order.end(), rng);
    } else if (in.layout == Layout::Strided) {
      phys[pick] = 2 * std::max<int64_t>(phys[pick], 1);  // every other element along `pick`
    } else if (in.layout == Layout::Expanded) {
      phys[pick] = 1;
    }
    std::vector<int64_t> strides(r);
    int64_t acc = 1;
    for (size_t k = r; k-- > 0;) {
      strides[order[k]] = acc;
      acc *= std::max<int64_t>(phys[order[k]], 1);
    }
    if (in.layout == Layout::Strided) strides[pick] *= 2;
    if (in.layout == Layout::Expanded) strides[pick] = 0;
    return SymShape(strides.begin(), strides.end());
  }

  Val call(OpId op, std::vector<NodeArg> args, bool exact, double bound, ErrorBound err = {}, size_t output = 0) {
    std::vector<Value*> outs = g_.add_call(op, std::move(args));
    return {outs.at(output), exact, bound, exact ? ErrorBound{} : err};
  }
  Val number(double v, bool integral) {
    Tensor t = integral ? scalar_tensor(Scalar(int64_t(v)), kInt64) : scalar_tensor(Scalar(v), kFloat64);
    return {g_.add_constant(t, /*wrapped=*/true), true, std::abs(v), {}, true};
  }
  // r with one more rounding to its dtype: an operand of a wider dtype (a float32 0-d tensor in a
  // bfloat16 op) is rounded first by eager, maybe not by a fusing backend.
  static Val rounded(Val r) {
    if (!r.exact && std::isfinite(r.bound)) r.err.abs += eps(r.dtype()) * r.bound;
    return r;
  }
  // Whether a value of this bound fits `t` (arithmetic never takes an unbounded operand).
  static bool fits(double bound, DType t) { return std::isfinite(bound) && bound <= safe_bound(t); }

  // b, sliced where needed so that it broadcasts with a: each trailing dim equal, or 1 on
  // either side. a itself where no slice can do it (an empty or symbolic dim).
  Val broadcastable(const Val& b, const Val& a) {
    Val out = b;
    const int64_t ra = a.rank(), rb = b.rank();
    for (int64_t k = 0; k < std::min(ra, rb); ++k) {
      const SymInt& da = a.sizes()[size_t(ra - 1 - k)];
      const SymInt& db = out.sizes()[size_t(rb - 1 - k)];
      if (same(da, db) || is_one(da) || is_one(db)) continue;
      if (!concrete(db) || db.value() == 0) return a;
      out = call(OpId::slice, {out.v, rb - 1 - k, SymInt(0), SymInt(1), SymInt(1)}, out.exact, out.bound, out.err);
    }
    return out;
  }

  // The candidate ops of a step, each in a fixed slot whether it applies or not: a step picks the
  // first applicable slot from choice % slots on, so it stays the same op when an edit elsewhere
  // (the reducer's) changes which other ops apply.
  class Choices {
   public:
    void add(bool applies, std::function<Val()> make) { slots_.push_back(applies ? std::move(make) : nullptr); }
    void push_back(std::function<Val()> make) { add(true, std::move(make)); }
    std::optional<Val> pick(uint32_t choice) const {
      for (size_t k = 0; k < slots_.size(); ++k)
        if (const auto& f = slots_[(choice + k) % slots_.size()]) return f();
      return std::nullopt;
    }

   private:
    std::vector<std::function<Val()>> slots_;
  };

  std::optional<Val> unary(const Val& x, const uint32_t* c) {
    Choices cands;
    const DType t = x.dtype();
    const double b = x.bound;
    const bool ex = x.exact, fin = std::isfinite(b);
    auto add = [&](bool applies, OpId op, bool exact, double bound, ErrorBound err = {}) {
      cands.add(applies, [=, this] { return call(op, {x.v}, exact, bound, err); });
    };
    const double uf = eps(default_float_dtype());  // int -> float ops round once
    if (t == kBool) {
      add(true, OpId::logical_not, ex, 1);
      add(true, OpId::bitwise_not, ex, 1);
      add(true, OpId::sigmoid, false, 1, {4 * uf, 0});
    } else if (!x.is_float()) {
      add(true, OpId::neg, ex, b);
      add(true, OpId::abs, ex, b);
      add(true, OpId::sign, ex, 1);
      add(true, OpId::bitwise_not, ex, b + 1);
      add(true, OpId::tanh, false, 1, {4 * uf, 0});
      add(ex, OpId::logical_not, true, 1);
    } else {
      const double u = eps(t);
      add(true, OpId::neg, ex, b, x.err);
      add(true, OpId::abs, ex, b, x.err);
      add(true, OpId::tanh, false, 1, through(x, 1, 0.45, u));
      add(true, OpId::sigmoid, false, 1, through(x, 0.25, 0.23, u));
      add(true, OpId::atan, false, 1.6, through(x, 1, 0.5, u));
      add(fin, OpId::erf, false, 1, through(x, 1.13, 0.5, u));
      add(fin, OpId::erfc, false, 2, through(x, 1.13, 0.5, 2 * u));
      const double e = std::exp(b), dx = fin ? spread(x) : 0;
      add(b <= 1e3, OpId::sin, false, 1, {dx + 4 * u, 0});
      add(b <= 1e3, OpId::cos, false, 1, {dx + 4 * u, 0});
      add(fits(e, t), OpId::exp, false, e, {0, dx + 4 * u});  // exp(x + d) = exp(x) * (1 + d + ...)
      add(fits(e, t), OpId::expm1, false, e, {e * (dx + 4 * u), 0});
      add(fits(std::exp2(b), t), OpId::exp2, false, std::exp2(b), {0, 0.7 * dx + 4 * u});
      add(fits(e, t), OpId::sinh, false, e, {e * (dx + 4 * u), 0});
      add(fits(e, t), OpId::cosh, false, e, {e * (dx + 4 * u), 0});
      // Ill-conditioned near 0 or discontinuous: exact operands only (accurate to a few ulps).
      for (OpId op : {OpId::log, OpId::log2, OpId::log1p, OpId::rsqrt, OpId::reciprocal}) add(ex, op, false, kInf, {0, 4 * u});
      add(ex && fin, OpId::sqrt, false, std::sqrt(b), {0, 4 * u});
      for (OpId op : {OpId::floor, OpId::ceil, OpId::round, OpId::trunc}) add(ex && fin, op, true, b + 1);
      for (OpId op : {OpId::sign, OpId::isnan, OpId::isinf, OpId::isfinite, OpId::logical_not}) add(ex, op, true, 1);
    }
    return cands.pick(c[0]);
  }

  std::optional<Val> binary(const Val& a, const Val& b0, const uint32_t* c) {
    static const double kFloats[] = {0.5, 2.0, -1.5, 3.0, 0.0};
    const bool use_number = c[1] % 8 == 0;
    const bool integral = !a.is_float() && c[2] % 2 == 0;
    const Val b = use_number ? number(integral ? double(int64_t(c[2] % 5) - 2) : kFloats[c[2] % 5], integral)
                             : broadcastable(b0, a);
    const DType t = result_type(a, b);
    const bool fl = is_floating(t);
    const bool both_exact = a.exact && b.exact && converts_exactly(a, t) && converts_exactly(b, t);
    const bool exact = both_exact && !fl;  // integer arithmetic of exact values is exact
    const bool bools = a.dtype() == kBool && b.dtype() == kBool;
    const bool finite = std::isfinite(a.bound) && std::isfinite(b.bound);
    Choices cands;
    auto add = [&](bool applies, OpId op, bool ex, double bound, ErrorBound err, std::vector<NodeArg> extra = {}) {
      cands.add(applies, [=, this] {
        std::vector<NodeArg> args{a.v, b.v};
        args.insert(args.end(), extra.begin(), extra.end());
        return rounded(call(op, args, ex, bound, err));
      });
    };
    const double sum = a.bound + b.bound, product = a.bound * b.bound, bigger = std::max(a.bound, b.bound);
    const double u = eps(t), da = finite ? spread(a) : 0, db = finite ? spread(b) : 0;
    add(fits(sum, t) && !bools, OpId::add, exact, sum, {da + db + u * sum, 0});
    add(fits(sum, t) && !bools, OpId::sub, exact, sum, {da + db + u * sum, 0});
    add(fits(product, t) && !bools, OpId::mul, exact, product, {a.bound * db + b.bound * da + da * db + u * product, 0});
    add(true, OpId::maximum, both_exact, bigger, larger(a.err, b.err));
    add(true, OpId::minimum, both_exact, bigger, larger(a.err, b.err));
    // a / b: b exact (near 0 it is ill-conditioned), a's error relative (an absolute one would grow without bound).
    add(b.exact && a.err.abs == 0 && std::isfinite(a.bound), OpId::div, false, kInf, {0, a.err.rel + u}, {std::monostate{}});
    const bool exact_floats = fl && both_exact && finite;  // discontinuous in an operand
    add(exact_floats, OpId::atan2, false, 3.2, {4 * u * 3.2, 0});
    add(exact_floats, OpId::remainder, false, b.bound, {4 * u * b.bound, 0});
    add(exact_floats, OpId::fmod, false, b.bound, {4 * u * b.bound, 0});
    add(exact_floats, OpId::copysign, false, a.bound, {});
    add(exact_floats && a.bound <= 8 && b.bound <= 4, OpId::pow, false, kInf, {0, 4 * u});
    add(fl && fits(sum, t), OpId::hypot, false, sum, {da + db + 4 * u * sum, 0});
    for (OpId op : {OpId::bitwise_and, OpId::bitwise_or, OpId::bitwise_xor}) add(!fl && both_exact, op, true, 2 * bigger + 1, {});
    for (OpId op : {OpId::logical_and, OpId::logical_or, OpId::logical_xor}) add(both_exact, op, true, 1, {});
    return cands.pick(c[0]);
  }

  std::optional<Val> compare(const Val& a, const Val& b0, const uint32_t* c) {
    static const OpId kOps[] = {OpId::eq, OpId::ne, OpId::lt, OpId::le, OpId::gt, OpId::ge};
    static const double kNumbers[] = {0.0, 0.5, 1.0, -1.0};
    if (!a.exact) return std::nullopt;
    const Val b = c[1] % 4 == 0 ? number(kNumbers[c[2] % 4], !a.is_float()) : broadcastable(b0, a);
    const DType t = result_type(a, b);  // what eager compares in
    if (!b.exact || !converts_exactly(a, t) || !converts_exactly(b, t)) return std::nullopt;
    return call(kOps[c[0] % 6], {a.v, b.v}, true, 1);
  }

  std::optional<Val> where(const Val& cond0, const Val& a, const Val& b0) {
    if (!cond0.exact) return std::nullopt;
    Val cond = cond0.dtype() == kBool ? cond0 : call(OpId::ne, {cond0.v, number(0, true).v}, true, 1);
    cond = broadcastable(cond, a);
    const Val b = broadcastable(b0, a);
    const DType t = result_type(a, b);
    const bool exact = a.exact && b.exact && converts_exactly(a, t) && converts_exactly(b, t);
    return rounded(call(OpId::where, {cond.v, a.v, b.v}, exact, std::max(a.bound, b.bound), larger(a.err, b.err)));
  }

  std::optional<Val> cast(const Val& x, const uint32_t* c) {
    static const DType kTo[] = {kFloat32, kFloat64, kInt64, kBool, kFloat16, kBFloat16};
    for (int k = 0; k < 6; ++k) {
      const DType to = kTo[(c[0] + uint32_t(k)) % 6];
      if (to == x.dtype()) continue;
      const bool discontinuous = (x.is_float() && !is_floating(to)) || to == kBool;
      if (discontinuous && !x.exact) continue;
      if (!fits(x.bound, to) && !(std::isinf(x.bound) && is_floating(to) && x.is_float())) continue;
      return call(OpId::convert_element_type, {x.v, to}, x.exact, to == kBool ? 1 : x.bound, {x.err.abs, x.err.rel + eps(to)});
    }
    return std::nullopt;
  }

  // A sum of n values: their errors, and a reordered float accumulation (~sqrt(n) roundings of
  // the running sum, with margin) plus the result's rounding.
  static ErrorBound summed(const Val& x, double n, DType t) {
    if (!std::isfinite(x.bound)) return {};
    return {n * spread(x) + 4 * acc_eps(t) * n * x.bound * std::sqrt(n) + eps(t) * n * x.bound, 0};
  }
  static ErrorBound multiplied(const Val& x, double n, DType t) {
    if (!std::isfinite(x.bound) || n == 0) return {};
    return {n * clamp_pow(x.bound, n - 1) * x.err.abs, n * (x.err.rel + 2 * acc_eps(t)) + eps(t)};
  }

  std::optional<Val> reduce(const Val& x, const uint32_t* c) {
    const int64_t r = x.rank();
    const uint32_t mask = r == 0 ? 0 : c[1] % (1u << r);
    const bool keepdim = c[2] % 2;
    std::vector<int64_t> dims;
    double n = 1;
    bool empty_dim = false;
    for (int64_t d = 0; d < r; ++d) {
      if (mask != 0 && !(mask & (1u << d))) continue;
      if (mask != 0) dims.push_back(d);
      n *= double(max_size(x.sizes()[size_t(d)]));
      empty_dim |= !nonempty(x.sizes()[size_t(d)]);
    }
    const NodeArg dim_arg = mask == 0 ? NodeArg(std::monostate{}) : NodeArg(dims);
    const DType acc = x.is_float() ? x.dtype() : kInt64;
    const bool exact = x.exact && !x.is_float();
    const ErrorBound sum_err = summed(x, n, acc), prod_err = multiplied(x, n, acc);
    Choices cands;
    cands.add(fits(x.bound * n, acc), [=, this] {
      return call(OpId::sum, {x.v, dim_arg, keepdim, std::monostate{}}, exact, x.bound * n, sum_err);
    });
    cands.add(fits(clamp_pow(x.bound, n), acc), [=, this] {
      return call(OpId::prod, {x.v, dim_arg, keepdim, std::monostate{}}, exact, clamp_pow(x.bound, n), prod_err);
    });
    const bool select = !empty_dim && x.dtype() != kBool;  // max/min of nothing is an error
    for (OpId op : {OpId::amax, OpId::amin})
      cands.add(select, [=, this] { return call(op, {x.v, dim_arg, keepdim}, x.exact, x.bound, x.err); });
    const NodeArg one = dims.empty() ? NodeArg(std::monostate{}) : NodeArg(dims[0]);
    for (OpId op : {OpId::argmax, OpId::argmin})
      cands.add(select && x.exact && dims.size() <= 1, [=, this] { return call(op, {x.v, one, keepdim}, true, n); });
    return cands.pick(c[0]);
  }

  std::optional<Val> scan(const Val& x, const uint32_t* c) {
    if (x.rank() == 0 || x.dtype() == kBool) return std::nullopt;
    const int64_t dim = int64_t(c[1] % uint32_t(x.rank()));
    const SymInt& size = x.sizes()[size_t(dim)];
    const double n = double(max_size(size));
    const DType acc = x.is_float() ? x.dtype() : kInt64;
    const bool exact = x.exact && !x.is_float();
    Choices cands;
    const ErrorBound sum_err = summed(x, n, acc), prod_err = multiplied(x, n, acc);
    cands.add(fits(x.bound * n, acc), [=, this] {
      return call(OpId::cumsum, {x.v, dim, std::monostate{}}, exact, x.bound * n, sum_err);
    });
    cands.add(fits(clamp_pow(x.bound, n), acc), [=, this] {
      return call(OpId::cumprod, {x.v, dim, std::monostate{}}, exact, clamp_pow(x.bound, n), prod_err);
    });
    const bool indices = x.exact && c[2] % 2;  // which of tied elements is the max is part of the op's meaning
    for (OpId op : {OpId::cummax, OpId::cummin})
      cands.add(nonempty(size), [=, this] {
        return call(op, {x.v, dim}, x.exact, indices ? n : x.bound, indices ? ErrorBound{} : x.err, indices ? 1 : 0);
      });
    return cands.pick(c[0]);
  }

  std::optional<Val> view(const Val& x, const uint32_t* c) {
    const int64_t r = x.rank();
    const SymShape& s = x.sizes();
    auto same_val = [&](OpId op, std::vector<NodeArg> args) { return call(op, std::move(args), x.exact, x.bound, x.err); };
    Choices cands;
    cands.add(r >= 2, [=] {
      std::vector<int64_t> perm(static_cast<size_t>(r));
      for (int64_t d = 0; d < r; ++d) perm[size_t(d)] = d;
      std::mt19937 rng(c[1]);
      std::shuffle(perm.begin(), perm.end(), rng);
      return same_val(OpId::permute, {x.v, perm});
    });
    const int64_t sd = r > 0 ? int64_t(c[1] % uint32_t(r)) : 0;  // the dim to slice
    cands.add(r > 0 && concrete(s[size_t(sd)]), [=] {
      const int64_t n = s[size_t(sd)].value();
      const int64_t start = int64_t(c[2] % uint32_t(n + 1));
      const int64_t end = start + int64_t(c[3] % uint32_t(n - start + 1));
      return same_val(OpId::slice, {x.v, sd, SymInt(start), SymInt(end), SymInt(1 + int64_t(c[3] >> 8) % 3)});
    });
    cands.push_back([=] { return same_val(OpId::unsqueeze, {x.v, int64_t(c[1] % uint32_t(r + 1))}); });
    std::vector<int64_t> ones;
    for (int64_t d = 0; d < r; ++d)
      if (is_one(s[size_t(d)])) ones.push_back(d);
    cands.add(!ones.empty(), [=] { return same_val(OpId::squeeze, {x.v, std::vector<int64_t>{ones[c[2] % ones.size()]}}); });
    cands.add(!ones.empty(), [=] {
      SymShape to = s;
      static const int64_t kTo[] = {2, 3, 5, 0};
      to[size_t(ones[c[2] % ones.size()])] = kTo[c[3] % 4];
      return same_val(OpId::expand, {x.v, to});
    });
    cands.add(r < 4, [=] {
      SymShape to = s;
      to.insert(to.begin(), SymInt(int64_t(2 + c[2] % 2)));
      return same_val(OpId::expand, {x.v, to});
    });
    // view and as_strided read the buffer in order: a contiguous value at offset 0 of static size.
    const bool plain = all_concrete(s) && graph::is_contiguous_spec(x.v->spec) && concrete(x.v->spec.offset) &&
                       x.v->spec.offset.value() == 0;
    int64_t numel = 1;
    for (const SymInt& d : s) numel *= d.hint();
    cands.add(plain, [=] { return same_val(OpId::view, {x.v, reshaped(s, c)}); });
    cands.add(plain && numel > 0, [=] {  // a window of the buffer, overlapping or with gaps, within its bounds
      const int64_t last = numel - 1;
      const int64_t s2 = int64_t(c[1] % 3), m = s2 == 0 ? 1 + int64_t(c[2] % 3) : 1 + std::min<int64_t>(int64_t(c[2] % 4), last / s2);
      const int64_t rest = last - (m - 1) * s2;
      const int64_t s1 = 1 + int64_t(c[3] % uint32_t(std::max<int64_t>(rest, 1)));
      const int64_t k = 1 + std::min<int64_t>(3, rest / s1);
      const int64_t off = int64_t((c[3] >> 16) % uint32_t(rest - (k - 1) * s1 + 1));
      return same_val(OpId::as_strided, {x.v, SymShape{k, m}, SymShape{s1, s2}, SymInt(off)});
    });
    cands.add(r >= 2 && all_concrete(s), [=] {
      const int64_t d1 = int64_t(c[2] % uint32_t(r)), d2 = (d1 + 1 + int64_t(c[3] % uint32_t(r - 1))) % r;
      return same_val(OpId::diagonal, {x.v, int64_t(c[3] >> 8) % 3 - 1, d1, d2});
    });
    return cands.pick(c[0]);
  }

  // A new shape with the same elements: two neighbouring dims merged, one split, or flattened.
  static SymShape reshaped(const SymShape& s, const uint32_t* c) {
    std::vector<int64_t> v;
    for (const SymInt& d : s) v.push_back(d.value());
    const size_t r = v.size();
    const uint32_t how = c[2] % 3;
    if (how == 0 && r >= 2) {
      const size_t d = c[3] % (r - 1);
      v[d] *= v[d + 1];
      v.erase(v.begin() + long(d) + 1);
    } else if (how == 1 && r >= 1) {
      const size_t d = c[3] % r;
      for (int64_t f : {2, 3, 5})
        if (v[d] % f == 0 && v[d] > f) {
          v[d] /= f;
          v.insert(v.begin() + long(d) + 1, f);
          break;
        }
    } else {
      int64_t n = 1;
      for (int64_t x : v) n *= x;
      v = {n};
    }
    return SymShape(v.begin(), v.end());
  }

  std::optional<Val> layout(const Val& a, const Val& b, const uint32_t* c) {
    const int64_t r = a.rank();
    const SymShape& s = a.sizes();
    Choices cands;
    cands.add(r >= 1, [=, this] {
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < r; ++d)
        if (c[1] & (1u << d)) dims.push_back(d);
      if (dims.empty()) dims.push_back(r - 1);
      return call(OpId::flip, {a.v, dims}, a.exact, a.bound, a.err);
    });
    cands.add(r >= 1 && concrete(s.back()), [=, this] {
      // Pads of -1..2 on the last dim (a negative pad crops; the result may be empty), and with
      // c[3]'s low bit, 0..2 on the one before it: masked loads at both dims (lower/pad.cc).
      const double value = a.dtype() == kBool ? 1 : a.is_float() ? 1.5 : 2;
      int64_t lo = int64_t(c[1] % 4) - 1, hi = int64_t(c[2] % 4) - 1;
      if (s.back().value() + lo + hi < 0) lo = hi = 0;
      SymShape pad{lo, hi};
      if (r >= 2 && (c[3] & 1)) {
        pad.push_back(int64_t((c[3] >> 1) % 3));
        pad.push_back(int64_t((c[3] >> 3) % 3));
      }
      return call(OpId::constant_pad, {a.v, pad, Scalar(value)}, a.exact, std::max(a.bound, value), a.err);
    });
    cands.add(r >= 1, [=, this] {
      const int64_t dim = int64_t(c[2] % uint32_t(r));
      bool fits_cat = b.rank() == r;
      for (int64_t d = 0; fits_cat && d < r; ++d) fits_cat = d == dim || same(s[size_t(d)], b.sizes()[size_t(d)]);
      const Val& other = fits_cat ? b : a;
      return call(OpId::cat, {graph::ValueList{a.v, other.v}, dim}, a.exact && other.exact, std::max(a.bound, other.bound),
                  larger(a.err, other.err));
    });
    // gather / index_select at in-range positions (a literal index, drawn from c[3]), along a
    // static dim: gather needs every dim static (its index has a's shape), index_select only dim.
    auto positions = [c](int64_t n, int64_t below) {
      std::vector<int64_t> v(static_cast<size_t>(n));
      uint64_t x = c[3] | 1u;
      for (int64_t& e : v) e = int64_t((x = x * 6364136223846793005ull + 1442695040888963407ull) >> 33) % below;
      return v;
    };
    const int64_t gd = r >= 1 ? int64_t(c[2] % uint32_t(r)) : 0;
    const bool static_dim = r >= 1 && concrete(s[size_t(gd)]) && s[size_t(gd)].value() > 0;
    cands.add(static_dim && all_concrete(s), [=, this] {
      Shape shape;
      int64_t n = 1;
      for (const SymInt& d : s) shape.push_back(d.value()), n *= d.value();
      const Tensor idx = tensor(positions(n, s[size_t(gd)].value()), shape);
      return call(OpId::gather, {a.v, gd, g_.add_constant(idx)}, a.exact, a.bound, a.err);
    });
    cands.add(static_dim, [=, this] {
      const Tensor idx = tensor(positions(int64_t(c[1] % 5) + 1, s[size_t(gd)].value()), Shape{int64_t(c[1] % 5) + 1});
      return call(OpId::index_select, {a.v, gd, g_.add_constant(idx)}, a.exact, a.bound, a.err);
    });
    return cands.pick(c[0]);
  }

  graph::Graph& g_;
};

// ---------------------------------------------------------------- the generator

class Rng {
 public:
  explicit Rng(uint64_t seed) : r_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint32_t next() { return uint32_t(r_()); }
  int below(int n) { return int(next() % uint32_t(n)); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(r_) < p; }
  // An index drawn by weight.
  int weighted(std::initializer_list<int> w) {
    int total = 0;
    for (int x : w) total += x;
    int k = below(total), i = 0;
    for (int x : w) {
      if (k < x) return i;
      k -= x;
      ++i;
    }
    return i - 1;
  }

 private:
  std::mt19937_64 r_;
};

int64_t random_size(Rng& rng) {
  static const int64_t kSizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 16, 32};
  return kSizes[rng.weighted({4, 14, 12, 12, 10, 10, 6, 8, 8, 6, 6, 4})];
}

}  // namespace

Program generate(uint64_t seed) {
  Rng rng(seed);
  Program p;
  p.seed = seed;
  const int rank = rng.weighted({5, 20, 35, 30, 10});
  std::vector<int64_t> base;
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    int64_t s = random_size(rng);
    if (numel * s > 4096) s = 1;
    base.push_back(s);
    numel *= std::max<int64_t>(s, 1);
  }
  std::vector<int> base_symbol(size_t(rank), -1);
  if (rng.chance(0.2)) {  // dynamic dims: the graph is compiled once and called at other sizes
    for (int d = 0; d < rank; ++d) {
      if (base[size_t(d)] < 2 || p.symbols.size() >= 2 || !rng.chance(0.5)) continue;
      static const char* const kNames[] = {"s0", "s1"};  // (a literal: GCC 12 warns on "s" + to_string)
      Symbol s{kNames[p.symbols.size()], {base[size_t(d)]}};
      for (int k = 0; k < 2; ++k) s.values.push_back(2 + rng.below(11));
      base_symbol[size_t(d)] = int(p.symbols.size());
      p.symbols.push_back(s);
    }
  }
  static const DType kDtypes[] = {kFloat32, kFloat64, kInt64, kBool, kFloat16, kBFloat16};
  const int n_inputs = 1 + rng.weighted({30, 35, 25, 10});
  for (int i = 0; i < n_inputs; ++i) {
    Input in;
    in.dtype = kDtypes[rng.weighted({50, 10, 12, 10, 9, 9})];
    const int drop = rng.chance(0.25) ? rng.below(rank + 1) : 0;
    bool dynamic = false;
    for (int d = drop; d < rank; ++d) {
      const bool one = rng.chance(0.2);
      in.sizes.push_back(one ? 1 : base[size_t(d)]);
      in.symbol.push_back(one ? -1 : base_symbol[size_t(d)]);
      dynamic |= in.symbol.back() >= 0;
    }
    if (!dynamic && !in.sizes.empty()) {
      const int l = rng.weighted({55, 15, 20, 10});
      in.layout = in.sizes.size() >= 2 || l != 1 ? Layout(l) : Layout::Contiguous;
      in.layout_choice = rng.next() % 3000;
    }
    p.inputs.push_back(in);
  }
  const int n_steps = 2 + rng.below(15);
  for (int k = 0; k < n_steps; ++k) {
    Step s;
    s.kind = StepKind(rng.weighted({20, 24, 8, 6, 8, 10, 5, 14, 5}));
    const int arity = s.kind == StepKind::Where ? 3 : s.kind == StepKind::Binary || s.kind == StepKind::Compare || s.kind == StepKind::Layout ? 2 : 1;
    const int n_values = int(p.num_values());
    for (int a = 0; a < arity; ++a) s.operands.push_back(rng.chance(0.6) && a == 0 ? n_values - 1 : rng.below(n_values));
    for (uint32_t& c : s.choice) c = rng.next();
    p.steps.push_back(s);
  }
  // Outputs: the last value and up to two other values nothing reads (so most steps stay live).
  const int n = int(p.num_values()), first_step = int(p.inputs.size());
  std::vector<bool> read(size_t(n), false);
  for (const Step& s : p.steps)
    for (int i : s.operands) read[size_t(i)] = true;
  p.outputs.push_back(n - 1);
  for (int i = n - 2; i >= first_step && p.outputs.size() < 3; --i)
    if (!read[size_t(i)] && rng.chance(0.8)) p.outputs.push_back(i);
  if (rng.chance(0.2)) p.outputs.push_back(first_step + rng.below(n - first_step));
  return p;
}

Built build(const Program& p) {
  Built out;
  Builder b(out.graph);
  std::vector<Val> vals;
  for (const Input& in : p.inputs) {
    KILN_CHECK(in.sizes.size() == in.symbol.size(), "fuzz program: an input's sizes and symbols differ in length");
    vals.push_back(b.input(p, in));
  }
  for (const Step& s : p.steps) {
    std::vector<Val> ops;
    for (int i : s.operands) {
      KILN_CHECK(i >= 0 && size_t(i) < vals.size(), "fuzz program: a step reads value ", i, " before it is defined");
      ops.push_back(vals[size_t(i)]);
    }
    std::optional<Val> v;
    try {
      v = b.step(s, ops);
    } catch (const Error&) {  // a choice the op's meta rejects: the step defines its operand
    }
    vals.push_back(v ? *v : ops.at(0));
  }
  std::vector<Value*> outs;
  for (int i : p.outputs) {
    KILN_CHECK(i >= 0 && size_t(i) < vals.size(), "fuzz program: output ", i, " is not a value");
    outs.push_back(vals[size_t(i)].v);
    out.allowed.push_back(vals[size_t(i)].err);
  }
  out.graph.set_outputs(outs);
  graph::dce(out.graph);
  const size_t calls = p.symbols.empty() ? 1 : p.symbols[0].values.size();
  for (size_t k = 0; k < calls; ++k) {
    SymEnv env;
    for (const Symbol& s : p.symbols) env[s.name] = s.values.at(k);
    out.calls.push_back(env);
  }
  return out;
}

Program prune(const Program& p) {
  const size_t n_in = p.inputs.size();
  std::vector<bool> live(p.num_values(), false);
  for (int o : p.outputs) live[size_t(o)] = true;
  for (size_t k = p.steps.size(); k-- > 0;)
    if (live[n_in + k])
      for (int i : p.steps[k].operands) live[size_t(i)] = true;
  std::vector<int> renumber(p.num_values(), -1);
  Program q;
  q.seed = p.seed;
  q.symbols = p.symbols;
  for (size_t i = 0; i < n_in; ++i)
    if (live[i]) renumber[i] = int(q.inputs.size()), q.inputs.push_back(p.inputs[i]);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (!live[n_in + k]) continue;
    Step s = p.steps[k];
    for (int& i : s.operands) i = renumber[size_t(i)];
    renumber[n_in + k] = int(q.inputs.size() + q.steps.size());
    q.steps.push_back(s);
  }
  for (int o : p.outputs) q.outputs.push_back(renumber[size_t(o)]);
  // Symbols no input uses any more stay: they cost nothing and keep the calls' count.
  return q;
}

std::string describe(const Program& p) {
  std::ostringstream os;
  os << "seed " << p.seed << ": " << p.inputs.size() << " inputs, " << p.steps.size() << " steps, " << p.outputs.size()
     << " outputs";
  if (!p.symbols.empty()) os << ", " << p.symbols.size() << " dynamic sizes";
  return os.str();
}

}  // namespace kiln::fuzz
