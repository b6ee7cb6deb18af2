// ops.def's dtype column against the meta functions. For every op with a dtype rule, its meta
// runs on sample inputs of int32, int64, bool, float32 and bfloat16, alone and mixed (two
// dtypes, 0-d tensors, wrapped numbers, dtype= arguments), and the output dtype must be what the
// rule gives. The promotion the rules start from is worked out here from PyTorch's type
// promotion documentation (torch.result_type), not with kiln's result_type.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <map>

#include "ops/dispatch.h"
#include "ops/schema.h"

using namespace kiln;
using namespace kiln::ops;

namespace {

const DType kSampled[] = {kInt32, kInt64, kBool, kFloat32, kBFloat16};

// A value operand: a tensor with dims, a 0-d tensor, or a Python number (wrapped as a 0-d
// tensor of dtype bool, int64 or float64).
enum class Form { Dims, ZeroDim, Number };
struct Operand {
  DType dtype;
  Form form = Form::Dims;
};

std::string describe(const std::vector<Operand>& vs, std::optional<DType> requested) {
  std::string s;
  for (const Operand& v : vs)
    s += std::string(s.empty() ? "" : ", ") + (v.form == Form::Number ? "number " : v.form == Form::ZeroDim ? "0-d " : "") +
         name(v.dtype);
  return s + (requested ? std::string(", dtype=") + name(*requested) : "");
}

// PyTorch's categories: bool < integer < floating.
int category(DType t) { return t == kBool ? 0 : is_floating(t) ? 2 : 1; }

// torch.promote_types over the sampled dtypes: the higher category wins; within a category the
// wider type (int32 < int64, bfloat16 < float32).
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  return category(a) == 1 ? kInt64 : kFloat32;
}

// torch.result_type: operands of each priority (tensors with dims, then 0-d tensors, then
// numbers, a Python float counting as the default dtype float32) promote among themselves; a
// lower priority changes the result only when it is of a higher category.
DType result_type_of(const std::vector<Operand>& values) {
  std::optional<DType> by_form[3];
  for (const Operand& v : values) {
    const DType d = v.form == Form::Number && is_floating(v.dtype) ? kFloat32 : v.dtype;
    auto& r = by_form[int(v.form)];
    r = r ? promote(*r, d) : d;
  }
  auto combine = [](std::optional<DType> higher, std::optional<DType> lower) {
    if (!higher) return lower;
    if (lower && category(*lower) > category(*higher)) return std::optional<DType>(promote(*higher, *lower));
    return higher;
  };
  return *combine(by_form[0], combine(by_form[1], by_form[2]));
}

// What the rule says the output dtype is (ops.def's header defines the rules).
DType expected_dtype(DTypeRule rule, const std::vector<Operand>& values, std::optional<DType> requested) {
  switch (rule) {
    case DTypeRule::SAME: return values.at(0).dtype;
    case DTypeRule::PROMOTE: return result_type_of(values);
    case DTypeRule::INT_TO_FLOAT: {
      const DType r = result_type_of(values);
      return is_floating(r) ? r : kFloat32;
    }
    case DTypeRule::INT_TO_LONG: {
      const DType r = result_type_of(values);
      return requested ? *requested : is_floating(r) ? r : kInt64;
    }
    case DTypeRule::BOOL: return kBool;
    case DTypeRule::LONG: return kInt64;
    case DTypeRule::ARG: return requested.value_or(kFloat32);
    case DTypeRule::NONE: break;
  }
  ADD_FAILURE() << "no rule";
  return kBool;
}

// Tensor arguments that are not value operands: indices and conditions have fixed dtypes.
bool is_value(const SchemaArg& s) {
  return (s.type == ArgType::Tensor && s.name != "index" && s.name != "condition") || s.type == ArgType::TensorList;
}
const SchemaArg* dtype_arg(const Schema& s) {
  for (const SchemaArg& a : s.args)
    if (a.type == ArgType::ScalarType || a.type == ArgType::OptScalarType) return &a;
  return nullptr;
}
int num_values(const Schema& s) {
  int n = 0;
  for (const SchemaArg& a : s.args) n += is_value(a) ? (a.type == ArgType::TensorList ? 2 : 1) : 0;
  return n;
}

Tensor make_operand(const Operand& v, const Shape& shape) {
  switch (v.form) {
    case Form::Dims: return zeros(SymIntList(shape), v.dtype);
    case Form::ZeroDim: return zeros(SymIntList{}, v.dtype);
    case Form::Number:
      return scalar_to_tensor(v.dtype == kBool ? Scalar(true) : v.dtype == kInt64 ? Scalar(int64_t(2)) : Scalar(2.5));
  }
  return {};
}

// A valid value for each required argument that is not a tensor, by name (and type where one
// name has two: as_strided's SymInt[] stride, convolution's int[] stride).
Arg required_arg(OpId op, const SchemaArg& s) {
  const bool creation = op_info(op).family == OpFamily::CREATION || op_info(op).family == OpFamily::RANDOM;
  static const std::map<std::string, Arg> by_name = {
      {"dim", int64_t(0)},      {"dims", std::vector<int64_t>{1, 0}},
      {"k", int64_t(1)},        {"broadcast_dimensions", std::vector<int64_t>{0, 1}},
      {"pad", SymShape{1, 1}},  {"reduce", std::string("sum")},
      {"length", SymInt(3)},    {"seed", int64_t(0)},
      {"offset", int64_t(0)},   {"transposed", false},
      {"groups", int64_t(1)},   {"padding", std::vector<int64_t>{0}},
      {"dilation", std::vector<int64_t>{1}}, {"output_padding", std::vector<int64_t>{0}},
  };
  if (s.name == "size" || s.name == "shape") return creation ? SymShape{3} : SymShape{3, 3};
  if (s.name == "stride") return s.type == ArgType::SymIntList ? Arg(SymShape{3, 1}) : Arg(std::vector<int64_t>{1});
  auto it = by_name.find(s.name);
  if (it == by_name.end()) ADD_FAILURE() << op_info(op).name << ": no sample for argument " << s.name;
  return it == by_name.end() ? Arg() : it->second;
}

// The boxed arguments of a call of op on `values` (in schema order) and `requested` as dtype=.
std::vector<Arg> sample_args(OpId op, const std::vector<Operand>& values, std::optional<DType> requested) {
  const Schema& schema = op_schema(op);
  const bool conv = op == OpId::convolution;
  const Shape index_shape = op == OpId::index_select ? Shape{3} : Shape{3, 3};
  std::vector<Arg> v;
  size_t next = 0;
  auto value = [&] {
    const Shape shape = conv ? (next == 0 ? Shape{1, 1, 3} : Shape{1, 1, 1}) : Shape{3, 3};
    return make_operand(values.at(next++), shape);
  };
  for (const SchemaArg& s : schema.args) {
    if (s.type == ArgType::TensorList) {
      Tensor first = value();
      v.push_back(TensorList{first, value()});
    } else if (is_value(s)) {
      v.push_back(value());
    } else if (s.name == "index") {
      v.push_back(zeros(SymIntList(index_shape), kInt64));
    } else if (s.name == "condition") {
      v.push_back(zeros(SymIntList{3, 3}, kBool));
    } else if (s.type == ArgType::OptTensorList) {
      v.push_back(TensorList{zeros(SymIntList{3}, kInt64)});
    } else if (s.type == ArgType::ScalarType || s.type == ArgType::OptScalarType) {
      v.push_back(requested ? Arg(*requested) : Arg());
    } else if (s.has_default || s.optional()) {
      v.push_back(s.has_default ? s.default_value : Arg());
    } else {
      v.push_back(required_arg(op, s));
    }
  }
  return v;
}

// The samples of an op: every sampled dtype alone (with and without dtype=); for ops of two
// value operands every pair of dtypes, and each dtype beside a 0-d tensor or a number.
std::vector<std::pair<std::vector<Operand>, std::optional<DType>>> samples(OpId op) {
  const Schema& schema = op_schema(op);
  // dtype= None, where the op allows it, and some dtypes asked for.
  const SchemaArg* dt = dtype_arg(schema);
  std::vector<std::optional<DType>> requests;
  if (!dt || dt->type == ArgType::OptScalarType) requests.push_back(std::nullopt);
  if (dt)
    for (DType r : {kInt32, kInt64, kFloat32}) requests.push_back(r);
  std::vector<std::pair<std::vector<Operand>, std::optional<DType>>> out;
  const int n = num_values(schema);
  if (n == 0)
    for (auto r : requests) out.push_back({{}, r});
  if (n == 1)
    for (DType d : kSampled)
      for (auto r : requests) out.push_back({{{d}}, r});
  if (n == 2)
    for (DType d : kSampled) {
      for (DType e : kSampled) {
        out.push_back({{{d}, {e}}, std::nullopt});
        out.push_back({{{d}, {e, Form::ZeroDim}}, std::nullopt});
        out.push_back({{{d, Form::ZeroDim}, {e}}, std::nullopt});
      }
      for (DType number : {kBool, kInt64, kFloat64}) {
        out.push_back({{{d}, {number, Form::Number}}, std::nullopt});
        out.push_back({{{number, Form::Number}, {d}}, std::nullopt});
      }
    }
  return out;
}

TEST(DTypeRule, EveryRuleMatchesItsMetaFunction) {
  ASSERT_EQ(default_float_dtype(), kFloat32);
  int checked = 0, ops_checked = 0;
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& info = op_info(OpId(i));
    if (info.dtype_rule == DTypeRule::NONE) continue;
    ASSERT_NE(info.meta, nullptr) << info.name << " has a dtype rule but no meta function";
    const int n = num_values(op_schema(info.id));
    int accepted = 0, accepted_mixed = 0;
    std::string rejected;
    for (const auto& [values, requested] : samples(info.id)) {
      const std::string what = std::string(info.name) + "(" + describe(values, requested) + ")";
      std::vector<TensorSpec> specs;
      try {
        specs = info.meta(Args{info.id, sample_args(info.id, values, requested)});
      } catch (const Error& e) {
        // An op may refuse a dtype (neg of bool, bitwise ops of floats, matmul of two dtypes);
        // a malformed sample would be this test's bug.
        const std::string msg = e.what();
        EXPECT_EQ(msg.find("internal"), std::string::npos) << what << ": " << msg;
        EXPECT_EQ(msg.find(" should be a"), std::string::npos) << what << ": " << msg;
        rejected += "  " + what + "\n";
        continue;
      }
      ASSERT_FALSE(specs.empty()) << what;
      EXPECT_EQ(name(specs[0].dtype), std::string(name(expected_dtype(info.dtype_rule, values, requested)))) << what;
      ++accepted;
      ++checked;
      accepted_mixed += values.size() == 2 && (values[0].dtype != values[1].dtype || values[1].form != Form::Dims);
    }
    // Each op accepts some of its samples, and ops that promote accept mixed ones.
    EXPECT_GE(accepted, 2) << info.name << " accepted almost no samples; rejected:\n" << rejected;
    const bool promotes = info.dtype_rule == DTypeRule::PROMOTE || info.dtype_rule == DTypeRule::INT_TO_FLOAT ||
                          info.dtype_rule == DTypeRule::BOOL;
    if (n == 2 && promotes) {
      EXPECT_GE(accepted_mixed, 1) << info.name << " accepted no mixed sample; rejected:\n" << rejected;
    }
    ++ops_checked;
  }
  EXPECT_GE(ops_checked, 100);
  EXPECT_GE(checked, 2000) << "samples checked";
  RecordProperty("samples_checked", checked);
}

// Promotion as PyTorch documents it, on a few cases worked out by hand, so the expectations
// above rest on checked ground.
TEST(DTypeRule, ExpectedPromotionFollowsPyTorch) {
  EXPECT_EQ(result_type_of({{kInt32}, {kFloat32}}), kFloat32);
  EXPECT_EQ(result_type_of({{kInt32}, {kInt64}}), kInt64);
  EXPECT_EQ(result_type_of({{kBFloat16}, {kFloat32}}), kFloat32);
  EXPECT_EQ(result_type_of({{kBool}, {kInt32}}), kInt32);
  EXPECT_EQ(result_type_of({{kInt32}, {kInt64, Form::ZeroDim}}), kInt32);      // same category: dims win
  EXPECT_EQ(result_type_of({{kInt32}, {kFloat32, Form::ZeroDim}}), kFloat32);  // higher category wins
  EXPECT_EQ(result_type_of({{kInt32}, {kFloat64, Form::Number}}), kFloat32);   // a float is the default dtype
  EXPECT_EQ(result_type_of({{kBFloat16}, {kFloat64, Form::Number}}), kBFloat16);
  EXPECT_EQ(result_type_of({{kBool}, {kInt64, Form::Number}}), kInt64);
  EXPECT_EQ(result_type_of({{kInt32}, {kInt64, Form::Number}}), kInt32);
  EXPECT_EQ(result_type_of({{kFloat32}, {kBool, Form::Number}}), kFloat32);
}

}  // namespace
