// Errors carry the op, the inputs' shapes and dtypes, a hint, and the caller's source location.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

using namespace kiln;

TEST(Errors, BroadcastMismatchNamesOpShapesAndLine) {
  Tensor a = zeros({2, 3}), b = zeros({4});
  const unsigned line = __LINE__ + 2;
  try {
    Tensor c = a + b;
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "add");
    EXPECT_NE(std::string(e.what()).find("float32[2, 3], float32[4]"), std::string::npos) << e.what();
    EXPECT_NE(e.file().find("error_test.cc"), std::string::npos) << e.file();
    EXPECT_EQ(e.line(), line);
    EXPECT_FALSE(e.hint().empty());
  }
}

TEST(Errors, FreeFunctionsReportTheCallerLine) {
  Tensor a = zeros({2, 3});
  const unsigned line = __LINE__ + 2;
  try {
    (void)a.permute({0, 0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.op(), "permute");
    EXPECT_EQ(e.line(), line);
  }
}

TEST(Errors, BadDimIsAnError) {
  EXPECT_THROW(zeros({2}).unsqueeze(3), Error);
  EXPECT_THROW(zeros({2, 2}).sum(IntList{5}), Error);
  EXPECT_THROW(zeros({2, 2}).sum(IntList{1, 1}), Error);
}

TEST(Errors, InPlaceResultMustFitTheTarget) {
  Tensor i = zeros({3}, kInt64);
  EXPECT_THROW(i.add_(1.5), Error);             // float result into an int tensor
  EXPECT_THROW(zeros({3}).add_(zeros({2, 3})), Error);  // result shape differs
}

TEST(Errors, ViewOfNonViewableLayout) {
  Tensor t = zeros({3, 4}).t();
  EXPECT_THROW(t.view({12}), Error);
  EXPECT_NO_THROW(t.reshape({12}));
}

TEST(Errors, NegativeSizes) { EXPECT_THROW(zeros({2, -1}), Error); }
