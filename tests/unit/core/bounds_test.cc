// Sizes that overflow, views past their storage, writes into self-overlapping memory and bool
// bytes other than 0/1: each is a kiln::Error, never a crash or a silently wrong tensor
// (issue 15, parts B and C). What PyTorch does for the same call is noted beside each case.
#include <gtest/gtest.h>

#include "support/test_util.h"
#include <kiln/kiln.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor_impl.h"

using namespace kiln;
using kiln::test::expect_error;

namespace {
constexpr int64_t k62 = int64_t(1) << 62, k61 = int64_t(1) << 61, k32 = int64_t(1) << 32, k31 = int64_t(1) << 31;

}  // namespace

TEST(SizeChecks, ElementAndByteCountsNeverWrap) {
  EXPECT_EQ(numel_of({k31, 4}), k31 * 4);
  expect_error([] { numel_of({k32, k32}); }, "numel overflows");
  // In order, as PyTorch: a later 0 does not excuse the overflow before it.
  expect_error([] { numel_of({k62, k62, 0}); }, "numel overflows");
  EXPECT_EQ(nbytes_of({k61}, kInt16), size_t(k62));
  expect_error([] { nbytes_of({k62}, kInt32); }, "byte size overflows");  // 2**64 bytes: wraps to 0 unchecked
  const StorageExtent e = storage_extent({3, 4}, {-4, 1}, 8);
  EXPECT_EQ(e.first, 0);
  EXPECT_EQ(e.last, 11);
  EXPECT_LT(storage_extent({3, 0}, {1, 1}, 0).last, storage_extent({3, 0}, {1, 1}, 0).first);  // no elements
  expect_error([] { storage_extent({k62}, {k62}, 0); }, "int64");
}

TEST(SizeChecks, FactoriesOfImpossibleSizesRaise) {
  // Each of these crashed (SIGSEGV) or returned a tensor over too little memory; PyTorch raises
  // "Storage size calculation overflowed" for every one.
  expect_error([] { empty({k62}); }, "overflow");
  expect_error([] { empty({k32, k32}); }, "overflow");
  expect_error([] { zeros({k62}, kInt32); }, "overflow");
  expect_error([] { full({k62}, 1); }, "overflow");
  expect_error([] { arange(0, k62); }, "overflow");
  expect_error([] { linspace(0, 1, k62); }, "overflow");
  expect_error([] { randperm(k61); }, "overflow");
  expect_error([] { randint(0, 5, {k61}); }, "overflow");
  expect_error([] { rand({k61}); }, "overflow");
  expect_error([] { one_hot(tensor(std::vector<int64_t>{1}), k62); }, "overflow");
  expect_error([] { repeat(zeros({3}), {k31, k31}); }, "overflow");
  expect_error([] { reshape(zeros({0}), {k62, k62, 0}); }, "overflow");
  // A broadcast view of 2**62 elements is fine (PyTorch too); materializing it is not.
  Tensor big = expand(zeros({1}), {k62});
  EXPECT_EQ(big.numel(), k62);
  EXPECT_EQ(big.stride(0), 0);
  expect_error([&] { big.contiguous(); }, "overflow");
}

TEST(SizeChecks, AllocationFailureSaysHowMuchWasAsked) {
  // 2**50 bytes fit size arithmetic but no machine's memory (PyTorch: "you tried to allocate N bytes").
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_SANITIZE)
  GTEST_SKIP() << "AddressSanitizer's allocator aborts on impossible sizes instead of returning null";
#endif
  const int64_t n = int64_t(1) << 50;
  expect_error([&] { empty({n}, kUInt8); }, "out of memory allocating " + std::to_string(n) + " bytes");
}

TEST(ViewBounds, AsStridedStaysInsideTheStorage) {
  Tensor x = arange(0, 4, 1, kFloat32);
  EXPECT_EQ(as_strided(x, {2}, {1}, SymInt(2)).to_vector<float>(), (std::vector<float>{2, 3}));
  expect_error([&] { as_strided(x, {5}, {1}); }, "reaches elements [0, 4] of a storage of 4 elements");
  expect_error([&] { as_strided(x, {2}, {1}, SymInt(3)); }, "storage of 4 elements");
  expect_error([&] { as_strided(x, {2, 2}, {3, 1}); }, "reaches elements [0, 4]");
  // A view of a view is checked against the base's storage, not the view's elements.
  Tensor v = x.slice(0, 1, 3);
  EXPECT_EQ(as_strided(v, {4}, {1}, SymInt(0)).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  expect_error([&] { as_strided(v, {4}, {1}); }, "storage of 4 elements");  // from offset 1
  // Empty storage: any element is out of bounds; no element is fine (PyTorch alike).
  Tensor e = zeros({0});
  expect_error([&] { as_strided(e, {1}, {1}); }, "storage of 0 elements");
  EXPECT_EQ(as_strided(e, {0, 3}, {1, 1}).numel(), 0);
}

TEST(ViewBounds, BorrowedMemoryKnowsItsExtent) {
  // from_blob (NumPy, DLPack, files) used to record no size, so as_strided went unchecked.
  std::vector<float> buf = {0, 1, 2, 3};
  Tensor b = from_blob(buf.data(), {4}, kFloat32);
  EXPECT_EQ(as_strided(b, {2}, {2}).to_vector<float>(), (std::vector<float>{0, 2}));
  expect_error([&] { as_strided(b, {5}, {1}); }, "storage of 4 elements");
  // Negative strides (a reversed NumPy array): the storage starts at the lowest element, the
  // tensor's offset points at its first one.
  Tensor r = from_blob(buf.data() + 3, {4}, kFloat32, {-1});
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 2, 1, 0}));
  EXPECT_EQ(r.storage_offset(), 3);
  EXPECT_EQ(as_strided(r, {4}, {1}, SymInt(0)).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  expect_error([&] { as_strided(r, {4}, {1}); }, "reaches elements [3, 6]");  // from its offset 3
}

TEST(OverlapChecks, WritesThroughBroadcastViewsAreRefused) {
  // PyTorch: "unsupported operation: more than one element of the written-to tensor refers to a
  // single memory location. Please clone() the tensor before performing the operation."
  expect_error([] { zeros({1}).expand({3}).add_(1); }, "refers to a single memory location");
  expect_error([] { zeros({1}).expand({3}).copy_from(ones({3})); }, "refers to a single memory location");
  expect_error([] { zeros({2, 1}).expand({2, 3}).mul_(2); }, "refers to a single memory location");
  // One value everywhere is fine (PyTorch's fill_ and zero_ allow it), and so is a size-1 expand.
  Tensor base = zeros({1});
  base.expand({3}).fill_(5);
  EXPECT_EQ(base.item<float>(), 5);
  Tensor one = zeros({1});
  one.expand({1}).add_(1);
  EXPECT_EQ(one.item<float>(), 1);
  Tensor ok = zeros({3});
  ok.add_(1);
  EXPECT_EQ(ok.to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(BoolBytes, BorrowedBoolMemoryMustHoldZeroOrOne) {
  std::vector<uint8_t> good = {0, 1, 1}, bad = {2, 255, 0};
  EXPECT_EQ(from_blob(good.data(), {3}, kBool).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  expect_error([&] { from_blob(bad.data(), {3}, kBool); }, "holds the byte 2 at element 0");
  // Strided: only the elements are read, not the bytes between them.
  std::vector<uint8_t> gaps = {1, 7, 0, 7, 1};
  EXPECT_EQ(from_blob(gaps.data(), {3}, kBool, {2}).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
}
