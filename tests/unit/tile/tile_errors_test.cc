// Bad kernels, end to end: a shape error is rejected by the verifier with the line of the user's
// kernel (from the origin a kernel carries, whether built in C++, traced from Python or parsed),
// also when the kernel is a custom op's and the error surfaces at the op's first call.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include "tile/builder.h"
#include "tile/op.h"

namespace kiln::tile {
namespace {

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

TEST(TileErrors, TheVerifierNamesTheKernelsLine) {
  // A Python kernel's program as text: each op carries the line of kernel.py that made it. The
  // mask of line 5 has 64 elements, the pointer block 128.
  const std::string text = R"(kernel k(%x: ptr<f32>, %n: i32) meta(num_warps=4, num_stages=3) {
  %offs: i32[128] = arange(0, 128)  # kernel.py:3
  %xs: ptr<f32>[128] = splat(%x)  # kernel.py:4
  %p: ptr<f32>[128] = addptr(%xs, %offs)  # kernel.py:4
  %small: i32[64] = arange(0, 64)  # kernel.py:5
  %ns: i32[64] = splat(%n)  # kernel.py:5
  %m: b8[64] = lt(%small, %ns)  # kernel.py:5
  %v: f32[128] = load(%p, %m)  # kernel.py:6
}
)";
  const Error e = error_of([&] { verify(parse(text)); });
  EXPECT_EQ(e.op(), "tile.load");
  EXPECT_NE(e.message().find("the shape of the mask [64] differs from the pointer's [128]"), std::string::npos) << e.what();
  EXPECT_EQ(e.file(), "kernel.py");
  EXPECT_EQ(e.line(), 6u);
}

TEST(TileErrors, AShapeErrorInACustomOpsKernelNamesItsLine) {
  int line = 0;
  register_op({
      .name = "test::bad_kernel",
      .program = [&](const TensorList&) {
        Builder b("bad_kernel");
        auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kFloat32);
        auto offs = b.arange(0, 64);
        line = __LINE__ + 1;
        b.store(out + offs, b.load(x + b.arange(0, 32)));
        return b.finish();
      },
      .meta = [](const TensorList& in, const std::vector<double>&) { return std::vector<TensorSpec>{in[0].spec()}; },
      .grid = [](const TensorList&, const Meta&) { return cpu::Grid(1); },
  });
  const Error e = error_of([&] { call_op("test::bad_kernel", {randn({64})}); });
  EXPECT_EQ(e.op(), "custom");  // the op the user called; the kernel's op is the context
  EXPECT_NE(e.message().find("test::bad_kernel: in tile.store: cannot broadcast the shapes [64] and [32]"), std::string::npos)
      << e.what();
  EXPECT_NE(e.file().find("tile_errors_test.cc"), std::string::npos) << e.file();
  EXPECT_EQ(int(e.line()), line);
}

}  // namespace
}  // namespace kiln::tile
