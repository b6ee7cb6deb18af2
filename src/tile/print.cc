// The tile IR's text form (docs/tile.md, "The text form"):
//
//   kernel vector_add(%x: ptr<f32>, %out: ptr<f32>, %n: i32) meta(BLOCK=1024, num_warps=4, num_stages=3) {
//     %0: i32 = program_id(0)  # vector_add.py:4
//     %1: i32[1024] = arange(0, 1024)
//     ...
//     store(%7, %6, %5)
//   }
//
// Unnamed values print as %0, %1, ... in order of definition (so a pass's output numbers
// afresh); named ones (parameters, region arguments) as %name, made unique with a suffix.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "tile/ir.h"

namespace kiln::tile {
namespace {

// The shortest decimal that reads back as the same double; always with a '.' or an exponent.
std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

struct Printer {
  const PrintOptions& opts;
  std::string out;
  std::map<const Value*, std::string> names;
  std::set<std::string> taken;
  int next = 0;

  const std::string& name(const Value* v) {
    auto it = names.find(v);
    if (it != names.end()) return it->second;
    std::string n;
    if (v->name.empty()) {
      do n = std::to_string(next++);
      while (taken.count(n));
    } else {
      n = v->name;
      for (int k = 1; taken.count(n); ++k) n = v->name + "_" + std::to_string(k);
    }
    taken.insert(n);
    return names[v] = n;
  }
  std::string ref(const Value* v) { return "%" + name(v); }

  std::string number(const Scalar& s, DType d) {
    if (is_floating(d)) return float_text(s.to_double());
    if (d == kBool) return s.to_bool() ? "true" : "false";
    return std::to_string(s.to_int());
  }

  void origin(const Op& op) {
    if (opts.origins && (op.origin.known() || !op.origin.op.empty())) out += "  # " + op.origin.str();
  }

  void indent(int depth) { out.append(size_t(2 * depth), ' '); }

  std::string operand_list(const Op& op, size_t from = 0, size_t to = std::string::npos) {
    std::string s;
    for (size_t i = from; i < std::min(to, op.operands.size()); ++i) s += (i > from ? ", " : "") + ref(op.operands[i]);
    return s;
  }

  void region_body(const Region& r, int depth) {
    for (const auto& op : r.ops) print_op(*op, depth);
  }

  void print_op(const Op& op, int depth) {
    indent(depth);
    // Results are named before the regions print, so they take the numbers of their position.
    if (!op.results.empty() && op.code != OpCode::For && op.code != OpCode::If) {
      for (size_t i = 0; i < op.results.size(); ++i)
        out += (i ? ", " : "") + ref(op.results[i]) + ": " + op.results[i]->type.str();
      out += " = ";
    }
    switch (op.code) {
      case OpCode::For: print_for(op, depth); return;
      case OpCode::If: print_if(op, depth); return;
      default: break;
    }
    out += op.name() + "(";
    switch (op.code) {
      case OpCode::ProgramId:
      case OpCode::NumPrograms: out += std::to_string(op.axis); break;
      case OpCode::Constant: out += number(op.value, op.result()->type.dtype); break;
      case OpCode::Arange: out += std::to_string(op.start) + ", " + std::to_string(op.end); break;
      case OpCode::ExpandDims:
      case OpCode::Reduce:
      case OpCode::Scan: out += operand_list(op) + ", axis=" + std::to_string(op.axis); break;
      case OpCode::Permute: out += operand_list(op) + ", order=" + shape_text(op.order); break;
      case OpCode::Pointwise:
        out += operand_list(op);
        if (op.rounding != Rounding::None) out += op.rounding == Rounding::Trunc ? ", rounding=\"trunc\"" : ", rounding=\"floor\"";
        break;
      default: out += operand_list(op); break;
    }
    out += ")";
    origin(op);
    out += "\n";
  }

  void results_head(const Op& op) {
    for (size_t i = 0; i < op.results.size(); ++i)
      out += (i ? ", " : "") + ref(op.results[i]) + ": " + op.results[i]->type.str();
    if (!op.results.empty()) out += " = ";
  }

  void print_for(const Op& op, int depth) {
    const Region& body = op.regions[0];
    // The results come after the loop in program order but print first: name them first.
    results_head(op);
    out += "for " + ref(body.args[0]) + ": " + body.args[0]->type.str() + " = " + ref(op.operands[0]) + " to " +
           ref(op.operands[1]) + " step " + ref(op.operands[2]);
    if (op.operands.size() > 3) {
      out += " iter(";
      for (size_t i = 3; i < op.operands.size(); ++i) {
        const Value* a = body.args[i - 2];
        out += (i > 3 ? ", " : "") + ref(a) + ": " + a->type.str() + " = " + ref(op.operands[i]);
      }
      out += ")";
    }
    out += " {";
    origin(op);
    out += "\n";
    region_body(body, depth + 1);
    indent(depth);
    out += "}\n";
  }

  static bool empty_yield(const Region& r) {
    return r.ops.size() == 1 && r.ops[0]->code == OpCode::Yield && r.ops[0]->operands.empty();
  }

  void print_if(const Op& op, int depth) {
    results_head(op);
    out += "if " + ref(op.operands[0]) + " {";
    origin(op);
    out += "\n";
    region_body(op.regions[0], depth + 1);
    indent(depth);
    if (op.results.empty() && empty_yield(op.regions[1])) {
      out += "}\n";
      return;
    }
    out += "} else {\n";
    region_body(op.regions[1], depth + 1);
    indent(depth);
    out += "}\n";
  }
};

}  // namespace

namespace {
Printer print_into(const Program& p, const PrintOptions& o) {
  Printer pr{o, {}, {}, {}, 0};
  pr.out = "kernel " + p.name + "(";
  for (size_t i = 0; i < p.params.size(); ++i) {
    const Param& prm = p.params[i];
    pr.out += (i ? ", " : "") + pr.ref(prm.value) + ": " + prm.value->type.str();
    if (prm.kind == ParamKind::Sym) pr.out += " sym";
  }
  pr.out += ") meta(";
  for (const auto& [n, v] : p.meta.constexprs)
    pr.out += n + "=" + (v.is_float() ? float_text(v.to_double()) : v.is_bool() ? (v.to_bool() ? "true" : "false") : std::to_string(v.to_int())) + ", ";
  pr.out += "num_warps=" + std::to_string(p.meta.num_warps) + ", num_stages=" + std::to_string(p.meta.num_stages) + ") {\n";
  pr.region_body(p.body, 1);
  pr.out += "}\n";
  return pr;
}
}  // namespace

std::string print(const Program& p, const PrintOptions& o) { return print_into(p, o).out; }

std::map<const Value*, std::string> value_names(const Program& p) { return print_into(p, {}).names; }

}  // namespace kiln::tile
