// Walks ops.def: every op must have what its kind needs (the contract of ARCHITECTURE.md).
#include <gtest/gtest.h>

#include <regex>

#include "ops/dispatch.h"

using namespace kiln::ops;

TEST(OpRegistry, EveryOpHasItsPieces) {
  std::vector<std::string> missing;
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& op = op_info(OpId(i));
    const std::string n = op.name;
    switch (op.kind) {
      case OpKind::PRIM:
        if (!op.meta) missing.push_back(n + ": prim without a meta function");
        if (!op.kernel(kiln::DeviceType::CPU)) missing.push_back(n + ": prim without a CPU kernel");
        if (op.differentiable() && !op.derivative) missing.push_back(n + ": differentiable prim without a derivative");
        break;
      case OpKind::VIEW:
        if (!op.meta) missing.push_back(n + ": view without a meta function");
        if (op.differentiable() && !op.derivative) missing.push_back(n + ": differentiable view without a derivative");
        break;
      case OpKind::COMPOSITE:
        if (!op.decomp) missing.push_back(n + ": composite without a decomposition");
        if (op.kernel(kiln::DeviceType::CPU) && !op.meta) missing.push_back(n + ": composite with a fast kernel but no meta function");
        break;
    }
  }
  std::string all;
  for (auto& m : missing) all += "  " + m + "\n";
  EXPECT_TRUE(missing.empty()) << missing.size() << " ops are incomplete:\n" << all;
}

TEST(OpRegistry, SchemaNamesMatchIds) {
  // "max.dim(...)" belongs to id max_dim; "add(...)" to add.
  std::regex head(R"(^(\w+)(?:\.(\w+))?\()");
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& op = op_info(OpId(i));
    std::cmatch m;
    ASSERT_TRUE(std::regex_search(op.schema, m, head)) << op.schema;
    std::string id = m[1].str() + (m[2].matched ? "_" + m[2].str() : "");
    EXPECT_EQ(id, op.name) << op.schema;
    EXPECT_EQ(find_op(op.name), &op);
  }
}

TEST(OpRegistry, PrimSetIsAboutTheDesignedSize) {
  int prims = 0;
  for (int i = 0; i < kNumOps; ++i) prims += op_info(OpId(i)).kind != OpKind::COMPOSITE;
  EXPECT_GE(prims, 100);
  EXPECT_LE(prims, 130);
}

TEST(OpRegistry, FamilyAndDtypeColumnsAgreeWithKindAndFlags) {
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& op = op_info(OpId(i));
    // The view prims are the VIEW family's prims; composites of views are VIEW too.
    if (op.kind == OpKind::VIEW) { EXPECT_EQ(op.family, OpFamily::VIEW) << op.name; }
    if (op.kind == OpKind::PRIM) { EXPECT_NE(op.family, OpFamily::VIEW) << op.name << ": a view family prim is a VIEW"; }
    if (op.family == OpFamily::RANDOM) { EXPECT_TRUE(op.flags & RANDOM) << op.name; }
    if (op.family == OpFamily::MUTATION) EXPECT_TRUE(op.flags & MUTATES) << op.name;
    // Every prim has a dtype rule (full's dtype comes from its fill value, custom's from the
    // registered op's meta: no rule); composites have none unless their family's meta serves
    // their fast kernel.
    if (op.kind != OpKind::COMPOSITE && op.id != OpId::full && op.id != OpId::custom)
      EXPECT_NE(op.dtype_rule, DTypeRule::NONE) << op.name << ": a prim without a dtype rule";
    if (op.kind == OpKind::COMPOSITE && op.dtype_rule != DTypeRule::NONE)
      EXPECT_TRUE(op.kernel(kiln::DeviceType::CPU) && op.meta) << op.name << ": a composite with a dtype rule but no fast kernel";
  }
  EXPECT_STREQ(family_name(OpFamily::POINTWISE), "pointwise");
  EXPECT_STREQ(family_name(OpFamily::NN), "nn");
  EXPECT_STREQ(dtype_rule_name(DTypeRule::INT_TO_FLOAT), "int_to_float");
  EXPECT_STREQ(dtype_rule_name(DTypeRule::ARG), "arg");
}
