// The C-like emitter (c_like.h): the walk over a program shared by the C++ and CUDA backends.
#include "tile/emit/c_like.h"

#include <cctype>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <set>

#include "tile/prims.h"

namespace kiln::tile {
namespace {

// A program's blocks live on its stack (one frame per program instance); beyond this the kernel
// is rejected rather than risking a stack overflow in a worker thread.
constexpr int64_t kStackBudget = 4 << 20;

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  // A dim of size 1 is never stepped along: its stride is irrelevant; 0 keeps views comparable.
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 1) s[d] = 0;
  return s;
}

bool same_strides(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::vector<int64_t>& shape) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && a[d] != b[d]) return false;
  return true;
}

std::string affine(const std::vector<int64_t>& strides, const std::vector<std::string>& idx) {
  std::string s;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0) continue;
    s += (s.empty() ? "" : " + ") + (strides[d] == 1 ? idx[d] : idx[d] + " * " + std::to_string(strides[d]));
  }
  return s.empty() ? "0" : s;
}

bool reserved(const std::string& n) {
  static const std::set<std::string> words = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "decltype", "default", "delete", "do", "double", "else", "enum", "explicit",
      "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
      "namespace", "new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
      "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
      "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void",
      "volatile", "while", "xor", "ks", "std", "main", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
      "uint16_t", "uint32_t", "uint64_t", "INFINITY", "NAN"};
  if (words.count(n) || n.rfind("kiln", 0) == 0 || n[0] == '_') return true;
  // v12 and b12 are the names of numbered values and their blocks.
  if (n.size() > 1 && (n[0] == 'v' || n[0] == 'b')) {
    bool digits = true;
    for (size_t i = 1; i < n.size(); ++i) digits = digits && std::isdigit(static_cast<unsigned char>(n[i]));
    if (digits) return true;
  }
  return false;
}

}  // namespace

// --- CodeWriter

void CodeWriter::line(const std::string& s) {
  if (!s.empty()) text_.append(size_t(2 * depth_), ' ') += s;
  text_ += "\n";
}
void CodeWriter::open(const std::string& s) {
  line(s.empty() ? "{" : s + " {");
  ++depth_;
}
void CodeWriter::close(const std::string& s) {
  --depth_;
  line(s);
}
void CodeWriter::middle(const std::string& s) {
  --depth_;
  line(s);
  ++depth_;
}

// --- names, types, literals

std::string CLikeEmitter::cname(const Value* v) const {
  const std::string& n = names_.at(v);
  if (std::isdigit(static_cast<unsigned char>(n[0]))) return "v" + n;
  std::string c;
  for (char ch : n) c += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ? ch : '_';
  return reserved(c) ? c + "_" : c;
}

std::string CLikeEmitter::array_name(const Value* v) const {
  const std::string& n = names_.at(v);
  if (std::isdigit(static_cast<unsigned char>(n[0]))) return "b" + n;
  return cname(v) + "_b";
}

std::string CLikeEmitter::compute_type(DType d) const {
  switch (d) {
    case kBool: return "bool";
    case kUInt8: return "uint8_t";
    case kInt8: return "int8_t";
    case kInt16: return "int16_t";
    case kInt32: return "int32_t";
    case kInt64: return "int64_t";
    case kFloat16:
    case kBFloat16:
    case kFloat32: return "float";
    case kFloat64: return "double";
  }
  return "float";
}

std::string CLikeEmitter::memory_type(DType d) const {
  if (d == kBool) return "uint8_t";
  if (d == kFloat16 || d == kBFloat16) return "uint16_t";
  return compute_type(d);
}

std::string CLikeEmitter::storage_type(const Value* v) const {
  return v->type.ptr ? pointer_type(v->type.dtype) : compute_type(v->type.dtype);
}

std::string CLikeEmitter::load_value(const std::string& ptr, DType d) const {
  if (d == kFloat16) return "ks::float16_to_float(*" + ptr + ")";
  if (d == kBFloat16) return "ks::bfloat16_to_float(*" + ptr + ")";
  if (d == kBool) return "(*" + ptr + " != 0)";
  return "*" + ptr;
}

std::string CLikeEmitter::store_value(const std::string& value, DType d) const {
  if (d == kFloat16) return "ks::float_to_float16(" + value + ")";
  if (d == kBFloat16) return "ks::float_to_bfloat16(" + value + ")";
  if (d == kBool) return "uint8_t(" + value + ")";
  return value;
}

std::string CLikeEmitter::round_16(const std::string& expr, DType d) const {
  if (d == kFloat16) return "ks::float16_to_float(ks::float_to_float16(" + expr + "))";
  if (d == kBFloat16) return "ks::bfloat16_to_float(ks::float_to_bfloat16(" + expr + "))";
  return expr;
}

std::string CLikeEmitter::literal(const Scalar& s, DType d) const {
  const Scalar v = represent(s, d);
  if (d == kBool) return v.to_bool() ? "true" : "false";
  if (!is_floating(d)) {
    const int64_t i = v.to_int();
    if (d == kInt64 && i == INT64_MIN) return "int64_t(-9223372036854775807 - 1)";
    return d == kInt32 ? std::to_string(i) : compute_type(d) + "(" + std::to_string(i) + ")";
  }
  const double x = v.to_double();
  const bool is_double = d == kFloat64;
  if (std::isnan(x)) return is_double ? "ks::libm::nan()" : "float(ks::libm::nan())";
  if (std::isinf(x)) {
    const std::string inf = is_double ? "ks::libm::inf()" : "float(ks::libm::inf())";
    return x > 0 ? inf : "-" + inf;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, is_double ? "%.17g" : "%.9g", x);
  std::string t = buf;
  if (t.find_first_of(".en") == std::string::npos) t += ".0";
  return is_double ? t : t + "f";
}

std::string CLikeEmitter::origin_suffix(const Op& op) const {
  return op.origin.known() || !op.origin.op.empty() ? " @ " + op.origin.str() : "";
}

std::string CLikeEmitter::origin_comment(const Op& op) const { return "  // " + op.name() + origin_suffix(op); }

std::string CLikeEmitter::element(const Value* v, const std::vector<std::string>& idx, const std::string& linear) const {
  const Access& a = access_.at(v);
  switch (a.kind) {
    case Access::Kind::Uniform:
    case Access::Kind::Register: return a.name;
    case Access::Kind::Array:
      if (!linear.empty() && same_strides(a.strides, row_major(v->type.shape), v->type.shape)) return a.name + "[" + linear + "]";
      return a.name + "[" + affine(a.strides, idx) + "]";
    case Access::Kind::Expr: {
      std::vector<std::string> at;
      bool identity = a.dims.size() == idx.size();
      for (size_t d = 0; d < a.dims.size(); ++d) {
        at.push_back(a.dims[d] < 0 ? "0" : idx[size_t(a.dims[d])]);
        identity = identity && a.dims[d] == int(d);
      }
      std::vector<std::string> args;
      for (const Value* u : a.op->operands) args.push_back(element(u, at, identity ? linear : ""));
      return expression(*a.op, args);
    }
    case Access::Kind::Arange: {
      const std::string at = !linear.empty() && same_strides(a.strides, row_major(v->type.shape), v->type.shape)
                                 ? linear : affine(a.strides, idx);
      return a.start == 0 ? "int32_t(" + at + ")" : "int32_t(" + std::to_string(a.start) + " + " + at + ")";
    }
  }
  return "?";
}

// --- loops and blocks

std::vector<std::string> CLikeEmitter::open_loops(const std::vector<int64_t>& shape, const std::string& prefix) {
  std::vector<std::string> names;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) {  // no loop over a size-1 dim: its index is 0
      names.push_back("0");
      continue;
    }
    names.push_back(prefix + std::to_string(d));
    out_.open("for (int64_t " + names.back() + " = 0; " + names.back() + " < " + std::to_string(shape[d]) + "; ++" +
              names.back() + ")");
  }
  return names;
}

size_t CLikeEmitter::loop_count(const std::vector<int64_t>& shape) {
  size_t n = 0;
  for (int64_t d : shape) n += d != 1;
  return n;
}

void CLikeEmitter::close_loops(size_t n) {
  for (size_t i = 0; i < n; ++i) out_.close();
}

CLikeEmitter::ElementIndex CLikeEmitter::begin_elements(const std::vector<int64_t>& shape) {
  ElementIndex e;
  e.dims = open_loops(shape, "_i");
  e.linear = affine(row_major(shape), e.dims);
  if (loop_count(shape) > 1) {
    out_.line("const int64_t _i = " + e.linear + ";");
    e.linear = "_i";
  }
  return e;
}

void CLikeEmitter::end_elements(const std::vector<int64_t>& shape) { close_loops(loop_count(shape)); }

void CLikeEmitter::declare_block(const std::string& name, const std::string& type, int64_t numel) {
  // A block of bools is held in bytes: g++ vectorizes no loop that loads a bool array element
  // (`m[i] ? a : 0.0f` became a branch per element: 60% of cross_entropy's backward, one-hot
  // masks), and a byte converts to bool wherever a function takes one.
  const std::string held = type == "bool" ? "uint8_t" : type;
  out_.line("alignas(64) " + held + " " + name + "[" + std::to_string(numel) + "];");
}

void CLikeEmitter::declare(const Value* v, const std::string& name) {
  const int64_t bytes = v->type.ptr ? 8 : int64_t(itemsize(v->type.dtype == kFloat16 || v->type.dtype == kBFloat16 ? kFloat32 : v->type.dtype));
  stack_bytes_ += bytes * v->type.numel();
  if (stack_bytes_ > kStackBudget)
    fail_at("emit", {}, detail::cat("kernel ", prog_->name, ": its blocks need more than ", kStackBudget >> 20,
                                    " MiB of stack per program instance"),
            "use smaller block sizes (a program's blocks live on its thread's stack)");
  declare_block(name, storage_type(v), v->type.numel());
}

void CLikeEmitter::copy_into(const std::string& name, const Value* v) {
  if (!v->type.is_block()) {
    out_.line(name + " = " + element(v, {}) + ";");
    return;
  }
  const ElementIndex e = begin_elements(v->type.shape);
  out_.line(name + "[" + e.linear + "] = " + element(v, e.dims, e.linear) + ";");
  end_elements(v->type.shape);
}

std::string CLikeEmitter::materialize(const Value* v) {
  const Access& a = access_.at(v);
  if (a.kind == Access::Kind::Array && same_strides(a.strides, row_major(v->type.shape), v->type.shape)) return a.name;
  const std::string name = array_name(v);
  declare(v, name);
  copy_into(name, v);
  barrier();
  access_[v] = Access::array(name, row_major(v->type.shape));
  return name;
}

std::string CLikeEmitter::storage_name(const Value* v) const { return v->type.is_block() ? array_name(v) : cname(v); }

void CLikeEmitter::declare_storage(const Value* v) {
  if (v->type.is_block()) declare(v, array_name(v));
  else out_.line(storage_type(v) + " " + cname(v) + ";");
}

// --- expressions

int CLikeEmitter::index_cost(const Value* v) const {
  constexpr int kNo = 1 << 20;
  if (auto it = index_cost_.find(v); it != index_cost_.end()) return it->second;
  int cost = kNo;
  if (!v->type.is_block()) {
    cost = 0;  // a scalar: one variable
  } else if (v->def) {
    const Op& op = *v->def;
    switch (op.code) {
      case OpCode::Arange:
      case OpCode::Splat:
      case OpCode::Constant: cost = 0; break;
      case OpCode::Broadcast:
      case OpCode::ExpandDims:
      case OpCode::Permute: cost = index_cost(op.operands[0]); break;
      case OpCode::Pointwise:
      case OpCode::Cast:
      case OpCode::AddPtr:
        cost = 1;
        for (const Value* u : op.operands) cost = std::min(kNo, cost + index_cost(u));
        break;
      default: break;
    }
  }
  index_cost_[v] = cost;
  return cost;
}

bool CLikeEmitter::index_like(const Value* v) const { return v->type.is_block() && index_cost(v) <= 12; }

CLikeEmitter::Access CLikeEmitter::expr_access(const Op& op) const {
  Access a;
  a.kind = Access::Kind::Expr;
  a.op = &op;
  for (int d = 0; d < op.result()->type.rank(); ++d) a.dims.push_back(d);
  return a;
}

std::optional<int64_t> CLikeEmitter::step_along(const Value* v, int dim) const {
  if (!v->type.is_block() || v->type.shape[size_t(dim)] == 1 || !v->def) return 0;
  const Op& op = *v->def;
  auto constant = [](const Value* u, int64_t* c) {  // a compile-time integer (splat / broadcast of one)
    while (u->def && (u->def->code == OpCode::Splat || u->def->code == OpCode::Broadcast || u->def->code == OpCode::ExpandDims))
      u = u->def->operands[0];
    if (!u->def || u->def->code != OpCode::Constant || is_floating(u->type.dtype)) return false;
    *c = u->def->value.to_int();
    return true;
  };
  switch (op.code) {
    case OpCode::Arange: return 1;
    case OpCode::Splat:
    case OpCode::Constant: return 0;
    case OpCode::Broadcast:
      return op.operands[0]->type.shape[size_t(dim)] == 1 ? std::optional<int64_t>(0) : step_along(op.operands[0], dim);
    case OpCode::ExpandDims:
      if (dim == op.axis) return 0;
      return step_along(op.operands[0], dim < op.axis ? dim : dim - 1);
    case OpCode::Permute: return step_along(op.operands[0], int(op.order[size_t(dim)]));
    case OpCode::Cast:  // an integer index widened (index arithmetic does not overflow)
      if (is_floating(op.result()->type.dtype) || is_floating(op.operands[0]->type.dtype)) break;
      return step_along(op.operands[0], dim);
    case OpCode::AddPtr: {
      const std::optional<int64_t> p = step_along(op.operands[0], dim), o = step_along(op.operands[1], dim);
      if (p && o && *p == 0) return o;
      break;
    }
    case OpCode::Pointwise: {
      std::vector<std::optional<int64_t>> s;
      bool uniform = true;
      for (const Value* u : op.operands) {
        s.push_back(step_along(u, dim));
        uniform = uniform && s.back() && *s.back() == 0;
      }
      if (uniform) return 0;
      if (is_floating(op.result()->type.dtype) || s.size() != 2 || !s[0] || !s[1]) break;
      if (op.prim == ops::OpId::add) return *s[0] + *s[1];
      if (op.prim == ops::OpId::sub) return *s[0] - *s[1];
      int64_t c = 0;
      if (op.prim == ops::OpId::mul && *s[1] == 0 && constant(op.operands[1], &c)) return *s[0] * c;
      if (op.prim == ops::OpId::mul && *s[0] == 0 && constant(op.operands[0], &c)) return *s[1] * c;
      break;
    }
    default: break;
  }
  return std::nullopt;
}

bool CLikeEmitter::contiguous_rows(const Op& access, const Group& g, int64_t min_row_bytes) const {
  if (g.shape.empty()) return false;
  const Value* ptr = access.operands[0];
  const int64_t row = g.shape.back() * int64_t(itemsize(ptr->type.dtype));
  if (row < min_row_bytes || !index_like(ptr)) return false;
  const std::optional<int64_t> step = step_along(ptr, int(g.shape.size()) - 1);
  return step && *step == 1;
}

bool CLikeEmitter::advances_with_program(const Value* v) {
  std::vector<const Value*> todo = {v};
  std::set<const Value*> seen;  // (index arithmetic shares subexpressions)
  while (!todo.empty()) {
    const Value* u = todo.back();
    todo.pop_back();
    if (!u->def || !seen.insert(u).second) continue;
    if (u->def->code == OpCode::ProgramId) return true;
    if (u->def->code == OpCode::Pointwise && u->def->prim == ops::OpId::remainder) continue;
    for (const Value* w : u->def->operands) todo.push_back(w);
  }
  return false;
}

bool CLikeEmitter::streamed(const Op& store, const Group& g) const {
  return streams_stores() && store.code == OpCode::Store && store.operands.size() == 2 &&
         contiguous_rows(store, g, kStreamRowBytes);
}

std::string CLikeEmitter::stream_row(const std::string&, const std::string&, int64_t) const { return ""; }
std::string CLikeEmitter::prefetch_row(const std::string&, int64_t, bool) const { return ""; }

bool CLikeEmitter::elementwise(OpCode c) const {
  return c == OpCode::Pointwise || c == OpCode::Cast || c == OpCode::AddPtr || c == OpCode::Load ||
         c == OpCode::Store || c == OpCode::AtomicAdd;
}

std::string CLikeEmitter::expression(const Op& op, const std::vector<std::string>& a) const {
  switch (op.code) {
    case OpCode::ProgramId: return program_id(int(op.axis));
    case OpCode::NumPrograms: return num_programs(int(op.axis));
    case OpCode::Constant: return literal(op.value, op.result()->type.dtype);
    case OpCode::Pointwise: {
      const DType d = op.operands[op.prim == ops::OpId::where ? 1 : 0]->type.dtype;
      std::string fn = prim_function(op.prim, op.rounding, d);
      std::string args;
      for (size_t i = 0; i < a.size(); ++i) args += (i ? ", " : "") + a[i];
      if (fn == "nextafter_float16" || fn == "nextafter_bfloat16") return "ks::" + fn + "(" + args + ")";
      if ((d == kInt32 || d == kInt64) && index_like(op.result())) {
        // Index arithmetic: plain C, whose overflow the compiler may assume away (docs/tile.md).
        if (op.prim == ops::OpId::add) return "(" + a[0] + " + " + a[1] + ")";
        if (op.prim == ops::OpId::sub) return "(" + a[0] + " - " + a[1] + ")";
        if (op.prim == ops::OpId::mul) return "(" + a[0] + " * " + a[1] + ")";
      }
      if (op.prim == ops::OpId::pow && is_floating(d)) {
        const std::string p = constant_power(a[0], op.operands[1], d);
        if (!p.empty()) return round_16(p, op.result()->type.dtype);
      }
      if (fn == "div" && divides_by_reciprocal() && divisor_invariant(op)) fn = "div_by_invariant";
      const std::string call = "ks::" + fn + "<" + compute_type(d) + ">(" + args + ")";
      return round_16(call, op.result()->type.dtype);
    }
    case OpCode::Cast: {
      const DType from = op.operands[0]->type.dtype, to = op.result()->type.dtype;
      const std::string cf = compute_type(from), ct = compute_type(to);
      const std::string conv = cf == ct ? a[0] : "ks::convert_element_type<" + ct + ", " + cf + ">(" + a[0] + ")";
      return round_16(conv, to);
    }
    case OpCode::AddPtr: return "(" + a[0] + " + " + a[1] + ")";
    case OpCode::Load: {
      const DType d = op.result()->type.dtype;
      const std::string v = load_value(a[0], d);
      if (a.size() == 1) return v;
      return "(" + a[1] + " ? " + v + " : " + (a.size() > 2 ? a[2] : literal(Scalar(int64_t(0)), d)) + ")";
    }
    case OpCode::AtomicAdd: {
      const DType d = op.result()->type.dtype;
      const std::string v = atomic_add(a[0], a[1], d);
      if (a.size() == 2) return v;
      return "(" + a[2] + " ? " + v + " : " + literal(Scalar(int64_t(0)), d) + ")";
    }
    default: return "?";
  }
}

bool CLikeEmitter::divisor_invariant(const Op& div) const {
  const std::vector<int64_t>& shape = div.result()->type.shape;
  if (shape.empty() || shape.back() == 1 || !is_floating(div.result()->type.dtype)) return false;
  const auto it = access_.find(div.operands[1]);
  if (it == access_.end()) return false;
  const Access& a = it->second;
  return a.kind == Access::Kind::Uniform || (a.kind == Access::Kind::Array && a.strides.back() == 0);
}

std::optional<double> CLikeEmitter::constant_exponent(const Value* exponent) {
  const Value* e = exponent;
  while (e->def && (e->def->code == OpCode::Splat || e->def->code == OpCode::Broadcast || e->def->code == OpCode::ExpandDims))
    e = e->def->operands[0];
  if (!e->def || e->def->code != OpCode::Constant) return std::nullopt;
  return e->def->value.to_double();
}

std::string CLikeEmitter::constant_power(const std::string& x, const Value* exponent, DType d) const {
  const std::optional<double> e = constant_exponent(exponent);
  if (!e) return "";
  const double c = *e;
  const std::string t = compute_type(d);
  auto mul = [&](const std::string& a, const std::string& b) { return "ks::mul<" + t + ">(" + a + ", " + b + ")"; };
  // Exactly what pow gives for every x (zeros, infinities and NaN included), by multiplies, or
  // within an ulp of it: no libm call per element.
  if (c == 0) return literal(Scalar(1.0), d);
  if (c == 1) return x;
  if (c == 2) return mul(x, x);
  if (c == 3) return mul(mul(x, x), x);
  if (c == 4) return mul(mul(x, x), mul(x, x));
  if (c == -1) return "ks::div<" + t + ">(" + literal(Scalar(1.0), d) + ", " + x + ")";
  if (c == 0.5)  // sqrt, but pow(-0, 0.5) is +0 and pow(-inf, 0.5) is +inf
    return "(" + x + " == -" + literal(Scalar(HUGE_VAL), d) + " ? " + literal(Scalar(HUGE_VAL), d) + " : ks::add<" + t +
           ">(ks::sqrt<" + t + ">(" + x + "), " + literal(Scalar(0.0), d) + "))";
  return "";
}

std::string CLikeEmitter::statement(const Op& op, const std::vector<std::string>& a, const std::string& result) const {
  emitting_ = &op;
  if (op.code == OpCode::Store) {
    const std::string st = "*" + a[0] + " = " + store_value(a[1], op.operands[0]->type.dtype) + ";";
    return a.size() > 2 ? "if (" + a[2] + ") " + st : st;
  }
  const Value* r = op.result();
  const std::string decl = r->type.ptr ? pointer_type(r->type.dtype) + " const " : "const " + compute_type(r->type.dtype) + " ";
  return decl + result + " = " + expression(op, a) + ";";
}

// --- the walk

std::string CLikeEmitter::emit(const Program& p) {
  prog_ = &p;
  names_ = value_names(p);
  users_.clear();
  access_.clear();
  stack_bytes_ = 0;
  streamed_bytes_ = 0;
  prefetched_bytes_ = 0;
  walk(p.body, [&](const Op& op) {
    for (const Value* v : op.operands) users_[v].push_back(&op);
  });
  for (const Param& prm : p.params) access_[prm.value] = Access::uniform(cname(prm.value));
  out_.clear(1);
  emit_region(p.body, nullptr);
  const std::string body = out_.text();
  out_.clear();
  emit_program(body);
  return out_.text();
}

void CLikeEmitter::emit_region(const Region& r, const Targets* targets) {
  const Region* outer_region = region_;
  const Targets* outer_targets = targets_;
  region_ = &r, targets_ = targets;
  emit_ops(r);
  region_ = outer_region, targets_ = outer_targets;
}

const Value* CLikeEmitter::carried_in_place(const Value* v, const Group& g) const {
  // v, yielded as the next value of a for's carried block that only this loop reads, each
  // element at its own index: written straight into the carried block (no copy at the yield).
  if (!targets_ || !region_ || v->type.shape != g.shape) return nullptr;
  std::vector<const Op*> outside;  // (the loop's own ops read v's register)
  for (const Op* u : users_.at(v))
    if (!g.members.count(u)) outside.push_back(u);
  if (outside.size() != 1) return nullptr;
  const Op* y = outside[0];
  if (y->code != OpCode::Yield || region_->ops.empty() || region_->ops.back().get() != y) return nullptr;
  const size_t k = size_t(std::find(y->operands.begin(), y->operands.end(), v) - y->operands.begin());
  const Value* a = targets_->values.at(k);
  if (std::find(region_->args.begin(), region_->args.end(), a) == region_->args.end() || a->type.shape != g.shape) return nullptr;
  auto it = users_.find(a);
  if (it == users_.end()) return nullptr;
  for (const Op* u : it->second)
    if (!g.members.count(u)) return nullptr;
  const Access& acc = access_.at(a);
  if (acc.kind != Access::Kind::Array || acc.name != array_name(a) || !same_strides(acc.strides, row_major(a->type.shape), a->type.shape))
    return nullptr;
  return a;
}

void CLikeEmitter::emit_ops(const Region& r) {
  Group g;
  for (const auto& holder : r.ops) {
    const Op& op = *holder;
    switch (op.code) {
      case OpCode::Yield:
        close_group(g);
        emit_yield(op, *targets_);
        break;
      case OpCode::For:
        close_group(g);
        emit_for(op);
        break;
      case OpCode::If:
        close_group(g);
        emit_if(op);
        break;
      case OpCode::Reduce:
        close_group(g);
        emit_reduce(op);
        break;
      case OpCode::Scan:
        close_group(g);
        emit_scan(op);
        break;
      case OpCode::Dot:
        close_group(g);
        emit_dot(op);
        break;
      case OpCode::Arange: access_[op.result()] = Access::arange(op.start); break;
      case OpCode::Splat: access_[op.result()] = Access::uniform(element(op.operands[0], {})); break;
      case OpCode::Constant:
        if (op.result()->type.is_block()) {
          access_[op.result()] = Access::uniform(literal(op.value, op.result()->type.dtype));
          break;
        }
        emit_scalar(op);
        break;
      case OpCode::Broadcast:
      case OpCode::ExpandDims:
      case OpCode::Reshape:
      case OpCode::Permute: emit_view(op, g); break;
      case OpCode::ProgramId:
      case OpCode::NumPrograms: emit_scalar(op); break;
      default: {
        const bool block = op.operands[0]->type.is_block();
        if (!block) {
          // Scalar memory ops keep their place among the block ones.
          if (op.code == OpCode::Load || op.code == OpCode::Store || op.code == OpCode::AtomicAdd) close_group(g);
          emit_scalar(op);
        } else if (!op.results.empty() && index_like(op.result()) && g.open && g.shape != op.operands[0]->type.shape) {
          access_[op.result()] = expr_access(op);  // index arithmetic of another shape: no loop of its own
        } else {
          add_to_group(g, op);
        }
      }
    }
  }
  close_group(g);
}

void CLikeEmitter::add_to_group(Group& g, const Op& op) {
  const std::vector<int64_t>& shape = op.operands[0]->type.shape;  // elementwise: every operand has it
  const bool reads = op.code == OpCode::Load || op.code == OpCode::AtomicAdd;
  const bool writes = op.code == OpCode::Store || op.code == OpCode::AtomicAdd;
  if (g.open && (g.shape != shape || (reads && g.writes))) close_group(g);
  if (!g.open) {
    g.open = true;
    g.shape = shape;
  }
  g.ops.push_back(&op);
  g.members.insert(&op);
  g.writes = g.writes || writes;
  for (const Value* r : op.results) access_[r] = Access::reg(cname(r));
}

void CLikeEmitter::close_group(Group& g) {
  if (!g.open) return;
  std::set<const Value*> leaving;  // stored in a block: read after the loop (index arithmetic is recomputed)
  for (const Op* op : g.ops)
    for (const Value* r : op->results)
      for (const Op* u : users_[r])
        if (!g.members.count(u) && !index_like(r)) leaving.insert(r);
  bool work = false;  // a loop of nothing but index arithmetic (recomputed where read) is not written
  for (const Op* op : g.ops) work = work || op->has_side_effects() || (!op->results.empty() && leaving.count(op->result()));
  if (!work) {
    for (const Op* op : g.ops)
      if (index_like(op->result())) access_[op->result()] = expr_access(*op);
    g = Group{};
    return;
  }
  std::map<const Value*, const Value*> in_place;  // leaving values written into their carried block
  std::vector<const Value*> in_place_order;       // (in program order: the C is deterministic)
  for (const Op* op : g.ops)
    for (const Value* r : op->results)
      if (leaving.count(r))
        if (const Value* a = carried_in_place(r, g)) in_place[r] = a, in_place_order.push_back(r);
  for (const Op* op : g.ops)
    for (const Value* r : op->results)
      if (leaving.count(r) && !in_place.count(r)) declare(r, array_name(r));
  std::map<const Op*, std::string> staged;  // streamed stores: their staging blocks
  int64_t numel = 1;
  for (int64_t d : g.shape) numel *= d;
  for (const Op* op : g.ops) {
    if (!streamed(*op, g)) continue;
    const std::string name = "_st" + std::to_string(staged.size()) + "_" + std::to_string(op->operands[1]->id);
    const DType d = op->operands[1]->type.dtype;
    stack_bytes_ += numel * int64_t(itemsize(d));
    declare_block(name, memory_type(d), numel);
    staged[op] = name;
  }
  // The rows ahead of the loads (in a for loop's body the next iterations' rows, outside one a
  // page ahead: prefetch_row), asked for before the elements' loop: their pointers (index arithmetic)
  // recomputed there, the group's index values read as expressions meanwhile. (On pointwise,
  // whose programs read 4 KiB rows, a page ahead is the next program's rows: 20-25% faster; on
  // softmax it is a page into its own 16 KiB row: 2.6-3.2 -> 2.1-2.4 ms, better than the next row.)
  std::vector<std::pair<const Value*, Access>> in_loop;
  for (const Op* op : g.ops)
    for (const Value* r : op->results)
      if (index_like(r)) in_loop.emplace_back(r, access_.at(r)), access_[r] = expr_access(*op);
  for (const Op* op : g.ops) {
    if (op->code != OpCode::Load || !contiguous_rows(*op, g, kPrefetchRowBytes)) continue;
    if (for_depth_ == 0 && !advances_with_program(op->operands[0])) continue;
    const int64_t row = g.shape.back() * int64_t(itemsize(op->operands[0]->type.dtype));
    const std::vector<int64_t> rows(g.shape.begin(), g.shape.end() - 1);
    std::vector<std::string> idx = open_loops(rows, "_r");
    idx.push_back("0");
    const std::string line = prefetch_row(element(op->operands[0], idx), row, for_depth_ > 0);
    if (!line.empty()) {
      out_.line(line + origin_comment(*op));
      if (for_depth_ == 0) prefetched_bytes_ += numel / g.shape.back() * row;
    }
    close_loops(loop_count(rows));
  }
  for (auto& [r, a] : in_loop) access_[r] = std::move(a);
  const ElementIndex e = begin_elements(g.shape);
  for (const Op* op : g.ops) {
    std::vector<std::string> args;
    for (const Value* v : op->operands) args.push_back(element(v, e.dims, e.linear));
    if (staged.count(op)) {
      out_.line(staged[op] + "[" + e.linear + "] = " + store_value(args[1], op->operands[1]->type.dtype) + ";" +
                origin_comment(*op) + " (staged)");
      continue;
    }
    out_.line(statement(*op, args, op->results.empty() ? "" : cname(op->result())) + origin_comment(*op));
    for (const Value* r : op->results)
      if (leaving.count(r) && !in_place.count(r)) out_.line(array_name(r) + "[" + e.linear + "] = " + cname(r) + ";");
  }
  // (after every read of the old values in this iteration)
  for (const Value* r : in_place_order)
    out_.line(array_name(in_place.at(r)) + "[" + e.linear + "] = " + cname(r) + ";  // the next " + cname(in_place.at(r)));
  end_elements(g.shape);
  for (const Value* r : leaving)
    access_[r] = Access::array(array_name(in_place.count(r) ? in_place.at(r) : r), row_major(r->type.shape));
  for (const Op* op : g.ops)
    for (const Value* r : op->results)
      if (index_like(r)) access_[r] = expr_access(*op);
  for (const Op* op : g.ops) {  // the staged rows, written out
    if (!staged.count(op)) continue;
    const int64_t row = g.shape.back() * int64_t(itemsize(op->operands[1]->type.dtype));
    streamed_bytes_ += numel / g.shape.back() * row;
    const std::vector<int64_t> rows(g.shape.begin(), g.shape.end() - 1);
    std::vector<std::string> idx = open_loops(rows, "_r");
    std::vector<int64_t> rm = row_major(g.shape);
    rm.pop_back();
    const std::string from = staged[op] + " + " + affine(rm, idx);
    idx.push_back("0");
    out_.line(stream_row(element(op->operands[0], idx), from, row) + origin_comment(*op));
    close_loops(loop_count(rows));
  }
  if (!leaving.empty()) barrier();
  g = Group{};
}

void CLikeEmitter::emit_view(const Op& op, Group& g) {
  const Value* src = op.operands[0];
  Access a = access_.at(src);
  if (a.kind == Access::Kind::Register) {
    if (index_like(src)) {
      a = expr_access(*src->def);  // recomputed where the view is read: the loop stays open
    } else {
      close_group(g);
      a = access_.at(src);
    }
  }
  const Type &in = src->type, &out = op.result()->type;
  if (a.kind == Access::Kind::Expr && op.code == OpCode::Reshape) {
    materialize(src);
    a = access_.at(src);
  }
  if (a.kind == Access::Kind::Expr) {
    // The view's index, in the Expr's operands' dims.
    std::vector<int> inv(out.shape.size(), -1);
    if (op.code == OpCode::Permute)
      for (size_t j = 0; j < op.order.size(); ++j) inv[size_t(op.order[j])] = int(j);
    for (int& d : a.dims) {
      if (d < 0) continue;
      if (op.code == OpCode::Broadcast) d = in.shape[size_t(d)] == 1 ? -1 : d;
      else if (op.code == OpCode::ExpandDims) d = d < op.axis ? d : d + 1;
      else if (op.code == OpCode::Permute) d = inv[size_t(d)];
    }
  } else if (a.kind != Access::Kind::Uniform) {
    switch (op.code) {
      case OpCode::Broadcast:
        for (size_t d = 0; d < in.shape.size(); ++d)
          if (in.shape[d] == 1) a.strides[d] = 0;
        break;
      case OpCode::ExpandDims: a.strides.insert(a.strides.begin() + op.axis, 0); break;
      case OpCode::Permute: {
        std::vector<int64_t> s;
        for (int64_t d : op.order) s.push_back(a.strides[size_t(d)]);
        a.strides = s;
        break;
      }
      case OpCode::Reshape:
        if (!same_strides(a.strides, row_major(in.shape), in.shape)) {
          materialize(src);
          a = access_.at(src);
        }
        a.strides = row_major(out.shape);
        break;
      default: break;
    }
  }
  access_[op.result()] = a;
}

void CLikeEmitter::emit_scalar(const Op& op) {
  std::vector<std::string> args;
  for (const Value* v : op.operands) args.push_back(element(v, {}));
  out_.line(statement(op, args, op.results.empty() ? "" : cname(op.result())) + origin_comment(op));
  for (const Value* r : op.results) access_[r] = Access::uniform(cname(r));
}

void CLikeEmitter::emit_for(const Op& op) {
  const Region& body = op.regions[0];
  const Value* iv = body.args[0];
  Targets t;
  for (size_t k = 1; k < body.args.size(); ++k) {
    const Value* arg = body.args[k];
    declare_storage(arg);
    copy_into(storage_name(arg), op.operands[2 + k]);
    t.values.push_back(arg);
  }
  const std::string lo = element(op.operands[0], {}), hi = element(op.operands[1], {}), step = element(op.operands[2], {});
  const std::string i = cname(iv);
  out_.open("for (" + compute_type(iv->type.dtype) + " " + i + " = " + lo + "; " + i + " < " + hi + "; " + i + " += " +
            step + ")");
  access_[iv] = Access::uniform(i);
  for (const Value* arg : t.values)
    access_[arg] = arg->type.is_block() ? Access::array(array_name(arg), row_major(arg->type.shape))
                                        : Access::uniform(cname(arg));
  out_.line("// for" + origin_suffix(op));
  ++for_depth_;
  emit_region(body, &t);
  --for_depth_;
  out_.close();
  for (size_t k = 0; k < op.results.size(); ++k) access_[op.results[k]] = access_.at(body.args[k + 1]);
}

void CLikeEmitter::emit_if(const Op& op) {
  Targets t;
  for (const Value* r : op.results) {
    declare_storage(r);
    t.values.push_back(r);
  }
  out_.open("if (" + element(op.operands[0], {}) + ")");
  out_.line("// if" + origin_suffix(op));
  emit_region(op.regions[0], &t);
  const Region& other = op.regions[1];
  if (!(op.results.empty() && other.ops.size() == 1)) {
    out_.middle("} else {");
    emit_region(other, &t);
  }
  out_.close();
  for (const Value* r : op.results)
    access_[r] = r->type.is_block() ? Access::array(array_name(r), row_major(r->type.shape))
                                    : Access::uniform(cname(r));
}

void CLikeEmitter::emit_yield(const Op& op, const Targets& t) {
  // A yielded value whose expression reads a target it does not itself replace element by
  // element (a swap, a view of its own target, a scalar read by another yielded value) would see
  // that target already overwritten: such yields go through temporaries.
  auto mentions = [](const std::string& text, const std::string& name) {
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1))
      if ((at == 0 || !ident(text[at - 1])) && (at + name.size() == text.size() || !ident(text[at + name.size()]))) return true;
    return false;
  };
  bool hazard = false;
  std::vector<bool> unchanged(op.operands.size(), false);
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const Value* v = op.operands[k];
    std::vector<std::string> idx;
    for (int d = 0; d < v->type.rank(); ++d) idx.push_back("_i" + std::to_string(d));
    const std::string own = storage_name(t.values[k]);
    const std::string text = element(v, idx, v->type.is_block() ? "_i" : "");
    unchanged[k] = text == (v->type.is_block() ? own + "[_i]" : own);
    for (size_t j = 0; j < t.values.size(); ++j)
      if (mentions(text, storage_name(t.values[j])) && !(j == k && unchanged[k])) hazard = true;
  }
  std::vector<std::string> from(op.operands.size());
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const Value* v = op.operands[k];
    if (!hazard) continue;
    from[k] = "_y" + std::to_string(k);
    if (v->type.is_block()) declare(v, from[k]);
    else out_.line(storage_type(v) + " " + from[k] + ";");
    copy_into(from[k], v);
  }
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const Value* v = op.operands[k];
    const std::string target = storage_name(t.values[k]);
    if (hazard) {
      if (v->type.is_block()) {
        const ElementIndex e = begin_elements(v->type.shape);
        out_.line(target + "[" + e.linear + "] = " + from[k] + "[" + e.linear + "];");
        end_elements(v->type.shape);
      } else {
        out_.line(target + " = " + from[k] + ";");
      }
      continue;
    }
    if (unchanged[k]) continue;  // the carried value, as it is
    copy_into(target, v);
  }
  barrier();
}

// --- reductions, scans, dot: loops (a GPU emitter replaces these)

std::string CLikeEmitter::reduce_identity(ReduceKind k, DType d) const {
  const std::string t = compute_type(d);
  switch (k) {
    case ReduceKind::Sum: return literal(Scalar(int64_t(0)), d);
    case ReduceKind::Prod: return literal(Scalar(int64_t(1)), d);
    case ReduceKind::Max:
      if (d == kBool) return "false";
      return is_floating(d) ? "-" + literal(Scalar(HUGE_VAL), d) : "std::numeric_limits<" + t + ">::lowest()";
    case ReduceKind::Min:
      if (d == kBool) return "true";
      return is_floating(d) ? literal(Scalar(HUGE_VAL), d) : "std::numeric_limits<" + t + ">::max()";
    default: return literal(Scalar(int64_t(0)), d);
  }
}

std::string CLikeEmitter::fma(const std::string& a, const std::string& b, const std::string& c, DType d) const {
  return (d == kFloat64 ? "__builtin_fma(" : "__builtin_fmaf(") + a + ", " + b + ", " + c + ")";
}

void CLikeEmitter::emit_reduce(const Op& op) {
  const Value* x = op.operands[0];
  const Value* r = op.result();
  const DType d = x->type.dtype;
  const std::string t = compute_type(d);
  const std::vector<int64_t>& in = x->type.shape;
  const size_t axis = size_t(op.axis), rank = in.size();
  const ReduceKind k = op.reduce;
  const bool arg = k == ReduceKind::Argmax || k == ReduceKind::Argmin;
  const bool is_max = k == ReduceKind::Max || k == ReduceKind::Argmax;
  const std::string res = r->type.is_block() ? array_name(r) : cname(r);
  out_.line("// " + op.name() + " along axis " + std::to_string(axis) + origin_suffix(op));
  if (r->type.is_block()) declare(r, res);
  else out_.line(compute_type(r->type.dtype) + " " + res + ";");

  if (!arg && axis + 1 < rank) {
    // Along an outer axis: accumulate rows into the result, elementwise (vectorizes over the
    // inner dims).
    std::vector<int64_t> out_shape = r->type.shape;
    {
      const ElementIndex e = begin_elements(out_shape);
      out_.line(res + "[" + e.linear + "] = " + reduce_identity(k, d) + ";");
      end_elements(out_shape);
    }
    const std::vector<std::string> j = open_loops(in, "_j");
    std::vector<std::string> oj;
    for (size_t dd = 0; dd < rank; ++dd)
      if (dd != axis) oj.push_back(j[dd]);
    const std::string o = res + "[" + affine(row_major(out_shape), oj) + "]";
    const std::string xv = element(x, j);
    std::string combined;
    switch (k) {
      case ReduceKind::Sum: combined = "ks::add<" + t + ">(" + o + ", " + xv + ")"; break;
      case ReduceKind::Prod: combined = "ks::mul<" + t + ">(" + o + ", " + xv + ")"; break;
      case ReduceKind::Max: combined = "ks::maximum<" + t + ">(" + o + ", " + xv + ")"; break;
      default: combined = "ks::minimum<" + t + ">(" + o + ", " + xv + ")"; break;
    }
    out_.line(o + " = " + combined + ";");
    close_loops(loop_count(in));
    if (d == kFloat16 || d == kBFloat16) {
      const ElementIndex e = begin_elements(out_shape);
      out_.line(res + "[" + e.linear + "] = " + round_16(res + "[" + e.linear + "]", d) + ";");
      end_elements(out_shape);
    }
    barrier();
    access_[r] = Access::array(res, row_major(out_shape));
    return;
  }

  // Along the last axis (or any axis, for argmax/argmin): one accumulator per output element.
  std::vector<int64_t> outer;
  for (size_t dd = 0; dd < rank; ++dd)
    if (dd != axis) outer.push_back(in[dd]);
  const std::vector<std::string> o = open_loops(outer, "_o");
  const size_t loops = loop_count(outer);
  if (loops == 0) out_.open("");  // the accumulator's own scope
  std::vector<std::string> idx;
  for (size_t dd = 0, oi = 0; dd < rank; ++dd) idx.push_back(dd == axis ? "_k" : o[oi++]);
  const std::string n = std::to_string(in[axis]);
  const std::string xv = element(x, idx);
  std::string result;
  if (arg) {
    std::vector<std::string> first = idx;
    first[axis] = "0";
    out_.line(t + " _best = " + element(x, first) + ";");
    out_.line("int32_t _at = 0;");
    out_.open("for (int64_t _k = 1; _k < " + n + "; ++_k)");
    out_.line("const " + t + " _x = " + xv + ";");
    const std::string better = is_max ? "_x > _best" : "_x < _best";
    const std::string nan_first = is_floating(d) ? " || (_x != _x && _best == _best)" : "";
    out_.line("if (" + better + nan_first + ") _best = _x, _at = int32_t(_k);");
    out_.close();
    result = "_at";
  } else {
    const bool nan_aware = is_floating(d) && (k == ReduceKind::Max || k == ReduceKind::Min);
    out_.line(t + " _acc = " + reduce_identity(k, d) + ";");
    if (nan_aware) out_.line("int _nan = 0;");  // (an int: a bool reduction does not vectorize)
    std::string clause, update;
    switch (k) {
      case ReduceKind::Sum: clause = "reduction(+ : _acc)"; update = "_acc = _acc + _x;"; break;
      case ReduceKind::Prod: clause = "reduction(* : _acc)"; update = "_acc = _acc * _x;"; break;
      case ReduceKind::Max:
        clause = d == kBool ? "reduction(| : _acc)" : "reduction(max : _acc)";
        update = d == kBool ? "_acc = _acc | _x;" : "_acc = _x > _acc ? _x : _acc;";
        break;
      default:
        clause = d == kBool ? "reduction(& : _acc)" : "reduction(min : _acc)";
        update = d == kBool ? "_acc = _acc & _x;" : "_acc = _x < _acc ? _x : _acc;";
        break;
    }
    if (is_integral(d) && (k == ReduceKind::Sum || k == ReduceKind::Prod))  // wrapping, as eager
      update = "_acc = ks::" + std::string(k == ReduceKind::Sum ? "add" : "mul") + "<" + t + ">(_acc, _x);";
    if (nan_aware) {
      clause += " reduction(| : _nan)";
      update += " _nan |= _x != _x;";
    }
    out_.line("#pragma omp simd " + clause);
    out_.open("for (int64_t _k = 0; _k < " + n + "; ++_k)");
    out_.line("const " + t + " _x = " + xv + ";");
    out_.line(update);
    out_.close();
    if (nan_aware) out_.line("if (_nan) _acc = " + literal(Scalar(std::nan("")), d) + ";");
    result = round_16("_acc", d);
  }
  if (r->type.is_block()) out_.line(res + "[" + affine(row_major(outer), o) + "] = " + result + ";");
  else out_.line(res + " = " + result + ";");
  close_loops(loops == 0 ? 1 : loops);
  barrier();
  access_[r] = r->type.is_block() ? Access::array(res, row_major(r->type.shape))
                                  : Access::uniform(res);
}

void CLikeEmitter::emit_scan(const Op& op) {
  const Value* x = op.operands[0];
  const Value* r = op.result();
  const DType d = x->type.dtype;
  const std::string t = compute_type(d);
  const std::vector<int64_t>& shape = x->type.shape;
  const size_t axis = size_t(op.axis);
  const std::string res = array_name(r);
  out_.line("// " + op.name() + " along axis " + std::to_string(axis) + origin_suffix(op));
  declare(r, res);
  const std::vector<std::string> j = open_loops(shape, "_j");
  if (loop_count(shape) == 0) out_.open("");  // _x's own scope
  const std::vector<int64_t> rm = row_major(shape);
  const std::string lin = affine(rm, j);
  std::string fn;
  switch (op.scan) {
    case ScanKind::Cumsum: fn = "add"; break;
    case ScanKind::Cumprod: fn = "mul"; break;
    case ScanKind::Cummax: fn = "maximum"; break;
    case ScanKind::Cummin: fn = "minimum"; break;
  }
  // Running values stay unrounded (16-bit floats accumulate in float, as eager); rounded after.
  out_.line("const " + t + " _x = " + element(x, j) + ";");
  if (shape[axis] == 1) out_.line(res + "[" + lin + "] = _x;");
  else
    out_.line(res + "[" + lin + "] = " + j[axis] + " == 0 ? _x : ks::" + fn + "<" + t + ">(" + res + "[" + lin + " - " +
              std::to_string(rm[axis]) + "], _x);");
  close_loops(loop_count(shape) == 0 ? 1 : loop_count(shape));
  if (d == kFloat16 || d == kBFloat16) {
    const ElementIndex e = begin_elements(shape);
    out_.line(res + "[" + e.linear + "] = " + round_16(res + "[" + e.linear + "]", d) + ";");
    end_elements(shape);
  }
  barrier();
  access_[r] = Access::array(res, rm);
}

void CLikeEmitter::emit_dot(const Op& op) {
  const Value *a = op.operands[0], *b = op.operands[1], *acc = op.operands[2];
  const Value* r = op.result();
  const int64_t m = a->type.shape[0], kk = a->type.shape[1], n = b->type.shape[1];
  const DType d = r->type.dtype;
  const std::string t = compute_type(d);
  out_.line("// dot [" + std::to_string(m) + ", " + std::to_string(kk) + "] @ [" + std::to_string(kk) + ", " +
            std::to_string(n) + "]" + origin_suffix(op));
  // The accumulator's own block, read by nothing else, takes the sum in place (a K loop's dot
  // then yields without a copy).
  const Access& ac = access_.at(acc);
  const bool in_place = ac.kind == Access::Kind::Array && ac.name == array_name(acc) &&
                        same_strides(ac.strides, row_major(acc->type.shape), acc->type.shape) && users_[acc].size() == 1;
  const std::string res = in_place ? ac.name : array_name(r);
  if (!in_place) {
    declare(r, res);
    copy_into(res, acc);
  }
  out_.open("for (int64_t _m = 0; _m < " + std::to_string(m) + "; ++_m)");
  out_.open("for (int64_t _k = 0; _k < " + std::to_string(kk) + "; ++_k)");
  out_.line("const " + t + " _a = " + element(a, {"_m", "_k"}) + ";");
  out_.open("for (int64_t _n = 0; _n < " + std::to_string(n) + "; ++_n)");
  const std::string c = res + "[_m * " + std::to_string(n) + " + _n]";
  out_.line(c + " = " + fma("_a", element(b, {"_k", "_n"}), c, d) + ";");
  out_.close();
  out_.close();
  out_.close();
  barrier();
  access_[r] = Access::array(res, row_major(r->type.shape));
}

}  // namespace kiln::tile
