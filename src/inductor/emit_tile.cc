// Loop IR node -> tile::Builder program.
//   pointwise: each program instance takes XBLOCK consecutive elements of the flattened index
//              space, splits the flat index into i0..ik (div/mod by the ranges' products), and
//              stores body(i) at the output's offset.
//   reduction: each instance takes XBLOCK outputs ([XBLOCK, 1]) and loops over the reduced
//              elements in blocks of RBLOCK ([1, RBLOCK]), combining into an [XBLOCK, RBLOCK]
//              accumulator that is reduced along axis 1 at the end (argmax / argmin carry the
//              best value and its position per lane, then pick the first best across lanes).
//   scan:      each instance takes XBLOCK positions of the other variables and walks the scanned
//              one sequentially, storing the running value at every step.
// Index math is i64; masked-off lanes load 0 and are never stored. Block sizes that divide a
// static extent need no mask at all (the C compiler vectorizes unmasked loops far better).
#include "inductor/emit_tile.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "inductor/index_error.h"
#include "inductor/lower/lower.h"
#include "tile/builder.h"
#include "tile/prims.h"

namespace kiln::inductor {
namespace {

using tile::Val;

// The longest row (static) a reduction keeps in one block: loaded once for all its stages.
constexpr int64_t kPersistentRow = 4096;

int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int64_t hint_of(const SymShape& sizes) {
  int64_t n = 1;
  for (const SymInt& s : sizes) n *= std::max<int64_t>(s.hint(), 0);
  return n;
}

void collect_sizes(const ExprPtr& e, std::set<std::string>& out) {
  if (e->kind == sym::Kind::Symbol && !e->extent) out.insert(e->name);
  for (const ExprPtr& a : e->args) collect_sizes(a, out);
}

bool contains(const ExprPtr& e, const ExprPtr& v) {
  if (e == v) return true;
  for (const ExprPtr& a : e->args)
    if (contains(a, v)) return true;
  return false;
}

// The coefficient of v in e when e is affine in v (its terms are k*v*f, f free of v), else null.
ExprPtr coefficient(const ExprPtr& e, const ExprPtr& v) {
  int64_t c = 0;
  std::vector<sym::detail::Term> terms;
  sym::detail::sum_parts(e, &c, &terms);
  ExprPtr out = sym::constant(0);
  for (const sym::detail::Term& t : terms) {
    if (!contains(t.base, v)) continue;
    ExprPtr q = sym::detail::divide_exact(t.base, v);
    if (!q || contains(q, v)) return nullptr;
    out = sym::add(out, sym::mul(sym::constant(t.coeff), q));
  }
  return out;
}

// Dim collapsing: adjacent index variables merge into one when every index expression of the
// node reads them as one (the outer's coefficient is the inner's times the inner's range: a
// contiguous run), so the kernel splits its flat index by fewer div/mods (none for a fully
// contiguous pointwise node). Fills `with` (old variable -> expression in the new ones).
struct Collapsed {
  std::vector<ExprPtr> vars;
  SymShape ranges;
};
Collapsed collapse(const std::vector<ExprPtr>& vars, const SymShape& ranges, const std::vector<ExprPtr>& exprs,
                   const std::string& prefix, std::map<ExprPtr, ExprPtr>& with) {
  std::vector<std::vector<size_t>> groups;
  for (size_t d = 0; d < vars.size(); ++d) {
    if (sym::statically_known_equal(ranges[d], SymInt(1))) {  // a size-1 dim: index 0, no variable
      with[vars[d]] = sym::constant(0);
      continue;
    }
    bool merge = !groups.empty();
    if (merge) {
      const size_t inner = d, outer = groups.back().back();
      for (const ExprPtr& e : exprs) {
        ExprPtr co = coefficient(e, vars[outer]), ci = coefficient(e, vars[inner]);
        if (!co || !ci || !sym::statically_known_equal(co, sym::mul(ci, ranges[inner].as_expr()))) {
          merge = false;
          break;
        }
      }
    }
    if (merge) groups.back().push_back(d);
    else groups.push_back({d});
  }
  Collapsed c;
  for (const auto& g : groups) {
    SymInt extent = 1;
    for (size_t d : g) extent = extent * ranges[d];
    ExprPtr j = sym::index(prefix + std::to_string(c.vars.size()), extent.as_expr());
    for (size_t d : g) with[vars[d]] = d == g.back() ? j : sym::constant(0);
    c.vars.push_back(j);
    c.ranges.push_back(extent);
  }
  return c;
}

kiln::Scalar identity(tile::ReduceKind k, DType d) {
  const bool f = is_floating(d);
  const double inf = std::numeric_limits<double>::infinity();
  switch (k) {
    case tile::ReduceKind::Sum: return f ? kiln::Scalar(0.0) : d == kBool ? kiln::Scalar(false) : kiln::Scalar(int64_t(0));
    case tile::ReduceKind::Prod: return f ? kiln::Scalar(1.0) : d == kBool ? kiln::Scalar(true) : kiln::Scalar(int64_t(1));
    case tile::ReduceKind::Max:
      if (f) return kiln::Scalar(-inf);
      if (d == kBool) return kiln::Scalar(false);
      return d == kUInt8 ? kiln::Scalar(int64_t(0)) : kiln::Scalar(d == kInt64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (8 * itemsize(d) - 1)));
    case tile::ReduceKind::Min:
      if (f) return kiln::Scalar(inf);
      if (d == kBool) return kiln::Scalar(true);
      return d == kUInt8 ? kiln::Scalar(int64_t(255)) : kiln::Scalar(d == kInt64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (8 * itemsize(d) - 1)) - 1);
    default: break;
  }
  detail::fail("internal: inductor: no identity for this reduction");
}

class Emitter {
 public:
  Emitter(const Program& p, const Node& n, const BlockSizes& blocks) : p_(p), n_(n), b_(n.name), blocks_(blocks) {
    // Every op of the kernel says where it came from: the graph ops fused into it and the user's
    // line of the first (not this file's lines).
    tile::Origin o;
    for (const graph::Origin& g : n.origins) {
      if (!g.known()) continue;
      std::string op = ops::op_info(g.op).name;
      if (g.backward) op += " backward";
      if (o.op.find(op) == std::string::npos) o.op += (o.op.empty() ? "" : "+") + op;
      if (o.file.empty() && g.file) o.file = g.file, o.line = g.line;
    }
    if (o.op.empty()) o.op = n.name;
    b_.set_origin(o);
  }

  GeneratedKernel run() {
    // Parameters: the output, the buffers the body loads, then the size symbols.
    std::set<int> loaded;
    std::set<std::string> sizes;
    bool checks = false;
    walk_bodies([&](const Value* v) {
      if (v->kind == ValueKind::Load) loaded.insert(v->buffer);
      if (v->index) collect_sizes(v->index, sizes);
      checks |= v->kind == ValueKind::Check;
    });
    for (const SymInt& s : n_.ranges) collect_sizes(s.as_expr(), sizes);
    for (const SymInt& s : n_.reduction_ranges) collect_sizes(s.as_expr(), sizes);
    for (int o : n_.outputs)
      for (const SymInt& s : p_.buffers[size_t(o)].strides) collect_sizes(s.as_expr(), sizes);
    GeneratedKernel k{tile::Program(), {}, nullptr};
    for (size_t i = 0; i < n_.outputs.size(); ++i) {
      const int o = n_.outputs[i];
      ptrs_[o] = b_.arg_ptr(n_.outputs.size() == 1 ? "out" : "out" + std::to_string(i), p_.buffers[size_t(o)].dtype);
      k.args.push_back({o, nullptr});
    }
    for (int buf : loaded) {
      if (ptrs_.count(buf)) continue;
      ptrs_[buf] = b_.arg_ptr(p_.buffers[size_t(buf)].name, p_.buffers[size_t(buf)].dtype);
      k.args.push_back({buf, nullptr});
    }
    if (checks) {  // index range checks report into the plan's error record
      error_record_ = b_.arg_ptr("index_error", kInt64);
      k.args.push_back({kIndexErrorArg, nullptr});
    }
    for (const std::string& s : sizes) {
      symbols_[s] = b_.arg_sym(s);
      k.args.push_back({-1, sym::symbol(s)});
    }
    // Every index expression of the node, for dim collapsing.
    std::vector<ExprPtr> exprs;
    for (int o : n_.outputs)  // (a row group's outputs are over its rows, or its rows' elements)
      exprs.push_back(n_.stages.empty() ? offset_of(n_.vars, p_.buffers[size_t(o)].strides) : row_offset(p_, n_, o));
    walk_bodies([&](const Value* v) {
      if (v->index) exprs.push_back(v->index);
    });
    const Buffer& out = p_.buffers[size_t(n_.outputs[0])];
    // A scan's programs cover its other variables (the scanned one is its loop's, uncollapsed).
    std::vector<ExprPtr> outer_vars = n_.vars;
    SymShape outer_ranges = n_.ranges;
    if (n_.kind == NodeKind::Scan) {
      outer_vars.erase(outer_vars.begin() + n_.scan_axis);
      outer_ranges.erase(outer_ranges.begin() + n_.scan_axis);
    }
    Collapsed x = collapse(outer_vars, outer_ranges, exprs, "x", subst_);
    Collapsed r = collapse(n_.reduction_vars, n_.reduction_ranges, exprs, "r", subst_);
    xvars_ = x.vars, xranges_ = x.ranges, rvars_ = r.vars, rranges_ = r.ranges;
    const ExprPtr xnumel = product(outer_ranges);
    int64_t xblock = 1;  // (the tiled pointwise kernel sets its grid itself)
    if (n_.kind == NodeKind::Pointwise && xvars_.size() > 1) {
      k.grid = tiled_pointwise(exprs);
    } else if (n_.kind == NodeKind::Pointwise) {
      xblock = block("XBLOCK", block_for(n_.ranges, 1024));
      pointwise(b_.constexpr_int("XBLOCK", xblock));
    } else if (n_.kind == NodeKind::Scan) {
      // Scanning along the contiguous dim, the lanes are a row apart: a few (their cache lines
      // stay in L1 across the steps); scanning across rows, lanes are neighbours: many.
      const bool along_rows = sym::statically_known_equal(out.strides.at(size_t(n_.scan_axis)), SymInt(1));
      xblock = block("XBLOCK", block_for(outer_ranges, along_rows ? 4 : 64));
      scan(b_.constexpr_int("XBLOCK", xblock), outer_ranges, out);
    } else if (n_.reduce == tile::ReduceKind::Argmax || n_.reduce == tile::ReduceKind::Argmin) {
      // Two carried blocks (values and positions) and more work per element than a sum: blocks
      // of at most 1024 elements keep them in L1 (measured: 4096 was several times slower).
      const int64_t rblock = block("RBLOCK", block_for(n_.reduction_ranges, 64));
      xblock = block("XBLOCK", block_for(n_.ranges, std::max<int64_t>(1, 1024 / rblock)));
      arg_reduction(b_.constexpr_int("XBLOCK", xblock), b_.constexpr_int("RBLOCK", rblock), out);
    } else if ((columns_ = column_reduction())) {
      // Columns (a bias gradient's sum over the rows of [N, C]): the block is [RBLOCK, XBLOCK]
      // with the contiguous columns as its inner dim, accumulated row by row (vectorized over the
      // columns, no strided loads); 64 columns per program leave enough programs for the threads.
      xblock = block("XBLOCK", block_for(n_.ranges, 64));
      const int64_t rblock = block("RBLOCK", block_for(n_.reduction_ranges, std::max<int64_t>(1, 4096 / xblock)));
      reduction(b_.constexpr_int("XBLOCK", xblock), b_.constexpr_int("RBLOCK", rblock), false);
    } else {
      // Persistent when the row fits in a block: loaded once, every stage computes on it.
      int64_t rnumel = 0;
      const bool persistent = sym::is_const(product(n_.reduction_ranges), &rnumel) && rnumel > 0 && rnumel <= kPersistentRow;
      const int64_t rblock = persistent ? pow2_at_least(rnumel) : block("RBLOCK", block_for(n_.reduction_ranges, 1024));
      // A looped row group reads each row once per stage: one row per program keeps it in cache.
      const bool one_row = !persistent && n_.stages.size() > 1;
      xblock = block("XBLOCK", one_row ? 1 : block_for(n_.ranges, std::max<int64_t>(1, 4096 / rblock)));
      reduction(b_.constexpr_int("XBLOCK", xblock), b_.constexpr_int("RBLOCK", rblock), persistent);
    }
    if (!k.grid) k.grid = cdiv(xnumel, xblock);
    k.program = b_.finish();
    return k;
  }

 private:
  template <class F>
  void walk_bodies(F&& f) {
    std::set<const Value*> seen;
    std::function<void(const Value*)> go = [&](const Value* x) {
      if (!seen.insert(x).second) return;
      for (const Value* a : x->args) go(a);
      f(x);
    };
    for (const Value* b : n_.bodies) go(b);
  }

  // A flat index (i64 block) split into the index variables of `ranges`.
  void bind_vars(const Val& flat, const std::vector<ExprPtr>& vars, const SymShape& ranges) {
    for (size_t d = 0; d < vars.size(); ++d) {
      if (sym::statically_known_equal(ranges[d], SymInt(1))) {  // a size-1 dim: its index is 0
        vars_[vars[d]] = b_.constant(kiln::Scalar(int64_t(0)), kInt64);
        continue;
      }
      SymShape rest(ranges.begin() + long(d) + 1, ranges.end());
      const ExprPtr inner = product(rest);
      Val v = flat;
      int64_t c = 0;
      if (!(sym::is_const(inner, &c) && c == 1)) v = b_.floor_divide(v, expr(inner));
      if (d > 0) v = v % expr(ranges[d].as_expr());
      vars_[vars[d]] = v;
    }
  }

  void pointwise(int64_t xblock) {
    Val lin = b_.program_id(0).to(kInt64) * xblock + b_.arange(0, xblock).to(kInt64);
    if (needs_mask(n_.ranges, xblock)) mask_ = lin < expr(product(n_.ranges));
    bind_vars(lin, xvars_, xranges_);
    for (size_t i = 0; i < n_.bodies.size(); ++i) {
      const int o = n_.outputs[i];
      const Buffer& out = p_.buffers[size_t(o)];
      store(o, index(offset_of(n_.vars, out.strides)), value(n_.bodies[i]).to(out.dtype), mask_);
    }
  }

  // A reduction, or a row group's stages in order (Node::stages), over XBLOCK rows ([XBLOCK, 1])
  // per program. Persistent: the row is one [1, RBLOCK] block, loaded once for all stages.
  // Looped: each reduction loops over the row in blocks of RBLOCK, combining into an [XBLOCK,
  // RBLOCK] accumulator reduced along axis 1 at the end; the epilogues per element loop once more.
  // A row's values (reductions, epilogues per row) stay in registers for the later stages.
  // A pointwise node whose index space does not collapse to one dim (a broadcast operand, a
  // strided view): blocks of [YBLOCK, XBLOCK] over (the outer dims flattened, the innermost dim),
  // so the innermost index is the block's lane (no div/mod per element: a contiguous, vectorized
  // inner loop) and the outer dims split once per row. Returns the grid.
  //
  // Where the index math divides the innermost variable (a view splitting the last dim, as
  // [B, T, H * D] read as [B, H, T, D]), the block is the largest power of two dividing every such
  // divisor, and the variable is xblock * q + l (q the program's block, l the lane): sym then
  // reduces (xblock * q + l) // D to a per-program scalar and the mod to a scalar plus l, so the loads
  // stay contiguous instead of a gather with a div and a mod per lane.
  ExprPtr tiled_pointwise(const std::vector<ExprPtr>& exprs) {
    const SymShape outer(xranges_.begin(), xranges_.end() - 1);
    const SymShape inner = {xranges_.back()};
    const std::vector<ExprPtr> outer_vars(xvars_.begin(), xvars_.end() - 1);
    const int64_t chosen = block_for(inner, 1024);
    const int64_t split = lane_split_block(exprs, chosen);
    const int64_t xblock = b_.constexpr_int("XBLOCK", block("XBLOCK", split ? split : chosen));
    const int64_t yblock = b_.constexpr_int("YBLOCK", block("YBLOCK", block_for(outer, std::max<int64_t>(1, 1024 / xblock))));
    const ExprPtr xprograms = cdiv(product(inner), xblock);
    Val pid = b_.program_id(0).to(kInt64), xp = expr(xprograms);
    Val ylin = (b_.floor_divide(pid, xp) * yblock + b_.arange(0, yblock).to(kInt64)).expand_dims(1);
    const bool lane_split = split && xblock == split;  // (split divides the extent: no mask)
    Val q, lanes, xlin;
    if (lane_split) {
      q = pid % xp;
      lanes = b_.arange(0, xblock).to(kInt64).expand_dims(0);
    } else {
      xlin = ((pid % xp) * xblock + b_.arange(0, xblock).to(kInt64)).expand_dims(0);
    }
    if (needs_mask(outer, yblock)) mask_ = ylin < expr(product(outer));
    if (needs_mask(inner, xblock)) mask_ = mask_.defined() ? mask_ & (xlin < expr(product(inner))) : xlin < expr(product(inner));
    bind_vars(ylin, outer_vars, outer);
    if (lane_split) {
      const ExprPtr qs = sym::index("xq", xprograms), ls = sym::index("xl", sym::constant(xblock));
      const std::map<ExprPtr, ExprPtr> by{{xvars_.back(), sym::add(sym::mul(sym::constant(xblock), qs), ls)}};
      for (auto& [var, e] : subst_) e = substitute(e, by);
      vars_[qs] = q;
      vars_[ls] = lanes;
    } else {
      vars_[xvars_.back()] = xlin;
    }
    for (size_t i = 0; i < n_.bodies.size(); ++i) {
      const int o = n_.outputs[i];
      const Buffer& out = p_.buffers[size_t(o)];
      store(o, index(offset_of(n_.vars, out.strides)), value(n_.bodies[i]).to(out.dtype), mask_);
    }
    return sym::mul(cdiv(product(outer), yblock), xprograms);
  }

  // tiled_pointwise's lane split: the largest power of two, at most `chosen` and at least 16,
  // dividing the constant divisor of every floor division and mod of the innermost variable in
  // the node's index expressions; 0 when there is none (or the block would be smaller).
  int64_t lane_split_block(const std::vector<ExprPtr>& exprs, int64_t chosen) const {
    const ExprPtr& x = xvars_.back();
    int64_t n = 0;
    if (!sym::is_const(xranges_.back().as_expr(), &n) || n <= 0) return 0;
    int64_t block = chosen;
    bool any = false;
    std::function<void(const ExprPtr&)> go = [&](const ExprPtr& e) {
      for (const ExprPtr& a : e->args) go(a);
      if ((e->kind != sym::Kind::FloorDiv && e->kind != sym::Kind::Mod) || !contains(e->args[0], x)) return;
      int64_t d = 0;
      if (!sym::is_const(e->args[1], &d) || d <= 0) {
        block = 0;
        return;
      }
      any = true;
      while (block > 1 && d % block) block /= 2;
    };
    for (const ExprPtr& e : exprs) go(substitute(e, subst_));
    return any && block >= 16 && n % block == 0 ? block : 0;
  }

  static ExprPtr cdiv(const ExprPtr& n, int64_t block) {
    return sym::floordiv(sym::add(n, sym::constant(block - 1)), sym::constant(block));
  }

  // Whether a reduction (or a group of them, as a layer norm backward's weight and bias sums)
  // reads along its reduced dim with a stride and along its (last) output dim contiguously:
  // every load that moves with both steps 1 along the columns and not along the rows.
  bool column_reduction() const {
    if (n_.kind != NodeKind::Reduction || xvars_.empty() || rvars_.empty()) return false;
    const ExprPtr& x = xvars_.back();
    bool any = false, ok = true;
    std::set<const Value*> seen;
    std::function<void(const Value*)> go = [&](const Value* v) {
      if (!seen.insert(v).second) return;
      for (const Value* a : v->args) go(a);
      if (v->kind != ValueKind::Load) return;
      const ExprPtr e = substitute(v->index, subst_);
      bool moves = false;
      for (const ExprPtr& r : rvars_) moves |= contains(e, r);
      if (!moves || !contains(e, x)) return;  // (a value per row, as a layer norm's statistics: broadcast along the columns)
      const ExprPtr cx = coefficient(e, x), cr = coefficient(e, rvars_.back());
      any = true;
      ok &= cx && cr && sym::statically_known_equal(cx, sym::constant(1)) && !sym::statically_known_equal(cr, sym::constant(1));
    };
    for (const Value* b : n_.bodies) go(b);
    return any && ok;
  }

  void reduction(int64_t xblock, int64_t rblock, bool persistent) {
    // The block is [XBLOCK, RBLOCK] (rows of the output, the reduced elements along them), or for
    // a column reduction [RBLOCK, XBLOCK]: `along` is the reduced axis.
    const int along = columns_ ? 0 : 1, across = 1 - along;  // xlin is [XBLOCK, 1] or [1, XBLOCK]
    const std::vector<int64_t> block = columns_ ? std::vector<int64_t>{rblock, xblock} : std::vector<int64_t>{xblock, rblock};
    Val xlin = (b_.program_id(0).to(kInt64) * xblock + b_.arange(0, xblock).to(kInt64)).expand_dims(along);
    if (needs_mask(n_.ranges, xblock)) xmask_ = xlin < expr(product(n_.ranges));
    const bool rmasked = needs_mask(n_.reduction_ranges, rblock);
    bind_vars(xlin, xvars_, xranges_);
    Val rn = expr(product(n_.reduction_ranges));
    auto stage = [&](size_t i) { return n_.stages.empty() ? std::optional(n_.reduce) : n_.stages[i]; };
    auto rows = [&](Val iv) {  // the reduction variables of the block starting at iv
      Val rlin = (iv + b_.arange(0, rblock).to(kInt64)).expand_dims(across);  // (along the other axis)
      mask_ = rmasked ? (xmask_.defined() ? xmask_ & (rlin < rn) : rlin < rn) : xmask_;
      bind_vars(rlin, rvars_, rranges_);
    };
    auto reduced = [&](size_t i, tile::ReduceKind k, Val v) {  // v's block, masked lanes at the identity
      const DType acc = n_.bodies[i]->dtype;
      if (rmasked) v = b_.where(mask_, v, Operand(identity(k, acc)));
      v = v.to(acc);
      return v.shape() == block ? v : v.broadcast_to(block);
    };
    auto store_body = [&](size_t i, const Val& v) {
      const int o = n_.outputs[i];
      const bool row = per_row(p_, n_, i);
      const Val stored = v.to(p_.buffers[size_t(o)].dtype);
      if (row) row_values_[o] = stored;
      store(o, index(row_offset(p_, n_, o)), stored, row ? xmask_ : mask_);
    };
    if (persistent) rows(b_.constant(kiln::Scalar(int64_t(0)), kInt64));
    for (size_t i = 0; i < n_.bodies.size(); ++i) {
      const std::optional<tile::ReduceKind> k = stage(i);
      if (persistent) {
        if (k) store_body(i, b_.reduce(*k, reduced(i, *k, value(n_.bodies[i])), along).expand_dims(along));
        else store_body(i, value(n_.bodies[i]));
      } else if (k && online_max_sum(i)) {
        // One loop for the row's max and its sum of exp(f - max): per block the block's max
        // raises the running one and the lanes' sums are rescaled by exp(old - new), so the row
        // is read once (softmax, log_softmax, cross_entropy). The max is exact; the sum differs
        // from two passes by rounding only.
        const DType acc = n_.bodies[i]->dtype;
        const Value* max_load = n_.bodies[i + 1]->args[0]->args[1];  // the sum's read of the max
        const std::vector<int64_t> row = columns_ ? std::vector<int64_t>{1, xblock} : std::vector<int64_t>{xblock, 1};
        Val m0 = b_.full(row, identity(tile::ReduceKind::Max, acc), acc), s0 = b_.full(block, kiln::Scalar(0.0), acc);
        std::vector<Val> res = b_.for_loop(0, rn, rblock, {m0, s0}, [&](Val iv, const std::vector<Val>& carried) {
          Scope inner(*this);
          rows(iv);
          const Val& m = carried[0];
          const Val mn = b_.call(ops::OpId::maximum, {m, b_.reduce(tile::ReduceKind::Max, reduced(i, tile::ReduceKind::Max, value(n_.bodies[i])), along).expand_dims(along)}).to(acc);
          // (equal maxima, -inf or inf both, scale by 1: their difference is NaN)
          const Val scale = b_.call(ops::OpId::exp, {b_.where(m == mn, Operand(kiln::Scalar(0.0)), m - mn)}).to(acc);
          values_[max_load] = mn;
          const Val e = reduced(i + 1, tile::ReduceKind::Sum, value(n_.bodies[i + 1]));
          return std::vector<Val>{mn, (carried[1] * scale + e).to(acc)};
        });
        store_body(i, res[0]);
        store_body(i + 1, b_.reduce(tile::ReduceKind::Sum, res[1], along).expand_dims(along));
        ++i;
      } else if (k) {
        const DType acc = n_.bodies[i]->dtype;
        Val acc0 = b_.full(block, identity(*k, acc), acc);
        std::vector<Val> res = b_.for_loop(0, rn, rblock, {acc0}, [&](Val iv, const std::vector<Val>& carried) {
          Scope inner(*this);
          rows(iv);
          return std::vector<Val>{b_.call(combine_op(*k), {carried[0], reduced(i, *k, value(n_.bodies[i]))}).to(acc)};
        });
        store_body(i, b_.reduce(*k, res[0], along).expand_dims(along));
      } else if (per_row(p_, n_, i)) {
        mask_ = xmask_;
        store_body(i, value(n_.bodies[i]));
      } else {  // this and the next epilogues per element: one more pass over the row
        size_t end = i;
        while (end < n_.bodies.size() && !stage(end) && !per_row(p_, n_, end)) ++end;
        b_.for_loop(0, rn, rblock, {}, [&](Val iv, const std::vector<Val>&) {
          Scope inner(*this);
          rows(iv);
          for (size_t j = i; j < end; ++j) store_body(j, value(n_.bodies[j]));
          return std::vector<Val>{};
        });
        i = end - 1;
      }
    }
  }

  // Whether a looped row group's stages i and i + 1 are a row's max of f and the sum of
  // exp(f - that max) (floating): one loop computes both (reduction()).
  bool online_max_sum(size_t i) const {
    if (n_.stages.empty() || i + 1 >= n_.bodies.size() || n_.stages[i] != tile::ReduceKind::Max ||
        n_.stages[i + 1] != tile::ReduceKind::Sum)
      return false;
    const Value *f = n_.bodies[i], *e = n_.bodies[i + 1];
    if (!is_floating(f->dtype) || e->dtype != f->dtype || e->kind != ValueKind::Call || e->op != ops::OpId::exp) return false;
    const Value* d = e->args[0];
    if (d->kind != ValueKind::Call || d->op != ops::OpId::sub || d->args.size() != 2 || d->args[0] != f) return false;
    const Value* m = d->args[1];
    return m->kind == ValueKind::Load && m->buffer == n_.outputs[i] && m->dtype == f->dtype;
  }

  static ops::OpId combine_op(tile::ReduceKind k) {
    return k == tile::ReduceKind::Sum    ? ops::OpId::add
           : k == tile::ReduceKind::Prod ? ops::OpId::mul
           : k == tile::ReduceKind::Max  ? ops::OpId::maximum
                                         : ops::OpId::minimum;
  }

  // Values built inside a loop's region live there: the scope restores what the kernel defined.
  struct Scope {
    Emitter& e;
    std::map<ExprPtr, Val> vars, exprs;
    std::map<const Value*, Val> values;
    Val mask;
    explicit Scope(Emitter& em) : e(em), vars(em.vars_), exprs(em.exprs_), values(em.values_), mask(em.mask_) {}
    ~Scope() { e.vars_ = vars, e.exprs_ = exprs, e.values_ = values, e.mask_ = mask; }
  };

  // argmax / argmin: per lane of the [XBLOCK, RBLOCK] block the best value so far and its flat
  // reduced position (a later position replaces it only when strictly better, or a NaN over a
  // number: the first best wins, a NaN beats everything); then across the lanes the best value
  // and the smallest position holding it.
  void arg_reduction(int64_t xblock, int64_t rblock, const Buffer& out) {
    Val xlin = (b_.program_id(0).to(kInt64) * xblock + b_.arange(0, xblock).to(kInt64)).expand_dims(1);
    Val xmask;
    if (needs_mask(n_.ranges, xblock)) xmask = xlin < expr(product(n_.ranges));
    const bool rmasked = needs_mask(n_.reduction_ranges, rblock);
    bind_vars(xlin, xvars_, xranges_);
    const bool is_max = n_.reduce == tile::ReduceKind::Argmax;
    const DType vd = n_.bodies[0]->dtype;
    const bool nan = is_floating(vd);
    const kiln::Scalar init = identity(is_max ? tile::ReduceKind::Max : tile::ReduceKind::Min, vd);
    Val rn = expr(product(n_.reduction_ranges));
    auto outer_vars = vars_;
    auto outer_exprs = exprs_;
    std::vector<Val> res = b_.for_loop(
        0, rn, rblock, {b_.full({xblock, rblock}, init, vd), b_.full({xblock, rblock}, kiln::Scalar(int64_t(0)), kInt64)},
        [&](Val iv, const std::vector<Val>& carried) {
          vars_ = outer_vars;
          exprs_ = outer_exprs;
          values_.clear();
          Val rlin = (iv + b_.arange(0, rblock).to(kInt64)).expand_dims(0);
          mask_ = rmasked ? (xmask.defined() ? xmask & (rlin < rn) : rlin < rn) : xmask;
          bind_vars(rlin, rvars_, rranges_);
          const Val v = value(n_.bodies[0]), &best = carried[0], &at = carried[1];
          Val better = is_max ? v > best : v < best;
          if (nan) better = better | ((v != v) & (best == best));
          if (rmasked) better = better & (rlin < rn);
          return std::vector<Val>{b_.where(better, v, best), b_.where(better, rlin + b_.full({xblock, rblock}, kiln::Scalar(int64_t(0)), kInt64), at)};
        });
    vars_ = outer_vars;
    exprs_ = outer_exprs;
    const Val& best = res[0];
    Val top = b_.reduce(is_max ? tile::ReduceKind::Max : tile::ReduceKind::Min, best, 1).expand_dims(1);
    Val holds = best == top;
    if (nan) {  // a NaN lane wins when there is one (whatever max / min make of NaN)
      const Val is_nan = best != best;
      Val any_nan = b_.reduce(tile::ReduceKind::Max, is_nan.to(kInt32), 1).expand_dims(1) > 0;
      holds = b_.where(any_nan, is_nan, holds);
    }
    const Val pos = b_.where(holds, res[1], Operand(kiln::Scalar(std::numeric_limits<int64_t>::max())));
    store(n_.outputs[0], index(offset_of(n_.vars, out.strides)), b_.reduce(tile::ReduceKind::Min, pos, 1).expand_dims(1).to(out.dtype), xmask);
  }

  // cumsum / cumprod / cummax / cummin: XBLOCK positions of the other variables per instance,
  // the scanned variable walked one step at a time, the running value carried and stored at
  // every step. cummax / cummin carry the best so far and its position: the value at step j
  // takes over at j = 0, when it is NaN, or when the best is not NaN and the value is as good (a
  // later equal wins), as eager.
  void scan(int64_t xblock, const SymShape& outer_ranges, const Buffer& out) {
    Val xlin = b_.program_id(0).to(kInt64) * xblock + b_.arange(0, xblock).to(kInt64);
    Val xmask;
    if (needs_mask(outer_ranges, xblock)) xmask = xlin < expr(product(outer_ranges));
    bind_vars(xlin, xvars_, xranges_);
    const DType acc = n_.bodies[0]->dtype;
    const bool sum = n_.scan == tile::ScanKind::Cumsum, prod = n_.scan == tile::ScanKind::Cumprod;
    const bool is_max = n_.scan == tile::ScanKind::Cummax;
    const Val zero = b_.full({xblock}, kiln::Scalar(int64_t(0)), kInt64);
    std::vector<Val> init = {b_.full({xblock}, sum || prod ? identity(sum ? tile::ReduceKind::Sum : tile::ReduceKind::Prod, acc) : kiln::Scalar(int64_t(0)), acc)};
    if (!sum && !prod) init.push_back(zero);
    const ExprPtr axis = n_.vars.at(size_t(n_.scan_axis));
    // 16-bit floats are stored through f32, as eager rounds them.
    const DType via = out.dtype == kFloat16 || out.dtype == kBFloat16 ? kFloat32 : out.dtype;
    auto outer_vars = vars_;
    auto outer_exprs = exprs_;
    b_.for_loop(0, expr(n_.ranges.at(size_t(n_.scan_axis)).as_expr()), 1, init, [&](Val iv, const std::vector<Val>& carried) {
      vars_ = outer_vars;
      exprs_ = outer_exprs;
      values_.clear();
      const Val j = iv.to(kInt64);
      vars_[axis] = j;
      mask_ = xmask;
      const Val v = value(n_.bodies[0]).to(acc);
      std::vector<Val> next;
      if (sum || prod) {
        next = {b_.call(sum ? ops::OpId::add : ops::OpId::mul, {carried[0], v}).to(acc)};
      } else {
        const Val& best = carried[0];
        Val take = is_max ? v >= best : v <= best;
        if (is_floating(acc)) take = (v != v) | ((best == best) & take);
        take = take | (j == 0);
        next = {b_.where(take, v, best), b_.where(take, j + zero, carried[1])};
        store(n_.outputs[1], index(offset_of(n_.vars, p_.buffers[size_t(n_.outputs[1])].strides)), next[1], mask_);
      }
      store(n_.outputs[0], index(offset_of(n_.vars, out.strides)), next[0].to(via).to(out.dtype), mask_);
      return next;
    });
    vars_ = outer_vars;
    exprs_ = outer_exprs;
  }

  using Operand = tile::Operand;

  void store(int buffer, const Val& offset, const Val& v, const Val& mask) {
    const Val ptr = ptrs_.at(buffer) + offset;
    if (mask.defined()) b_.store(ptr, v, mask);
    else b_.store(ptr, v);
  }

  // A power-of-two block for an extent: the largest (up to `most`) dividing it when it is static,
  // else the extent's hint rounded up.
  // The block size `chosen` unless the caller gave one for `name` (max-autotune's candidates).
  int64_t block(const std::string& name, int64_t chosen) const {
    auto it = blocks_.find(name);
    return it == blocks_.end() ? chosen : it->second;
  }
  static int64_t block_for(const SymShape& extent, int64_t most) {
    int64_t n = 0;
    if (sym::is_const(product(extent), &n) && n > 0) {
      for (int64_t b = std::min(most, pow2_at_least(n)); b >= std::min<int64_t>(most, 64); b /= 2)
        if (n % b == 0) return b;
    }
    return std::clamp<int64_t>(pow2_at_least(hint_of(extent)), 1, most);
  }
  static bool needs_mask(const SymShape& extent, int64_t block) {
    return !sym::statically_known_multiple_of(product(extent), sym::constant(block));
  }

  // An index expression of the node (over its own variables) in the collapsed variables.
  Val index(const ExprPtr& e) { return expr(substitute(e, subst_)); }

  // An index expression as i64 tile values.
  Val expr(const ExprPtr& e) {
    auto it = exprs_.find(e);
    if (it != exprs_.end()) return it->second;
    Val v;
    int64_t c;
    switch (e->kind) {
      case sym::Kind::Const:
        sym::is_const(e, &c);
        v = b_.constant(kiln::Scalar(c), kInt64);
        break;
      case sym::Kind::Symbol:
        if (e->extent) {
          auto vi = vars_.find(e);
          KILN_CHECK(vi != vars_.end(), "internal: inductor: index variable ", e->name, " is not bound in ", n_.name);
          v = vi->second;
        } else {
          v = symbols_.at(e->name);
        }
        break;
      case sym::Kind::Add:
        v = expr(e->args[0]);
        for (size_t i = 1; i < e->args.size(); ++i) v = v + expr(e->args[i]);
        break;
      case sym::Kind::Mul:
        v = expr(e->args[0]);
        for (size_t i = 1; i < e->args.size(); ++i) v = v * expr(e->args[i]);
        break;
      case sym::Kind::FloorDiv: v = b_.floor_divide(expr(e->args[0]), expr(e->args[1])); break;
      case sym::Kind::Mod: v = expr(e->args[0]) % expr(e->args[1]); break;
      case sym::Kind::Min: v = b_.minimum(expr(e->args[0]), expr(e->args[1])); break;
      case sym::Kind::Max: v = b_.maximum(expr(e->args[0]), expr(e->args[1])); break;
    }
    return exprs_[e] = v;
  }

  // The index e of an indirect Load / Index x: its gather variables g<k> bound to its args'
  // values for this expression only (another load's g0 is another value).
  Val indirect(const Value* x, const ExprPtr& e) {
    if (gather_count(*x) == 0) return expr(e);
    std::vector<Val> at;
    for (size_t k = 0; k < gather_count(*x); ++k) at.push_back(value(x->args[k]).to(kInt64));
    const auto vars = vars_;
    const auto exprs = exprs_;
    for (size_t k = 0; k < at.size(); ++k) {
      // (the variable's extent, as the index mentions it)
      std::function<void(const ExprPtr&)> bind = [&](const ExprPtr& s) {
        size_t j;
        if (is_gather_var(s, &j) && j == k) vars_[s] = at[k];
        for (const ExprPtr& c : s->args) bind(c);
      };
      bind(e);
    }
    const Val v = expr(e);  // (exprs_ holds no g<k> outside this function: they are dropped here)
    vars_ = vars;
    exprs_ = exprs;
    return v;
  }
  // An index range check: its "in range" value; the lanes (in the node's range) where it is false
  // store [op + 1, index, size] into the error record (index_error.h).
  Val check(const Value* x) {
    const Val ok = value(x->args[0]);
    const Val m = moved_by_r(x) ? mask_ : xmask_;
    Val bad = m.defined() ? (!ok) & m : !ok;
    const Val index = b_.where(bad, value(x->args[1]).to(kInt64), Operand(kiln::Scalar(int64_t(0))));
    const std::vector<int64_t> shape = index.shape();
    if (bad.shape() != shape) bad = bad.broadcast_to(shape);
    const auto slot = [&](IndexErrorSlot s) { return error_record_ + b_.full(shape, kiln::Scalar(int64_t(s)), kInt64); };
    b_.store(slot(kErrorIndex), index, bad);
    b_.store(slot(kErrorSize), b_.where(bad, value(x->args[2]).to(kInt64), Operand(kiln::Scalar(int64_t(0)))), bad);
    b_.store(slot(kErrorOp), b_.full(shape, kiln::Scalar(int64_t(x->op) + 1), kInt64), bad);
    return ok;
  }
  // Whether x changes along the reduction variables (an indirect load: its index values too).
  bool moved_by_r(const Value* x) {
    if (rvars_.empty()) return true;
    auto it = moved_.find(x);
    if (it != moved_.end()) return it->second;
    bool m = false;
    if (x->index) {
      const ExprPtr e = substitute(x->index, subst_);
      for (const ExprPtr& r : rvars_) m |= contains(e, r);
    }
    for (const Value* a : x->args) m = m || moved_by_r(a);
    return moved_[x] = m;
  }

  Val value(const Value* x) {
    auto it = values_.find(x);
    if (it != values_.end()) return it->second;
    Val v;
    switch (x->kind) {
      case ValueKind::Load: {
        auto row = row_values_.find(x->buffer);
        if (row != row_values_.end()) {  // an earlier stage's value of this row (fusion.cc checked the index)
          v = row->second;
          break;
        }
        const ExprPtr e = substitute(x->index, subst_);
        const Val at = indirect(x, e);
        // A load the reduction variables do not move needs only the rows' mask (and is one per row).
        const bool moves = moved_by_r(x);
        Val m = moves ? mask_ : xmask_;
        if (x->masked) {  // (its own mask: where the index may leave the buffer)
          Val own = value(x->args.back());
          m = m.defined() ? m & own : own;
        }
        v = m.defined() ? b_.load(ptrs_.at(x->buffer) + at, m) : b_.load(ptrs_.at(x->buffer) + at);
        break;
      }
      case ValueKind::Constant: v = b_.constant(x->number, x->dtype); break;
      case ValueKind::Index: v = indirect(x, substitute(x->index, subst_)).to(x->dtype); break;
      case ValueKind::Cast: v = value(x->args[0]).to(x->dtype); break;
      case ValueKind::Check: v = check(x); break;
      case ValueKind::Call: {
        std::vector<Operand> args;
        for (const Value* a : x->args) args.emplace_back(value(a));
        v = b_.call(x->op, std::move(args), x->rounding).to(x->dtype);
        break;
      }
    }
    return values_[x] = v;
  }

  const Program& p_;
  const Node& n_;
  tile::Builder b_;
  const BlockSizes& blocks_;
  std::map<int, Val> ptrs_;
  std::map<std::string, Val> symbols_;
  std::map<ExprPtr, Val> vars_, exprs_;
  std::map<const Value*, Val> values_;
  std::map<const Value*, bool> moved_;  // moved_by_r's answers
  Val error_record_;                    // the index_error parameter (kernels with checks)
  Val mask_, xmask_;                    // the lanes in range; reductions: xmask_, the rows'
  std::map<int, Val> row_values_;       // row groups: per buffer, a row's value in registers
  std::map<ExprPtr, ExprPtr> subst_;  // the node's variables in the collapsed ones
  std::vector<ExprPtr> xvars_, rvars_;
  SymShape xranges_, rranges_;
  bool columns_ = false;  // a column reduction (column_reduction)
};

}  // namespace

GeneratedKernel emit_tile(const Program& p, const Node& n, const BlockSizes& blocks) {
  KILN_CHECK(n.kind != NodeKind::Extern, "internal: inductor: emit_tile of an extern node");
  return Emitter(p, n, blocks).run();
}

}  // namespace kiln::inductor
