// Tensor basics: metadata, storage sharing, dtype conversion, construction, printing.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstring>

#include "support/test_util.h"

using namespace kiln;

TEST(Tensor, MetadataOfAFreshTensor) {
  Tensor t = zeros({2, 3, 4});
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_THROW(t.size(3), Error);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor v = t.transpose(0, 1);
  EXPECT_TRUE(v.shares_storage(t));
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  v.fill_(7);  // writes through the view
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(6, 7));
  Tensor c = v.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(t));
}

TEST(Tensor, Float16RoundTripsKnownBitPatterns) {
  // IEEE binary16 encodings, written down from the format's definition.
  struct {
    float f;
    uint16_t bits;
  } cases[] = {{1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff}, {0.5f, 0x3800},
               {std::ldexp(1.0f, -24), 0x0001} /* smallest subnormal */, {std::ldexp(1.0f, -14), 0x0400},
               {1e6f, 0x7c00} /* overflow -> inf */, {0.0f, 0x0000}};
  for (auto& c : cases) {
    EXPECT_EQ(Half(c.f).bits, c.bits) << c.f;
    if (c.bits != 0x7c00) {
      EXPECT_EQ(float(Half::to_float(c.bits)), c.f);
    }
  }
  // Round to nearest even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> 1.
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  EXPECT_EQ(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
}

TEST(Tensor, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);      // tie -> even
  EXPECT_EQ(BFloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
}

TEST(Tensor, ConversionTruncatesFloatsToInts) {
  Tensor t = tensor<double>({-1.7, -0.5, 0.5, 2.9});
  EXPECT_EQ(t.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 0, 2}));
  EXPECT_EQ(t.to(kBool).to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(tensor<double>({0.0, 3.0}).to(kBool).to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(Tensor, FromBlobBorrowsMemory) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(buf, {2, 3}, kFloat32);
  t.mul_(2.0);
  EXPECT_EQ(buf[5], 12.0f);
  Tensor strided = from_blob(buf, {3}, kFloat32, {2});
  EXPECT_EQ(strided.to_vector<float>(), (std::vector<float>{2, 6, 10}));
}

TEST(Tensor, TensorFactoryChecksCount) {
  EXPECT_THROW(tensor<float>({1, 2, 3}, {2, 2}), Error);
  Tensor b = tensor(std::vector<bool>{true, false}, {2});
  EXPECT_EQ(b.dtype(), kBool);
}

TEST(Tensor, ItemNeedsOneElement) {
  EXPECT_EQ(scalar_tensor(3.5).item<double>(), 3.5);
  EXPECT_EQ(tensor<int64_t>({7}).item<int64_t>(), 7);
  EXPECT_THROW(zeros({2}).item<float>(), Error);
}

TEST(Tensor, UndefinedAndMovedFromTensorsThrow) {
  Tensor a = zeros({2});
  Tensor b = std::move(a);
  EXPECT_THROW(a.dim(), Error);  // NOLINT(bugprone-use-after-move): testing exactly that
  EXPECT_THROW(add(Tensor(), b), Error);
  EXPECT_NO_THROW(b.dim());
}

TEST(Tensor, PrintsLikePyTorch) {
  EXPECT_EQ(tensor<float>({1, 2, 3}).str(), "tensor([1., 2., 3.])");
  EXPECT_EQ(tensor<float>({1.5, -2.25}).str(), "tensor([ 1.5000, -2.2500])");
  EXPECT_EQ(tensor<int64_t>({1, 2, 3}, {3}).str(), "tensor([1, 2, 3])");
  EXPECT_EQ(tensor<int32_t>({1, 2}).str(), "tensor([1, 2], dtype=int32)");
  EXPECT_EQ(tensor<float>({1, 2, 3, 4}, {2, 2}).str(), "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(tensor(std::vector<bool>{true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(scalar_tensor(2.5).str(), "tensor(2.5000)");
  EXPECT_EQ(zeros({0}).str(), "tensor([])");
  Tensor r = tensor<float>({1}).requires_grad_();
  EXPECT_EQ(r.str(), "tensor([1.], requires_grad=True)");
}

TEST(Tensor, LargeTensorsPrintSummarized) {
  std::string s = arange(0, 2000).str();
  EXPECT_EQ(s, "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}
