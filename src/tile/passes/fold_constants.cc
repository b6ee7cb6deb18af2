// Constant folding: a pointwise op or cast whose operands are all constants (scalars, or blocks
// filled with one number) becomes a constant, computed by the same kiln::scalar function the
// generated code would call (tile/prims.h), so folding never changes a result. The op is
// rewritten in place; its now unused operands are left for dce.
#include "tile/passes/passes.h"
#include "tile/prims.h"

namespace kiln::tile {

void fold_constants(Program& p) {
  std::map<const Value*, Scalar> known;
  walk_mutable(p.body, [&](Op& op) {
    if (op.code == OpCode::Constant) {
      known[op.result()] = op.value;
      return;
    }
    if (op.code != OpCode::Pointwise && op.code != OpCode::Cast) return;
    std::vector<Scalar> args;
    for (const Value* v : op.operands) {
      auto it = known.find(v);
      if (it == known.end()) return;
      args.push_back(it->second);
    }
    Scalar value;
    if (op.code == OpCode::Cast) {
      value = eval_cast(args[0], op.operands[0]->type.dtype, op.result()->type.dtype);
    } else {
      const DType d = op.operands[op.prim == ops::OpId::where ? 1 : 0]->type.dtype;
      value = eval_prim(op.prim, op.rounding, d, args);
    }
    op.code = OpCode::Constant;
    op.operands.clear();
    op.value = value;
    op.prim = ops::OpId::NumOps;
    op.rounding = Rounding::None;
    known[op.result()] = value;
  });
}

}  // namespace kiln::tile
