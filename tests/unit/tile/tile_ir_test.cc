// The tile IR: the builder (broadcasting, promotion, regions), the verifier's rejections (with
// the user's line), the text form's round trip and the parser's errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tile/builder.h"
#include "tile/passes/passes.h"
#include "tests/unit/tile/tile_kernels.h"

namespace kiln::tile {
namespace {

int count(const Program& p, OpCode c) {
  int n = 0;
  walk(p.body, [&](const Op& op) { n += op.code == c; });
  return n;
}


// The error a call throws (the test fails if it throws none).
template <class F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no kiln::Error was thrown";
  return Error(Error::Info{});
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(TileBuilder, VectorAddIsTheSeedKernel) {
  const Program p = test::vector_add(256);
  ASSERT_EQ(p.params.size(), 4u);
  EXPECT_EQ(p.params[0].value->type, Type::pointer(kFloat32));
  EXPECT_EQ(p.params[3].value->type, Type::scalar(kInt32));
  ASSERT_EQ(p.meta.constexprs.size(), 1u);
  EXPECT_EQ(p.meta.constexprs[0].first, "BLOCK");
  EXPECT_EQ(p.meta.constexprs[0].second.to_int(), 256);
  EXPECT_EQ(count(p, OpCode::ProgramId), 1);
  EXPECT_EQ(count(p, OpCode::Arange), 1);
  EXPECT_EQ(count(p, OpCode::Load), 2);
  EXPECT_EQ(count(p, OpCode::Store), 1);
  EXPECT_EQ(count(p, OpCode::AddPtr), 3);
  // The store: pointer block, value and mask all of the block's shape.
  const Op& st = *p.body.ops.back();
  ASSERT_EQ(st.code, OpCode::Store);
  EXPECT_EQ(st.operands[0]->type, Type::pointer(kFloat32).with_shape({256}));
  EXPECT_EQ(st.operands[1]->type, Type::block(kFloat32, {256}));
  EXPECT_EQ(st.operands[2]->type, Type::block(kBool, {256}));
  // Origins are this test's kernels header, at the builder calls' lines.
  EXPECT_TRUE(ends_with(st.origin.file, "tile_kernels.h")) << st.origin.file;
  EXPECT_GT(st.origin.line, 0);
}

TEST(TileBuilder, PromotesAsPyTorch) {
  Builder b("promote");
  auto i = b.arg_int("i");
  auto l = b.arg_int("l", kInt64);
  auto f = b.arg_float("f");
  auto h = b.zeros({4}, kFloat16);
  auto m = b.zeros({4}, kBool);
  EXPECT_EQ((i + 1).dtype(), kInt32);          // an int number takes the value's dtype
  EXPECT_EQ((i + 1.5).dtype(), kFloat32);      // a float number makes an int value f32
  EXPECT_EQ((i + l).dtype(), kInt64);          // two values: promote_types
  EXPECT_EQ((h + f).dtype(), kFloat32);
  EXPECT_EQ((h + 1.0).dtype(), kFloat16);      // a float number keeps a float value's dtype
  EXPECT_EQ((m + 1).dtype(), kInt64);          // bool meets int: int64, as PyTorch
  EXPECT_EQ((i / 2).dtype(), kFloat32);        // true division
  EXPECT_EQ(b.exp(i).dtype(), kFloat32);       // INT_TO_FLOAT prims cast integers
  EXPECT_EQ((i < l).dtype(), kBool);
  EXPECT_EQ(b.floor_divide(i, 2).dtype(), kInt32);
  // The i32 + f32 case inserted a cast of the i32 operand.
  auto y = i + f;
  const Op& add = *y.value()->def;
  ASSERT_EQ(add.code, OpCode::Pointwise);
  EXPECT_EQ(add.operands[0]->def->code, OpCode::Cast);
  EXPECT_EQ(add.operands[0]->type, Type::scalar(kFloat32));
}

TEST(TileBuilder, BroadcastsScalarsAndSizeOneDims) {
  Builder b("bcast");
  auto col = b.arange(0, 4).expand_dims(1);  // [4, 1]
  auto row = b.arange(0, 8).expand_dims(0);  // [1, 8]
  EXPECT_EQ((col + row).shape(), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ((col * 2).shape(), (std::vector<int64_t>{4, 1}));
  auto wide = b.zeros({3, 8});
  EXPECT_EQ((wide + b.arange(0, 8)).shape(), (std::vector<int64_t>{3, 8}));  // ranks align on the right
  const int line = __LINE__ + 1;
  Error e = error_of([&] { (void)(b.arange(0, 4) + b.arange(0, 8)); });
  EXPECT_NE(e.message().find("cannot broadcast the shapes [4] and [8]"), std::string::npos) << e.what();
  EXPECT_EQ(int(e.line()), line);
  EXPECT_TRUE(ends_with(e.file(), "tile_ir_test.cc")) << e.file();
}

TEST(TileBuilder, MistakesNameTheUsersLine) {
  Builder b("bad");
  auto x = b.arg_ptr("x", kFloat32);
  auto n = b.arg_int("n");
  auto offs = b.arange(0, 128);
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { b.load(x + offs, b.arange(0, 64) < n); });
    EXPECT_EQ(e.op(), "tile.load");
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { b.load(x + offs, offs); });  // an i32 mask
    EXPECT_NE(e.message().find("the mask must be b8"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { (void)(x * 2); });
    EXPECT_NE(e.message().find("pointers only take + and -"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { (void)(x + b.zeros({128})); });
    EXPECT_NE(e.message().find("pointer offsets must be integers"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { b.store(x + offs, x + offs); });
    EXPECT_NE(e.message().find("must be data, not the pointer"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { b.dot(b.zeros({16, 8}), b.zeros({4, 16})); });
    EXPECT_NE(e.message().find("inner dims differ"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { b.sum(offs, 1); });
    EXPECT_NE(e.message().find("axis 1 is out of range"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  {
    const int line = __LINE__ + 1;
    Error e = error_of([&] { b.call(ops::OpId::bitwise_and, {b.zeros({4}), b.zeros({4})}); });
    EXPECT_NE(e.message().find("bitwise_and is not defined for f32"), std::string::npos) << e.what();
    EXPECT_EQ(int(e.line()), line);
  }
  Error e = error_of([&] { b.arange(0, 8) + (int64_t(1) << 40); });
  EXPECT_NE(e.message().find("does not fit in i32"), std::string::npos) << e.what();
}

TEST(TileBuilder, LoopsAndBranchesCarryValues) {
  Builder b("regions");
  auto out = b.arg_ptr("out", kFloat32);
  auto n = b.arg_int("n");
  auto r = b.for_loop(0, n, 1, {b.zeros({8}), b.constant(Scalar(int64_t(0)))}, [&](Val i, const std::vector<Val>& c) {
    return std::vector<Val>{c[0] + i, c[1] + 1};
  });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type(), Type::block(kFloat32, {8}));
  EXPECT_EQ(r[1].type(), Type::scalar(kInt32));
  auto picked = b.if_else(r[1] > 3, [&] { return std::vector<Val>{r[0] * 2}; }, [&] { return std::vector<Val>{r[0]}; });
  b.store(out + b.arange(0, 8), picked[0]);
  Program p = b.finish();
  EXPECT_EQ(count(p, OpCode::For), 1);
  EXPECT_EQ(count(p, OpCode::If), 1);
  EXPECT_EQ(count(p, OpCode::Yield), 3);
  EXPECT_EQ(print(parse(print(p))), print(p));

  Builder bad("bad");
  const int line = __LINE__ + 1;
  Error e = error_of([&] { bad.for_loop(0, 4, 1, {bad.zeros({8})}, [&](Val, const std::vector<Val>&) { return std::vector<Val>{bad.zeros({8}, kInt32)}; }); });
  EXPECT_NE(e.message().find("carried value 0 starts as f32[8] but the body returns i32[8]"), std::string::npos) << e.what();
  EXPECT_EQ(int(e.line()), line);
}

TEST(TileText, RoundTripsTheKernels) {
  for (const Program& p : {test::vector_add(), test::softmax(), test::matmul()}) {
    const std::string text = print(p);
    Program q = parse(text);
    verify(q);
    EXPECT_EQ(print(q), text);
  }
}

TEST(TileText, ReadsWhatIsWrittenByHand) {
  // Written by hand (not printed): comments, an if without else, a block constant, every origin form.
  const std::string text = R"(// a comment line
kernel k(%p: ptr<f16>, %n: i64, %s: i64 sym, %scale: f32) meta(BLOCK=8, num_warps=2, num_stages=1) {
  %pid: i32 = program_id(0)  # k.py:3
  %z: f16[8] = constant(-inf)
  %c: b8 = lt(%n, %s)  # mul @ model.py:9
  if %c {
    store(%p, %n)
    yield()
  }
}
)";
  // store of an i64 into ptr<f16> must be rejected: the verifier names the op and the line.
  Error e = error_of([&] { verify(parse(text)); });
  EXPECT_EQ(e.op(), "tile.store");
  EXPECT_NE(e.message().find("the value must be f16"), std::string::npos) << e.what();

  std::string fixed = text;
  fixed.replace(fixed.find("store(%p, %n)"), 13, "store(%p, %one)");
  fixed.insert(fixed.find("    store"), "    %one: f16 = constant(1.0)  # k.py:6\n");
  Program p = parse(fixed);
  verify(p);
  EXPECT_EQ(p.params[2].kind, ParamKind::Sym);
  EXPECT_EQ(p.params[3].kind, ParamKind::Float);
  EXPECT_EQ(p.meta.num_warps, 2);
  const Op& c = *p.body.ops[2];
  EXPECT_EQ(c.origin.op, "mul");
  EXPECT_EQ(c.origin.file, "model.py");
  EXPECT_EQ(c.origin.line, 9);
  EXPECT_TRUE(std::isinf(p.body.ops[1]->value.to_double()));
  EXPECT_EQ(print(parse(print(p))), print(p));
}

TEST(TileText, ParseErrorsNameTheLine) {
  auto msg = [](const std::string& text) { return error_of([&] { parse(text); }).message(); };
  EXPECT_NE(msg("kernel k() meta() {\n  %0: i32 = frobnicate()\n}\n").find("line 2: unknown op frobnicate"), std::string::npos);
  EXPECT_NE(msg("kernel k() meta() {\n  %0: i32 = neg(%9)\n}\n").find("line 2: unknown value %9"), std::string::npos);
  EXPECT_NE(msg("kernel k(%x: q32) meta() {\n}\n").find("line 1: unknown type q32"), std::string::npos);
  EXPECT_NE(msg("kernel k() meta() {\n  %0: i32 = program_id(0)\n").find("expected '}'"), std::string::npos);
}

TEST(TileVerify, RejectsBrokenStructure) {
  // An operand used outside its region: a value of the for's body read after the loop (the
  // builder and the parser cannot make this; a broken pass could).
  Builder b("k");
  auto n = b.arg_int("n");
  Val inner;
  b.for_loop(0, n, 1, {}, [&](Val i, const std::vector<Val>&) {
    inner = i + 1;
    return std::vector<Val>{};
  });
  (void)(b.constant(Scalar(int64_t(1))) + b.constant(Scalar(int64_t(2))));
  Program p = b.finish();
  Op& add = *p.body.ops.back();
  add.operands[0] = inner.value();
  add.origin = {"k.py", 7, ""};
  Error e = error_of([&] { verify(p); });
  EXPECT_EQ(e.op(), "tile.add");
  EXPECT_NE(e.message().find("used before it is defined, or outside its region"), std::string::npos) << e.what();
  EXPECT_EQ(e.file(), "k.py");
  EXPECT_EQ(e.line(), 7u);
  // A yield in the kernel body.
  Error y = error_of([&] { verify(parse("kernel k() meta() {\n  yield()\n}\n")); });
  EXPECT_NE(y.message().find("yield outside a for or if region"), std::string::npos) << y.what();
  // A wrong result type.
  Error t = error_of([&] { verify(parse("kernel k() meta() {\n  %0: i64[4] = arange(0, 4)\n}\n")); });
  EXPECT_NE(t.message().find("result must be i32[4], not i64[4]"), std::string::npos) << t.what();
}

}  // namespace
}  // namespace kiln::tile
