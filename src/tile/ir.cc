// The tile IR's data structures (ir.h); the verifier, printer and parser are their own files.
#include "tile/ir.h"

namespace kiln::tile {

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const char* short_name(DType d) {
  switch (d) {
    case kBool: return "b8";
    case kUInt8: return "u8";
    case kInt8: return "i8";
    case kInt16: return "i16";
    case kInt32: return "i32";
    case kInt64: return "i64";
    case kFloat16: return "f16";
    case kBFloat16: return "bf16";
    case kFloat32: return "f32";
    case kFloat64: return "f64";
  }
  return "?";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Type::str() const {
  std::string s = ptr ? std::string("ptr<") + short_name(dtype) + ">" : short_name(dtype);
  return is_block() ? s + shape_text(shape) : s;
}

std::string Origin::str() const {
  if (!known()) return op;
  std::string where = file + ":" + std::to_string(line);
  return op.empty() ? where : op + " @ " + where;
}

const char* opcode_name(OpCode c) {
  switch (c) {
    case OpCode::ProgramId: return "program_id";
    case OpCode::NumPrograms: return "num_programs";
    case OpCode::Constant: return "constant";
    case OpCode::Arange: return "arange";
    case OpCode::Splat: return "splat";
    case OpCode::Broadcast: return "broadcast";
    case OpCode::ExpandDims: return "expand_dims";
    case OpCode::Reshape: return "reshape";
    case OpCode::Permute: return "permute";
    case OpCode::AddPtr: return "addptr";
    case OpCode::Load: return "load";
    case OpCode::Store: return "store";
    case OpCode::AtomicAdd: return "atomic_add";
    case OpCode::Cast: return "cast";
    case OpCode::Pointwise: return "pointwise";
    case OpCode::Reduce: return "reduce";
    case OpCode::Scan: return "scan";
    case OpCode::Dot: return "dot";
    case OpCode::For: return "for";
    case OpCode::If: return "if";
    case OpCode::Yield: return "yield";
  }
  return "?";
}

const char* reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Prod: return "prod";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Argmax: return "argmax";
    case ReduceKind::Argmin: return "argmin";
  }
  return "?";
}

const char* scan_name(ScanKind k) {
  switch (k) {
    case ScanKind::Cumsum: return "cumsum";
    case ScanKind::Cumprod: return "cumprod";
    case ScanKind::Cummax: return "cummax";
    case ScanKind::Cummin: return "cummin";
  }
  return "?";
}

std::string Op::name() const {
  switch (code) {
    case OpCode::Pointwise: return ops::op_info(prim).name;
    case OpCode::Reduce: return reduce_name(reduce);
    case OpCode::Scan: return scan_name(scan);
    default: return opcode_name(code);
  }
}

bool Op::has_side_effects() const {
  if (code == OpCode::Store || code == OpCode::AtomicAdd) return true;
  for (const Region& r : regions)
    for (const auto& op : r.ops)
      if (op->has_side_effects()) return true;
  return false;
}

const Scalar* Meta::find(const std::string& name) const {
  for (const auto& [n, v] : constexprs)
    if (n == name) return &v;
  return nullptr;
}

Program::Program(std::string n) : name(std::move(n)) {}

Value* Program::new_value(Type t, std::string n) {
  auto v = std::make_unique<Value>();
  v->id = int(values_.size());
  v->type = std::move(t);
  v->name = std::move(n);
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Program::add_param(std::string n, ParamKind kind, Type t) {
  Value* v = new_value(std::move(t), n);
  params.push_back({std::move(n), kind, v});
  return v;
}

void walk(const Region& r, const std::function<void(const Op&)>& fn) {
  for (const auto& op : r.ops) {
    fn(*op);
    for (const Region& sub : op->regions) walk(sub, fn);
  }
}

void walk_mutable(Region& r, const std::function<void(Op&)>& fn) {
  for (auto& op : r.ops) {
    fn(*op);
    for (Region& sub : op->regions) walk_mutable(sub, fn);
  }
}

void fail_at(const std::string& op_name, const Origin& origin, const std::string& message, const std::string& hint) {
  Error::Info info;
  info.op = "tile." + op_name;
  info.message = message;
  info.hint = hint;
  if (origin.known()) {
    info.file = origin.file;
    info.line = unsigned(origin.line);
  }
  throw Error(std::move(info));
}

void fail_at(const Op& op, const std::string& message, const std::string& hint) {
  fail_at(op.name(), op.origin, message, hint);
}

}  // namespace kiln::tile
