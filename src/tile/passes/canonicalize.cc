// Canonicalization: broadcasts, reshapes, permutes and casts that do not change their
// operand's type are removed (their uses read the operand); a view (broadcast, expand_dims,
// reshape, permute) of a splat is a splat of the scalar, of a constant block a constant; a splat
// of a constant is a constant block; two reshapes, broadcasts or permutes in a row become one.
#include "tile/passes/passes.h"

namespace kiln::tile {
namespace {

bool is_view(OpCode c) {
  return c == OpCode::Broadcast || c == OpCode::ExpandDims || c == OpCode::Reshape || c == OpCode::Permute;
}

bool identity_order(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != int64_t(i)) return false;
  return true;
}

void erase_replaced(Region& r, const std::map<Value*, Value*>& with) {
  std::vector<std::unique_ptr<Op>> kept;
  for (auto& op : r.ops) {
    if (op->results.size() == 1 && with.count(op->results[0]) && !op->has_side_effects()) continue;
    for (Region& sub : op->regions) erase_replaced(sub, with);
    kept.push_back(std::move(op));
  }
  r.ops = std::move(kept);
}

}  // namespace

void canonicalize(Program& p) {
  std::map<Value*, Value*> with;
  auto current = [&](Value* v) {
    for (auto it = with.find(v); it != with.end(); it = with.find(v)) v = it->second;
    return v;
  };
  walk_mutable(p.body, [&](Op& op) {
    for (Value*& v : op.operands) v = current(v);
    if (op.results.size() != 1) return;
    Value* out = op.result();
    const bool identity_cast = op.code == OpCode::Cast && op.operands[0]->type == out->type;
    const bool identity_view = (op.code == OpCode::Broadcast || op.code == OpCode::Reshape) && op.operands[0]->type == out->type;
    const bool identity_perm = op.code == OpCode::Permute && identity_order(op.order);
    if (identity_cast || identity_view || identity_perm) {
      with[out] = op.operands[0];
      return;
    }
    const Op* src = op.operands.empty() ? nullptr : op.operands[0]->def;
    if (op.code == OpCode::Splat && src && src->code == OpCode::Constant) {
      op.code = OpCode::Constant;
      op.value = src->value;
      op.operands.clear();
      return;
    }
    if (!is_view(op.code) || !src) return;
    if (src->code == OpCode::Splat) {  // a view of a splat: the splat, in the view's shape
      op.code = OpCode::Splat;
      op.operands = {src->operands[0]};
    } else if (src->code == OpCode::Constant) {
      op.code = OpCode::Constant;
      op.value = src->value;
      op.operands.clear();
    } else if (src->code == op.code && op.code != OpCode::ExpandDims) {
      if (op.code == OpCode::Permute) {  // order of the composition: out[i] = in[src.order[op.order[i]]]
        std::vector<int64_t> order;
        for (int64_t d : op.order) order.push_back(src->order[size_t(d)]);
        op.order = order;
      }
      op.operands = {src->operands[0]};
      if (op.code == OpCode::Permute && identity_order(op.order)) with[out] = op.operands[0];
      else if (op.code != OpCode::Permute && op.operands[0]->type == out->type) with[out] = op.operands[0];
    }
  });
  replace_uses(p, with);
  erase_replaced(p.body, with);
}

}  // namespace kiln::tile
