// Parsing ops.def schema strings: "name(Type arg=default, *, Type kw=default) -> Outputs".
#include "ops/schema.h"

#include <mutex>

namespace kiln::ops {
namespace {

struct TypeName {
  const char* text;
  ArgType type;
};
constexpr TypeName kTypes[] = {
    {"Tensor", ArgType::Tensor},         {"Tensor?", ArgType::OptTensor},
    {"Tensor[]", ArgType::TensorList},   {"Tensor?[]", ArgType::OptTensorList},
    {"Scalar", ArgType::Scalar},         {"Scalar?", ArgType::OptScalar},
    {"int", ArgType::Int},               {"int?", ArgType::OptInt},
    {"int[]", ArgType::IntList},         {"int[]?", ArgType::OptIntList},
    {"SymInt", ArgType::SymInt},         {"SymInt?", ArgType::OptSymInt},
    {"SymInt[]", ArgType::SymIntList},   {"SymInt[]?", ArgType::OptSymIntList},
    {"float", ArgType::Float},           {"float?", ArgType::OptFloat},
    {"float[]?", ArgType::OptFloatList}, {"bool", ArgType::Bool},
    {"bool?", ArgType::OptBool},         {"ScalarType", ArgType::ScalarType},
    {"ScalarType?", ArgType::OptScalarType}, {"Device?", ArgType::OptDevice},
    {"str", ArgType::Str},               {"str?", ArgType::OptStr},
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits on commas outside brackets.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(' || c == '[') depth++;
    if (c == ')' || c == ']') depth--;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

int64_t parse_int(const std::string& s, const std::string& schema) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(s, &used);
    KILN_CHECK(used == s.size(), "bad integer default '", s, "' in schema ", schema);
    return v;
  } catch (const std::logic_error&) {
    detail::fail("bad integer default '" + s + "' in schema " + schema);
  }
}

// The value a default's text stands for, for an argument of type t.
Arg parse_default(const std::string& d, ArgType t, const std::string& schema) {
  if (d == "None") return std::monostate{};
  switch (t) {
    case ArgType::Bool: case ArgType::OptBool:
      KILN_CHECK(d == "True" || d == "False", "bad bool default '", d, "' in schema ", schema);
      return d == "True";
    case ArgType::Int: case ArgType::OptInt:
      return parse_int(d, schema);
    case ArgType::SymInt: case ArgType::OptSymInt:
      return SymInt(parse_int(d, schema));
    case ArgType::IntList: case ArgType::OptIntList: case ArgType::SymIntList: case ArgType::OptSymIntList: {
      std::vector<int64_t> v;
      if (d.front() == '[') {
        for (auto& p : split_top(d.substr(1, d.size() - 2))) v.push_back(parse_int(p, schema));
      } else {
        v.push_back(parse_int(d, schema));  // "int[] stride=1": one value for every dim
      }
      if (t == ArgType::SymIntList || t == ArgType::OptSymIntList) return SymShape(v.begin(), v.end());
      return v;
    }
    case ArgType::Float: case ArgType::OptFloat:
      return std::stod(d);
    case ArgType::Scalar: case ArgType::OptScalar:
      if (d == "True" || d == "False") return Scalar(d == "True");
      if (d.find_first_of(".eE") != std::string::npos) return Scalar(std::stod(d));
      return Scalar(parse_int(d, schema));
    case ArgType::ScalarType: case ArgType::OptScalarType: {
      std::string lower;
      for (char c : d) lower += char(std::tolower(c));
      return dtype_from_name(lower);
    }
    case ArgType::Str: case ArgType::OptStr:
      KILN_CHECK(d.size() >= 2 && d.front() == '"' && d.back() == '"', "bad string default ", d, " in schema ", schema);
      return d.substr(1, d.size() - 2);
    default:
      detail::fail("unsupported default '" + d + "' in schema " + schema);
  }
}

}  // namespace

bool SchemaArg::optional() const {
  switch (type) {
    case ArgType::OptTensor: case ArgType::OptScalar: case ArgType::OptInt: case ArgType::OptIntList:
    case ArgType::OptSymInt: case ArgType::OptSymIntList: case ArgType::OptFloat: case ArgType::OptFloatList:
    case ArgType::OptBool: case ArgType::OptScalarType: case ArgType::OptDevice: case ArgType::OptStr:
      return true;
    default:
      return false;
  }
}

int Schema::num_positional() const {
  int n = 0;
  for (auto& a : args) n += !a.kwarg_only;
  return n;
}

const char* arg_type_name(ArgType t) {
  for (auto& tn : kTypes)
    if (tn.type == t) return tn.text;
  return "?";
}

Schema parse_schema(const std::string& text) {
  size_t open = text.find('('), arrow = text.rfind("->");
  KILN_CHECK(open != std::string::npos && arrow != std::string::npos, "malformed schema: ", text);
  size_t close = text.rfind(')', arrow);
  KILN_CHECK(close != std::string::npos && close > open, "malformed schema: ", text);
  Schema s;
  s.name = trim(text.substr(0, open));
  s.name = s.name.substr(0, s.name.find('.'));
  bool kw = false;
  for (auto& part : split_top(text.substr(open + 1, close - open - 1))) {
    if (part == "*") {
      kw = true;
      continue;
    }
    SchemaArg a;
    size_t sp = part.find(' ');
    KILN_CHECK(sp != std::string::npos, "malformed argument '", part, "' in schema ", text);
    a.type_text = part.substr(0, sp);
    std::string rest = trim(part.substr(sp + 1));
    size_t eq = rest.find('=');
    a.name = trim(rest.substr(0, eq));
    bool found = false;
    for (auto& tn : kTypes)
      if (a.type_text == tn.text) a.type = tn.type, found = true;
    KILN_CHECK(found, "unknown argument type '", a.type_text, "' in schema ", text);
    a.kwarg_only = kw;
    if (eq != std::string::npos) {
      a.has_default = true;
      a.default_value = parse_default(trim(rest.substr(eq + 1)), a.type, text);
    }
    s.args.push_back(std::move(a));
  }
  std::string out = trim(text.substr(arrow + 2));
  if (out == "Tensor") {
    s.num_outputs = 1;
  } else if (out == "Tensor[]") {
    s.num_outputs = -1;
  } else {
    KILN_CHECK(out.size() > 2 && out.front() == '(' && out.back() == ')', "malformed outputs in schema ", text);
    auto parts = split_top(out.substr(1, out.size() - 2));
    s.num_outputs = int(parts.size());
    for (auto& p : parts) {
      size_t sp = p.find(' ');
      s.output_names.push_back(sp == std::string::npos ? "" : trim(p.substr(sp + 1)));
    }
  }
  return s;
}

const Schema& op_schema(OpId op) {
  static std::vector<Schema> schemas;
  static std::once_flag once;
  std::call_once(once, [] {
    schemas.reserve(kNumOps);
    for (int i = 0; i < kNumOps; i++) schemas.push_back(parse_schema(op_info(OpId(i)).schema));
  });
  return schemas[size_t(op)];
}

}  // namespace kiln::ops
