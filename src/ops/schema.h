// An op's schema from ops.def, parsed once: argument names, types, defaults and which are
// keyword-only. Used wherever arguments arrive untyped (the Python bindings, the IR parser and
// verifier) so the schema text in ops.def stays the only description of an op's signature.
#pragma once
#include <string>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::ops {

enum class ArgType : uint8_t {
  Tensor, OptTensor, TensorList, OptTensorList, Scalar, OptScalar, Int, OptInt, IntList, OptIntList,
  SymInt, OptSymInt, SymIntList, OptSymIntList, Float, OptFloat, OptFloatList, Bool, OptBool,
  ScalarType, OptScalarType, OptDevice, Str, OptStr
};

struct SchemaArg {
  std::string name;
  std::string type_text;  // as written in ops.def: "int[]?"
  ArgType type;
  bool kwarg_only = false;
  bool has_default = false;
  Arg default_value;  // the parsed default (None is monostate)
  bool optional() const;  // accepts None
};

struct Schema {
  std::string name;  // the public name: "max" for "max.dim"
  std::vector<SchemaArg> args;
  int num_outputs = 1;  // -1: a Tensor[] output
  std::vector<std::string> output_names;
  int num_positional() const;  // arguments before the '*'
};

// The parsed schema of an op (parsed on first use, then cached).
const Schema& op_schema(OpId op);
// Parses one schema string; throws kiln::Error on malformed text.
Schema parse_schema(const std::string& text);
const char* arg_type_name(ArgType t);

}  // namespace kiln::ops
