// The tile IR's pointwise prims against ops.def and the eager kernels: the same list, the same
// arities, and the same dtypes accepted (tile's answers come from the scalar functions'
// signatures; eager's from running the op).
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include "ops/dispatch.h"
#include "ops/schema.h"
#include "tile/prims.h"

namespace kiln::tile {
namespace {

using ops::OpId;

int tensor_args(OpId op) {
  int n = 0;
  for (const ops::SchemaArg& a : ops::op_schema(op).args) n += a.type == ops::ArgType::Tensor;
  return n;
}

TEST(TilePrims, EveryPointwisePrimOfOpsDefIsATileOp) {
  int prims = 0;
  for (int i = 0; i < ops::kNumOps; ++i) {
    const ops::OpInfo& info = ops::op_info(OpId(i));
    const bool pointwise_prim = info.family == ops::OpFamily::POINTWISE && info.kind == ops::OpKind::PRIM;
    if (info.id == OpId::convert_element_type) {
      EXPECT_FALSE(is_prim(info.id)) << "convert_element_type is the Cast op";
      continue;
    }
    EXPECT_EQ(is_prim(info.id), pointwise_prim) << info.name;
    if (pointwise_prim) {
      EXPECT_EQ(prim_arity(info.id), tensor_args(info.id)) << info.name;
      ++prims;
    }
  }
  EXPECT_GE(prims, 60);
}

// A small input of dtype d for op (integer divisors are nonzero: eager raises on zero).
Tensor input(DType d, bool divisor) {
  std::vector<double> v = {-3, -2, -1, 0, 1, 2, 3, 5};
  if (divisor) v = {-3, -2, -1, 1, 2, 3, 5, 4};
  if (d == kUInt8) for (double& x : v) x = std::abs(x) + (divisor ? 1 : 0);
  if (d == kBool) v = {0, 1, 1, 0, 1, 0, 1, 1};
  return tensor(v, {8}, kFloat64).to(d);
}

TEST(TilePrims, SupportsTheDtypesEagerDoes) {
  const DType all[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  int checked = 0;
  for (int i = 0; i < ops::kNumOps; ++i) {
    const OpId op = OpId(i);
    if (!is_prim(op) || op == OpId::where) continue;
    const ops::OpInfo& info = ops::op_info(op);
    for (DType d : all) {
      std::vector<ops::Arg> args;
      for (int k = 0; k < prim_arity(op); ++k) args.push_back(input(d, k == 1));
      for (size_t k = args.size(); k < ops::op_schema(op).args.size(); ++k) args.push_back(std::monostate{});
      std::optional<DType> out;
      try {
        out = ops::call(op, args).at(0).dtype();
      } catch (const Error&) {
      }
      // What tile computes in: the inputs' dtype for predicates and comparisons, else the
      // output's (an INT_TO_FLOAT prim on integers computes in f32).
      DType compute = d;
      if (out) compute = info.dtype_rule == ops::DTypeRule::BOOL ? d : *out;
      else if (info.dtype_rule == ops::DTypeRule::INT_TO_FLOAT && !is_floating(d)) compute = kFloat32;
      EXPECT_EQ(prim_supports(op, compute), out.has_value()) << info.name << " on " << name(d);
      if (out) {
        EXPECT_EQ(prim_result_dtype(op, compute), *out) << info.name << " on " << name(d);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 600);
}

TEST(TilePrims, FoldingComputesWhatEagerComputes) {
  // eval_prim (constant folding) against eager on single elements, incl. the edge cases the
  // scalar header defines (integer overflow wraps, Python's remainder, NaN-propagating max).
  struct Case {
    OpId op;
    DType d;
    std::vector<double> in;
  };
  const double nan = std::nan("");
  const std::vector<Case> cases = {
      {OpId::add, kInt8, {127, 1}},         {OpId::remainder, kInt32, {-7, 3}},  {OpId::floor_divide, kInt32, {-7, 2}},
      {OpId::maximum, kFloat32, {nan, 1}},  {OpId::exp, kFloat32, {0.5}},        {OpId::pow, kInt64, {3, 4}},
      {OpId::sigmoid, kFloat16, {0.3}},     {OpId::nextafter, kBFloat16, {1, 2}}, {OpId::lt, kFloat64, {1, 2}},
      {OpId::shift_left, kInt16, {1, 15}},  {OpId::atan2, kFloat64, {1, -1}},   {OpId::neg, kInt32, {-2147483648.0}},
  };
  for (const Case& c : cases) {
    std::vector<Scalar> args;
    std::vector<Tensor> ts;
    for (double v : c.in) {
      ts.push_back(tensor({v}, {1}, kFloat64).to(c.d));
      args.push_back(ts.back().to(kFloat64).item<double>());
    }
    std::vector<ops::Arg> eargs(ts.begin(), ts.end());
    for (size_t k = eargs.size(); k < ops::op_schema(c.op).args.size(); ++k) eargs.push_back(std::monostate{});
    const double want = ops::call(c.op, eargs).at(0).to(kFloat64).item<double>();
    const double got = eval_prim(c.op, Rounding::None, c.d, args).to_double();
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << ops::op_info(c.op).name;
    else EXPECT_EQ(got, want) << ops::op_info(c.op).name << " on " << name(c.d);
  }
  // Casts: float -> int truncates and wraps; to bool is != 0; to f16 rounds.
  EXPECT_EQ(eval_cast(Scalar(-1.7), kFloat32, kUInt8).to_int(), 255);
  EXPECT_EQ(eval_cast(Scalar(0.25), kFloat64, kBool).to_bool(), true);
  EXPECT_EQ(eval_cast(Scalar(1.0 / 3), kFloat64, kFloat16).to_double(), double(float(Half(float(1.0 / 3)))));
}

}  // namespace
}  // namespace kiln::tile
