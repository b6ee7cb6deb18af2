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
