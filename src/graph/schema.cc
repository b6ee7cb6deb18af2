#include "graph/schema.h"

#include <array>
#include <cmath>
#include <mutex>

#include "ops/schema.h"

namespace kiln::graph {
namespace {

// The IR's view of an ops.def argument type: a base type, optional (T?), optional elements (Tensor?[]).
void classify(ops::ArgType t, SchemaArg& a) {
  using ops::ArgType;
  switch (t) {
    case ArgType::Tensor: case ArgType::OptTensor: a.base = ArgBase::Tensor; break;
    case ArgType::TensorList: a.base = ArgBase::TensorList; break;
    case ArgType::OptTensorList: a.base = ArgBase::TensorList, a.elem_optional = true; break;
    case ArgType::Scalar: case ArgType::OptScalar: a.base = ArgBase::Scalar; break;
    case ArgType::Int: case ArgType::OptInt: a.base = ArgBase::Int; break;
    case ArgType::IntList: case ArgType::OptIntList: a.base = ArgBase::IntList; break;
    case ArgType::SymInt: case ArgType::OptSymInt: a.base = ArgBase::SymInt; break;
    case ArgType::SymIntList: case ArgType::OptSymIntList: a.base = ArgBase::SymIntList; break;
    case ArgType::Float: case ArgType::OptFloat: a.base = ArgBase::Float; break;
    case ArgType::OptFloatList: a.base = ArgBase::FloatList; break;
    case ArgType::Bool: case ArgType::OptBool: a.base = ArgBase::Bool; break;
    case ArgType::ScalarType: case ArgType::OptScalarType: a.base = ArgBase::ScalarType; break;
    case ArgType::OptDevice: a.base = ArgBase::Device; break;
    case ArgType::Str: case ArgType::OptStr: a.base = ArgBase::Str; break;
  }
}

// A schema default as a node argument (NodeArg lists ops::Arg's alternatives in the same order;
// defaults are never tensors).
NodeArg to_node_arg(const ops::Arg& a) {
  return unbox_arg(a, [](const Tensor&) -> Value* { detail::fail("internal: a tensor default in a schema"); });
}

// The op's ops.def schema (parsed once by ops::op_schema) in the IR's terms.
Schema from_ops_schema(ops::OpId op) {
  const ops::Schema& os = ops::op_schema(op);
  Schema r;
  r.num_returns = os.num_outputs;
  for (const ops::SchemaArg& oa : os.args) {
    SchemaArg a;
    a.name = oa.name;
    a.type_text = oa.type_text;
    a.optional = oa.optional();
    classify(oa.type, a);
    if (oa.has_default) a.default_value = to_node_arg(oa.default_value);
    r.args.push_back(std::move(a));
  }
  return r;
}

}  // namespace

const Schema& schema_of(ops::OpId op) {
  static std::array<Schema, ops::kNumOps> table;
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < ops::kNumOps; ++i) table[i] = from_ops_schema(ops::OpId(i));
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

// NaN equals NaN; 0.0 and -0.0 differ (x * -0.0 is not x * 0.0).
static bool same_double(double a, double b) {
  return (a == b && std::signbit(a) == std::signbit(b)) || (a != a && b != b);
}

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
