#include "graph/schema.h"

#include <array>
#include <mutex>

#include "graph/reader.h"

namespace kiln::graph {
namespace {

std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool in_str = false;
  for (char c : s) {
    if (c == '"') in_str = !in_str;
    if (!in_str && (c == '(' || c == '[')) ++depth;
    if (!in_str && (c == ')' || c == ']')) --depth;
    if (!in_str && c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (cur.find_first_not_of(' ') != std::string::npos) out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

SchemaArg parse_arg(const std::string& text, const char* op) {
  SchemaArg a;
  const size_t sp = text.find(' ');
  KILN_CHECK(sp != std::string::npos, "internal: bad schema argument '", text, "' of ", op);
  std::string type = text.substr(0, sp), rest = text.substr(sp + 1);
  a.type_text = type;
  const size_t eq = rest.find('=');
  a.name = trim(rest.substr(0, eq));
  if (type.size() > 2 && type.ends_with("[]")) {
    std::string elem = type.substr(0, type.size() - 2);
    a.elem_optional = elem.ends_with("?");
    if (a.elem_optional) elem.pop_back();
    type = elem + "[]";
  }
  if (type.ends_with("?")) {
    a.optional = true;
    type.pop_back();
  }
  static const std::pair<const char*, ArgBase> kBases[] = {
      {"Tensor", ArgBase::Tensor},       {"Tensor[]", ArgBase::TensorList}, {"Scalar", ArgBase::Scalar},
      {"int", ArgBase::Int},             {"int[]", ArgBase::IntList},       {"SymInt", ArgBase::SymInt},
      {"SymInt[]", ArgBase::SymIntList}, {"float", ArgBase::Float},         {"float[]", ArgBase::FloatList},
      {"bool", ArgBase::Bool},           {"ScalarType", ArgBase::ScalarType}, {"Device", ArgBase::Device},
      {"str", ArgBase::Str}};
  bool found = false;
  for (auto& [n, b] : kBases)
    if (type == n) a.base = b, found = true;
  KILN_CHECK(found, "internal: unknown schema type '", a.type_text, "' in ", op);
  if (eq != std::string::npos) {
    Lexer lx(trim(rest.substr(eq + 1)));
    RefLookup none = [&](const Token& t) -> Value* { lx.fail(t, "a default can't be a value"); };
    a.default_value = read_arg(lx, a, none, 0);
  }
  return a;
}

Schema parse_schema(const ops::OpInfo& info) {
  const std::string s = info.schema;
  const size_t open = s.find('('), arrow = s.rfind("->");
  const size_t close = s.rfind(')', arrow);
  KILN_CHECK(open != std::string::npos && arrow != std::string::npos, "internal: bad schema of ", info.name);
  Schema r;
  for (const std::string& part : split_top(s.substr(open + 1, close - open - 1))) {
    const std::string t = trim(part);
    if (t != "*") r.args.push_back(parse_arg(t, info.name));
  }
  const std::string ret = trim(s.substr(arrow + 2));
  r.num_returns = ret == "Tensor[]" ? -1 : ret.front() == '(' ? int(split_top(ret.substr(1, ret.size() - 2)).size()) : 1;
  return r;
}

}  // namespace

const Schema& schema_of(ops::OpId op) {
  static std::array<Schema, ops::kNumOps> table;
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < ops::kNumOps; ++i) table[i] = parse_schema(ops::op_info(ops::OpId(i)));
  });
  KILN_CHECK(int(op) < ops::kNumOps, "internal: bad op id ", int(op));
  return table[size_t(op)];
}

const char* arg_kind_name(const NodeArg& a) {
  static const char* names[] = {"None", "value", "value list", "Scalar", "int", "float", "bool",
                                "int[]", "SymInt", "SymInt[]", "dtype", "Device", "str", "float[]"};
  return names[a.index()];
}

bool arg_matches(const SchemaArg& s, const NodeArg& a) {
  if (std::holds_alternative<std::monostate>(a)) return s.optional;
  switch (s.base) {
    case ArgBase::Tensor: return std::holds_alternative<Value*>(a) && std::get<Value*>(a);
    case ArgBase::TensorList:
      if (auto* l = std::get_if<ValueList>(&a)) {
        for (Value* v : *l)
          if (!v && !s.elem_optional) return false;
        return true;
      }
      return false;
    case ArgBase::Scalar: return std::holds_alternative<Scalar>(a);
    case ArgBase::Int: return std::holds_alternative<int64_t>(a);
    case ArgBase::IntList: return std::holds_alternative<std::vector<int64_t>>(a);
    case ArgBase::SymInt: return std::holds_alternative<SymInt>(a);
    case ArgBase::SymIntList: return std::holds_alternative<SymShape>(a);
    case ArgBase::Float: return std::holds_alternative<double>(a);
    case ArgBase::FloatList: return std::holds_alternative<std::vector<double>>(a);
    case ArgBase::Bool: return std::holds_alternative<bool>(a);
    case ArgBase::ScalarType: return std::holds_alternative<DType>(a);
    case ArgBase::Device: return std::holds_alternative<Device>(a);
    case ArgBase::Str: return std::holds_alternative<std::string>(a);
  }
  return false;
}

}  // namespace kiln::graph

namespace kiln::graph {

static bool same_double(double a, double b) { return a == b || (a != a && b != b); }

bool arg_equal(const NodeArg& a, const NodeArg& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) return same_double(*x, std::get<double>(b));
  if (auto* x = std::get_if<Scalar>(&a)) {
    const Scalar& y = std::get<Scalar>(b);
    return x->kind() == y.kind() && (x->is_float() ? same_double(x->to_double(), y.to_double()) : x->to_int() == y.to_int());
  }
  if (auto* x = std::get_if<std::vector<double>>(&a)) {
    const auto& y = std::get<std::vector<double>>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i)
      if (!same_double((*x)[i], y[i])) return false;
    return true;
  }
  // SymInts compare by expression text: == on SymInt would answer with hints (and record a guard).
  if (auto* x = std::get_if<SymInt>(&a)) return x->str() == std::get<SymInt>(b).str();
  if (auto* x = std::get_if<SymShape>(&a)) {
    const SymShape& y = std::get<SymShape>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i)
      if ((*x)[i].str() != y[i].str()) return false;
    return true;
  }
  return a == b;
}

}  // namespace kiln::graph
