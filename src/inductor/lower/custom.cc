// Custom tile ops (tile/op.h) whose kernel is pointwise-shaped, as functions of the index, so
// their neighbours fuse into them like into any pointwise prim (the seed's vector_add inside a
// compiled function: one kernel with the ops before and after it). Pointwise-shaped: one grid
// axis of programs each taking BLOCK consecutive elements (offsets pid * BLOCK + arange(0,
// BLOCK), masked by offsets < n where n is the element count), loads of the inputs and one store
// of the output at those offsets, and nothing but pointwise prims, casts and constants between.
// Any other kernel (loops, reductions, other offsets, dynamic sizes) stays an extern.
#include <map>
#include <set>

#include "inductor/lower/lower.h"
#include "tile/op.h"

namespace kiln::inductor {
namespace {

// What a pointwise-shaped kernel computes: per tile value of its data, how to rebuild it as a
// loop IR value of the inputs' values at an index.
class Reader {
 public:
  Reader(const tile::Program& k, size_t inputs, std::vector<int64_t> ints, int64_t numel)
      : k_(k), inputs_(inputs), ints_(std::move(ints)), numel_(numel) {
    for (size_t i = 0; i < k.params.size(); ++i) param_[k.params[i].value] = i;
  }

  // The stored value, or null when the kernel is not pointwise-shaped.
  const tile::Value* stored() {
    const tile::Op* store = nullptr;
    bool ok = true;
    for (const auto& op : k_.body.ops) {
      switch (op->code) {
        case tile::OpCode::ProgramId: ok &= op->axis == 0; break;
        case tile::OpCode::Constant:
        case tile::OpCode::Arange:
        case tile::OpCode::Splat:
        case tile::OpCode::Broadcast:
        case tile::OpCode::AddPtr:
        case tile::OpCode::Load:
        case tile::OpCode::Cast:
        case tile::OpCode::Pointwise: break;
        case tile::OpCode::Store:
          ok &= store == nullptr;
          store = op.get();
          break;
        default: ok = false;
      }
    }
    if (!ok || !store) return nullptr;
    if (pointer_of(store->operands[0]) != int(inputs_)) return nullptr;  // the output, at the offsets
    if (store->operands.size() > 2 && !in_range(store->operands[2])) return nullptr;
    return store->operands[1];
  }

  // Whether v (data) is rebuilt from loads, prims, casts and constants only.
  bool readable(const tile::Value* v) {
    if (!v->def) return false;  // a scalar parameter
    const tile::Op& op = *v->def;
    switch (op.code) {
      case tile::OpCode::Constant: return true;
      case tile::OpCode::Splat:
      case tile::OpCode::Broadcast:
      case tile::OpCode::Cast: return readable(op.operands[0]);
      case tile::OpCode::Load: {
        const int p = pointer_of(op.operands[0]);
        if (p < 0 || p >= int(inputs_)) return false;
        return op.operands.size() < 2 || in_range(op.operands[1]);  // ("other" is never read then)
      }
      case tile::OpCode::Pointwise:
        for (const tile::Value* a : op.operands)
          if (!readable(a)) return false;
        return true;
      default: return false;
    }
  }

  // The prims and casts v computes from its loads (the cost model's count).
  int prims(const tile::Value* v, std::set<const tile::Value*>& seen) const {
    if (!seen.insert(v).second || v->def->code == tile::OpCode::Load) return 0;
    int n = v->def->code == tile::OpCode::Pointwise || v->def->code == tile::OpCode::Cast ? 1 : 0;
    for (const tile::Value* a : v->def->operands) n += prims(a, seen);
    return n;
  }

  // v at index idx, loading input k through loads[k].
  const Value* read(Program& P, const tile::Value* v, const std::vector<const Value*>& loads,
                    std::map<const tile::Value*, const Value*>& memo) {
    auto it = memo.find(v);
    if (it != memo.end()) return it->second;
    const tile::Op& op = *v->def;
    const DType d = v->type.dtype;
    const Value* r = nullptr;
    switch (op.code) {
      case tile::OpCode::Constant: r = P.constant(op.value, d); break;
      case tile::OpCode::Splat:
      case tile::OpCode::Broadcast: r = read(P, op.operands[0], loads, memo); break;
      case tile::OpCode::Cast: r = P.cast(read(P, op.operands[0], loads, memo), d); break;
      case tile::OpCode::Load: r = P.cast(loads.at(size_t(pointer_of(op.operands[0]))), d); break;
      default: {
        std::vector<const Value*> args;
        for (const tile::Value* a : op.operands) args.push_back(read(P, a, loads, memo));
        r = P.call(op.prim, std::move(args), d, op.rounding);
      }
    }
    return memo[v] = r;
  }

 private:
  // An integer value as pid * a + lane * b + c (lane: the arange's index), if it is one.
  struct Affine {
    int64_t pid = 0, lane = 0, c = 0, length = 0;  // length: of the arange (0: none)
  };
  std::optional<Affine> affine(const tile::Value* v) const {
    if (!v->def || !is_integral(v->type.dtype) || v->type.rank() > 1) return std::nullopt;
    const tile::Op& op = *v->def;
    switch (op.code) {
      case tile::OpCode::ProgramId: return Affine{1, 0, 0, 0};
      case tile::OpCode::Constant:
        if (!op.value.is_int()) return std::nullopt;
        return Affine{0, 0, op.value.to_int(), 0};
      case tile::OpCode::Arange: return Affine{0, 1, op.start, op.end - op.start};
      case tile::OpCode::Splat:
      case tile::OpCode::Cast: return affine(op.operands[0]);
      case tile::OpCode::Pointwise: {
        if (op.operands.size() != 2) return std::nullopt;
        auto a = affine(op.operands[0]), b = affine(op.operands[1]);
        if (!a || !b) return std::nullopt;
        const int64_t length = std::max(a->length, b->length);
        if (op.prim == ops::OpId::add) return Affine{a->pid + b->pid, a->lane + b->lane, a->c + b->c, length};
        if (op.prim != ops::OpId::mul) return std::nullopt;
        if (a->pid == 0 && a->lane == 0) return Affine{a->c * b->pid, a->c * b->lane, a->c * b->c, length};
        if (b->pid == 0 && b->lane == 0) return Affine{b->c * a->pid, b->c * a->lane, b->c * a->c, length};
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }
  // Whether v is the element index pid * BLOCK + arange(0, BLOCK) (recording BLOCK).
  bool flat(const tile::Value* v) {
    auto a = affine(v);
    if (!a || a->length == 0 || a->lane != 1 || a->c != 0 || a->pid != a->length) return false;
    if (block_ && *block_ != a->length) return false;
    block_ = a->length;
    return true;
  }
  // The pointer parameter p of addptr(splat(p), flat offsets), or -1.
  int pointer_of(const tile::Value* ptr) {
    if (!ptr->def || ptr->def->code != tile::OpCode::AddPtr || !flat(ptr->def->operands[1])) return -1;
    const tile::Value* base = ptr->def->operands[0];
    if (base->def && base->def->code == tile::OpCode::Splat) base = base->def->operands[0];
    auto it = param_.find(base);
    return it == param_.end() || k_.params[it->second].kind != tile::ParamKind::Pointer ? -1 : int(it->second);
  }
  // Whether mask is flat offsets < n with n the element count (true for every element stored).
  bool in_range(const tile::Value* mask) {
    if (!mask->def || mask->def->code != tile::OpCode::Pointwise || mask->def->prim != ops::OpId::lt) return false;
    if (!flat(mask->def->operands[0])) return false;
    const tile::Value* n = mask->def->operands[1];
    if (n->def && n->def->code == tile::OpCode::Splat) n = n->def->operands[0];
    auto it = param_.find(n);
    if (it == param_.end() || k_.params[it->second].kind != tile::ParamKind::Int) return false;
    const size_t ints_at = inputs_ + 1;  // the parameters: inputs, the output, ints...
    const size_t i = it->second - ints_at;
    return it->second >= ints_at && i < ints_.size() && ints_[i] == numel_;
  }

 public:
  std::optional<int64_t> block_;

 private:
  const tile::Program& k_;
  size_t inputs_;
  std::vector<int64_t> ints_;
  int64_t numel_;
  std::map<const tile::Value*, size_t> param_;
};

}  // namespace

bool lower_custom(Lowering& L, const graph::Node& n) {
  auto op = std::dynamic_pointer_cast<const tile::TileOp>(ops::find_custom_op(std::get<std::string>(n.args.at(0))));
  if (!op || n.outputs.size() != 1) return false;
  if (auto* s = std::get_if<std::vector<double>>(&n.args.at(2)); s && !s->empty()) return false;
  const graph::Value* out = n.outputs[0];
  const std::vector<graph::Value*> ins = n.inputs();
  int64_t numel = 1;
  for (const SymInt& s : out->spec.sizes) {
    if (s.is_symbolic()) return false;  // (the element count must be known to read the mask)
    numel *= s.value();
  }
  TensorList fakes;
  for (const graph::Value* v : ins) {
    if (!v->spec.device.is_cpu() || v->spec.sizes.size() != out->spec.sizes.size()) return false;
    for (size_t d = 0; d < v->spec.sizes.size(); ++d)
      if (!sym::statically_known_equal(v->spec.sizes[d], out->spec.sizes[d])) return false;
    fakes.push_back(graph::fake_of(v));
  }
  const tile::TileOpDef& def = op->def();
  auto kernel = std::make_shared<tile::Program>(def.program(fakes));
  if (kernel->params.size() != ins.size() + 1 + (def.ints ? def.ints(fakes).size() : 0)) return false;
  Reader reader(*kernel, ins.size(), def.ints ? def.ints(fakes) : std::vector<int64_t>{}, numel);
  const tile::Value* value = reader.stored();
  if (!value || !reader.readable(value) || !reader.block_) return false;
  const tile::cpu::Grid grid = def.grid(fakes, kernel->meta);
  if (grid.x != (numel + *reader.block_ - 1) / *reader.block_ || grid.y != 1 || grid.z != 1) return false;

  Def d;
  d.dtype = out->spec.dtype;
  d.sizes = out->spec.sizes;
  std::set<const tile::Value*> seen;
  d.ops = reader.prims(value, seen);
  std::vector<Loader> loads;
  for (const graph::Value* v : ins) {
    loads.push_back(L.loader(v));
    d.reads_operand(L.def(v));
  }
  Program& P = L.prog();
  auto shared = std::make_shared<Reader>(std::move(reader));
  const DType od = d.dtype;
  d.fn = [&P, kernel, shared, loads, value, od](const Index& idx) {
    std::vector<const Value*> in;
    for (const Loader& l : loads) in.push_back(l(idx));
    std::map<const tile::Value*, const Value*> memo;
    return P.cast(shared->read(P, value, in, memo), od);
  };
  L.set(out, std::move(d));
  return true;
}

}  // namespace kiln::inductor
