// An op's schema string from ops.def, parsed once: argument names, types and defaults. The
// printer, parser and verifier read argument types from here.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

enum class ArgBase : uint8_t {
  Tensor, TensorList, Scalar, Int, IntList, SymInt, SymIntList, Float, FloatList, Bool, ScalarType, Device, Str
};

struct SchemaArg {
  std::string name;
  ArgBase base;
  bool optional = false;       // T? (None allowed)
  bool elem_optional = false;  // Tensor?[]
  std::optional<NodeArg> default_value;
  std::string type_text;       // as written, for messages
};

struct Schema {
  std::vector<SchemaArg> args;
  int num_returns = 1;  // -1: Tensor[] (any number)
};

const Schema& schema_of(ops::OpId op);
// Whether `a` is a valid value for the argument (None only where optional).
bool arg_matches(const SchemaArg& s, const NodeArg& a);
// The name of a NodeArg's alternative, for messages ("int", "Value", "None", ...).
const char* arg_kind_name(const NodeArg& a);

}  // namespace kiln::graph

namespace kiln::graph {
// Equal arguments: the same values (by identity), numbers and lists; NaN equals NaN, 0.0 and
// -0.0 differ.
bool arg_equal(const NodeArg& a, const NodeArg& b);
}  // namespace kiln::graph
