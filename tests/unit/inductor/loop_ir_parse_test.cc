// The loop IR's parser (src/inductor/loop_ir_parse.cc): what it builds, constants' dtypes, and
// its errors (line:col, what is wrong). The round trip over every golden graph is
// InductorGolden.LoopIRRoundTrip.
#include <gtest/gtest.h>

#include "inductor/inductor.h"
#include "support/test_util.h"

namespace kiln::inductor {
namespace {

const char* kTwoKernels =
    "in0: input 0 f32[4, s0] strides [s0, 1]\n"
    "buf1: temp f32[4] strides [1]\n"
    "buf2: temp i64[4, s0] strides [s0, 1] offset 0\n"
    "k0_sum: reduction -> buf1 over [i0 < 4] sum over [r0 < s0]  # sum\n"
    "    t0: f32 = load in0[(i0*s0 + r0)]\n"
    "    store t0\n"
    "k1_div: pointwise -> buf2 over [i0 < 4, i1 < s0]  # div, convert_element_type\n"
    "    t0: f32 = load in0[(i0*s0 + i1)]\n"
    "    t1: f32 = load buf1[i0]\n"
    "    t2: f32 = div[floor] t0, t1\n"
    "    t3: b8 = gt t2, 0.5\n"
    "    t4: f32 = where t3, t2, -inf\n"
    "    t5: i64 = cast t4\n"
    "    store t5\n"
    "outputs: buf2 buf1\n";

TEST(LoopIRParse, BuildsTheProgramItPrints) {
  const Program p = parse(kTwoKernels);
  ASSERT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(p.buffers[0].kind, BufferKind::Input);
  EXPECT_EQ(p.buffers[2].dtype, kInt64);
  EXPECT_EQ(p.buffers[2].producer, 1);
  ASSERT_EQ(p.nodes.size(), 2u);
  const Node& red = p.nodes[0];
  EXPECT_EQ(red.kind, NodeKind::Reduction);
  EXPECT_EQ(red.reduce, tile::ReduceKind::Sum);
  EXPECT_EQ(red.reduction_ranges.at(0).str(), "s0");
  ASSERT_EQ(red.origins.size(), 1u);
  EXPECT_EQ(red.origins[0].op, ops::OpId::sum);
  const Node& pw = p.nodes[1];
  EXPECT_EQ(pw.origins.size(), 2u);
  const Value* cast = pw.bodies.at(0);
  ASSERT_EQ(cast->kind, ValueKind::Cast);
  const Value* where = cast->args.at(0);
  EXPECT_EQ(where->op, ops::OpId::where);
  // -inf is where's f32 operand; 0.5 compares with an f32: both f32 without saying so.
  EXPECT_EQ(where->args.at(2)->kind, ValueKind::Constant);
  EXPECT_EQ(where->args.at(2)->dtype, kFloat32);
  EXPECT_TRUE(std::isinf(where->args.at(2)->number.to_double()) && where->args.at(2)->number.to_double() < 0);
  const Value* gt = where->args.at(0);
  EXPECT_EQ(gt->args.at(1)->dtype, kFloat32);
  EXPECT_EQ(gt->args.at(1)->number.to_double(), 0.5);
  const Value* div = where->args.at(1);
  EXPECT_EQ(div->rounding, tile::Rounding::Floor);
  // The load of in0 is the one both the division and nothing else share; the two loads differ.
  EXPECT_NE(div->args.at(0), red.bodies.at(0));
  EXPECT_EQ(p.outputs, (std::vector<int>{2, 1}));
  EXPECT_NO_THROW(verify(p));
}

TEST(LoopIRParse, AConstantOfAnotherDtypeSaysSo) {
  Program p;
  Buffer in;
  in.name = "in0";
  in.kind = BufferKind::Input;
  in.input = 0;
  in.sizes = {3};
  in.strides = {1};
  p.add_buffer(in);
  Buffer out;
  out.sizes = {3};
  out.strides = {1};
  out.producer = 0;
  const int o = p.add_buffer(out);
  Node n;
  n.kind = NodeKind::Pointwise;
  n.name = "k0";
  n.ranges = {3};
  n.vars = index_vars("i", n.ranges);
  n.outputs = {o};
  const Value* x = p.load(0, n.vars[0]);
  n.bodies = {p.call(ops::OpId::add, {x, p.constant(kiln::Scalar(int64_t(2)), kInt32)}, kFloat32)};
  p.nodes.push_back(std::move(n));
  p.outputs = {o};
  const std::string text = print(p);
  EXPECT_NE(text.find("add t0, 2:i32"), std::string::npos) << text;
  const Program q = parse(text);
  const Value* c = q.nodes.at(0).bodies.at(0)->args.at(1);
  EXPECT_EQ(c->dtype, kInt32);
  EXPECT_TRUE(c->number.is_int());
  EXPECT_EQ(print(q), text);
}

// A masked load (constant_pad's): "if" and its bool mask, the last arg, after the index; the
// index may leave the buffer where the mask is false (i0 - 2 here).
TEST(LoopIRParse, AMaskedLoadPrintsAndParsesItsMask) {
  const char* text =
      "in0: input 0 f32[4] strides [1]\n"
      "buf1: temp f32[6] strides [1]\n"
      "k0: pointwise -> buf1 over [i0 < 6]\n"
      "    t0: i64 = index i0\n"
      "    t1: b8 = ge t0, 2\n"
      "    t2: f32 = load in0[(-2 + i0)] if t1\n"
      "    t3: f32 = where t1, t2, 0.\n"
      "    store t3\n"
      "outputs: buf1\n";
  const Program p = parse(text);
  EXPECT_EQ(print(p), text);
  const Value* load = p.nodes.at(0).bodies.at(0)->args.at(1);
  ASSERT_EQ(load->kind, ValueKind::Load);
  EXPECT_TRUE(load->masked);
  EXPECT_EQ(load->args.back(), p.nodes.at(0).bodies.at(0)->args.at(0));
  EXPECT_EQ(gather_count(*load), 0u);
  EXPECT_NO_THROW(verify(p));
  // (a mask that is not a bool)
  std::string bad = text;
  bad.replace(bad.find("b8 = ge t0, 2"), 13, "f32 = cast t0");
  EXPECT_THROW(parse(bad), Error);
}

TEST(LoopIRParse, ErrorsSayWhereAndWhat) {
  auto expect_error = [](const std::string& text, const std::string& want) {
    try {
      parse(text);
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  const std::string head = "in0: input 0 f32[4] strides [1]\nbuf1: temp f32[4] strides [1]\n";
  expect_error(head + "k0: pointwise -> buf1 over [i0 < 4]\n    t0: f32 = load buf7[i0]\n    store t0\noutputs: buf1\n",
               "4:20: unknown buffer 'buf7'");
  expect_error(head + "k0: pointwise -> buf1 over [i0 < 4]\n    store t3\noutputs: buf1\n", "4:11: use of undefined value t3");
  expect_error(head + "k0: pointwise -> buf1 over [i0 < 4]\n    t0: f32 = frobnicate i0\n    store t0\noutputs: buf1\n",
               "4:15: unknown prim 'frobnicate'");
  expect_error(head + "k0: elementwise -> buf1 over [i0 < 4]\noutputs: buf1\n", "unknown buffer or node kind 'elementwise'");
  expect_error(head + "k0: pointwise -> buf1 over [i0 < 4]\n    t0: f32 = load in0[i0]\noutputs: buf1\n",
               "stores 0 values into 1 buffers");
  expect_error(head + "k0: pointwise -> in0 over [i0 < 4]\n", "writes in0, which is not a temp");
  expect_error(head + "k0: reduction -> buf1 over [i0 < 4] mean over [r0 < 2]\n", "3:37: unknown reduction 'mean'");
  expect_error(head + "k0: pointwise -> buf1 over [i0 < 4]\n    t0: i32 = load in0[i0]\n", "a load's dtype is its buffer's");
  expect_error(head, "expected 'outputs:' at the end of the program");
  expect_error("in0: input 0 f99[4] strides [1]\n", "1:14: expected a dtype");
  expect_error(head + "outputs: buf1 ?\n", "unexpected character '?'");
}

TEST(LoopIRParse, ThePipelineRunsItsPasses) {
  // Two siblings reading in0, unfused: fuse makes them one kernel, name names it anew.
  const std::string text =
      "in0: input 0 f32[8] strides [1]\n"
      "buf1: temp f32[8] strides [1]\n"
      "buf2: temp f32[8] strides [1]\n"
      "a: pointwise -> buf1 over [i0 < 8]  # exp\n"
      "    t0: f32 = load in0[i0]\n"
      "    t1: f32 = exp t0\n"
      "    store t1\n"
      "b: pointwise -> buf2 over [i0 < 8]  # sin\n"
      "    t0: f32 = load in0[i0]\n"
      "    t1: f32 = sin t0\n"
      "    store t1\n"
      "outputs: buf1 buf2\n";
  EXPECT_EQ(run_loop_pipeline("", text), text);
  const std::string fused = run_loop_pipeline("fuse | name", text);
  EXPECT_NE(fused.find("k0_exp_sin: pointwise -> buf1, buf2 over [i0 < 8]  # exp, sin\n"), std::string::npos) << fused;
  EXPECT_EQ(fused.find("\nb:"), std::string::npos) << fused;
  EXPECT_NE(run_loop_pipeline("fuse | c", text).find("void k"), std::string::npos);
  EXPECT_EQ(run_pipeline("loop: fuse | name", text), fused);
  EXPECT_THROW(run_loop_pipeline("c | fuse", text), Error);
  EXPECT_THROW(run_loop_pipeline("lower", text), Error);
}

}  // namespace
}  // namespace kiln::inductor
