// The CPU backend's staged stores (src/tile/emit/c_like.h, streams_stores): rows of a store that
// are contiguous along the block's last dim go through a staging block and are written row by
// row, with non-temporal stores when the launch writes far more than the caches hold. Results
// are checked against plain loops, for a small launch (ordinary stores) and a large one
// (streamed on this machine), at a destination that is not aligned to a cache line. Loads of
// such rows that move on with the program id are prefetched a program ahead in a large launch.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include "tile/builder.h"
#include "tile/cpu/emit_c.h"
#include "tile/cpu/kernel.h"

namespace kiln::tile {
namespace {

constexpr int64_t kRows = 4, kCols = 1024, kStride = 1536, kShift = 3;  // 4 KiB rows, gaps between them

// out[shift + (pid * kRows + i) * kStride + j] = x[(pid * kRows + i) * kCols + j] * 2 + 1
Program rows_kernel() {
  Builder b("rows");
  auto out = b.arg_ptr("out", kFloat32), x = b.arg_ptr("x", kFloat32);
  auto row = (b.program_id(0) * kRows + b.arange(0, kRows)).expand_dims(1);
  auto col = b.arange(0, kCols).expand_dims(0);
  auto v = b.load(x + (row * kCols + col));
  b.store(out + (row * kStride + col + kShift), v * 2.0 + 1.0);
  return b.finish();
}

void check(int64_t programs) {
  static const cpu::Kernel k = cpu::compile(rows_kernel());
  const int64_t rows = programs * kRows;
  Tensor x = randn({rows, kCols}), out = zeros({rows * kStride + kShift});
  k(cpu::Grid(programs), out, x);
  const std::vector<float> xs = x.to_vector<float>(), got = out.to_vector<float>();
  std::vector<float> want(got.size(), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kCols; ++c) want[size_t(kShift + r * kStride + c)] = xs[size_t(r * kCols + c)] * 2.0f + 1.0f;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i << " of " << programs << " programs";
}

TEST(TileStream, TheStoreOfLargeRowsIsStaged) {
  const std::string c = cpu::emit_kernel(rows_kernel());
  EXPECT_NE(c.find("kiln_tile_store_row("), std::string::npos) << c;
  EXPECT_NE(c.find("kiln_tile_stream_fence(_stream);"), std::string::npos) << c;
}

// out[pid * kCols + j] = x[pid * kCols + j] + w[pid % 4 * kCols + j]: x streams, w is a
// broadcast operand's rows (the same four, over and over).
Program broadcast_kernel() {
  Builder b("bcast");
  auto out = b.arg_ptr("out", kFloat32), x = b.arg_ptr("x", kFloat32), w = b.arg_ptr("w", kFloat32);
  auto col = b.arange(0, kCols);
  auto pid = b.program_id(0);
  auto at = pid * kCols + col;
  b.store(out + at, b.load(x + at) + b.load(w + ((pid % 4) * kCols + col)));
  return b.finish();
}

TEST(TileStream, LoadsMovingWithTheProgramArePrefetchedAheadBroadcastRowsAreNot) {
  const std::string c = cpu::emit_kernel(broadcast_kernel());
  EXPECT_NE(c.find("if (_ahead) kiln_tile_prefetch_row((x + "), std::string::npos) << c;
  EXPECT_EQ(c.find("kiln_tile_prefetch_row((w + "), std::string::npos) << c;
  EXPECT_NE(c.find("const bool _ahead = kiln_tile_streaming(_total * 4096);"), std::string::npos) << c;
  // Both launch sizes compute the same (a prefetch past the last row reads nothing).
  static const cpu::Kernel k = cpu::compile(broadcast_kernel());
  for (int64_t programs : {int64_t(5), int64_t(4096)}) {
    Tensor x = randn({programs, kCols}), w = randn({4, kCols}), out = zeros({programs, kCols});
    k(cpu::Grid(programs), out, x, w);
    const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>(), got = out.to_vector<float>();
    for (int64_t p = 0; p < programs; ++p)
      for (int64_t j = 0; j < kCols; ++j)
        ASSERT_EQ(got[size_t(p * kCols + j)], xs[size_t(p * kCols + j)] + ws[size_t(p % 4 * kCols + j)]) << p << ", " << j;
  }
}

TEST(TileStream, RowsStoredWithOrdinaryStores) { check(3); }

TEST(TileStream, RowsStoredPastTheCaches) { check(2048); }  // 32 MiB of rows, 48 MiB of output

}  // namespace
}  // namespace kiln::tile
