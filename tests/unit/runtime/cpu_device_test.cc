// The CPU's device interface: registered at start-up, aligned blocks, the memory statistics that
// Storage's allocations and frees move.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cstdint>
#include <cstring>

#include "runtime/device.h"

namespace kiln {
namespace {

TEST(CpuDevice, IsRegistered) {
  ASSERT_NE(runtime::find_device(DeviceType::CPU), nullptr);
  EXPECT_EQ(&runtime::device_interface(DeviceType::CPU), runtime::find_device(DeviceType::CPU));
}

TEST(CpuDevice, BlocksAreAlignedAndCounted) {
  runtime::DeviceInterface& cpu = runtime::device_interface(DeviceType::CPU);
  for (size_t n : {size_t(1), size_t(100), size_t(3) << 20}) {  // small, and one the cache keeps
    const runtime::MemoryStats before = cpu.memory_stats(0);
    void* p = cpu.allocate(n, 0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % runtime::kAlignment, 0u) << n;
    std::memset(p, 1, n);  // every byte is ours (ASan checks)
    const runtime::MemoryStats during = cpu.memory_stats(0);
    EXPECT_EQ(during.live_bytes - before.live_bytes, n);
    EXPECT_EQ(during.allocated_bytes - before.allocated_bytes, n);
    EXPECT_EQ(during.allocated_blocks - before.allocated_blocks, 1u);
    EXPECT_GE(during.peak_bytes, during.live_bytes);
    cpu.deallocate(p, n, 0);
    EXPECT_EQ(cpu.memory_stats(0).live_bytes, before.live_bytes) << n;
  }
}

TEST(CpuDevice, PeakFollowsStorageAndResets) {
  runtime::reset_peak(kCPU);
  const size_t base = runtime::memory_stats(kCPU).live_bytes;
  {
    Tensor t = empty({1000}, kFloat64);  // Storage allocates through the interface
    EXPECT_EQ(runtime::memory_stats(kCPU).live_bytes - base, 8000u);
  }
  const runtime::MemoryStats after = runtime::memory_stats(kCPU);
  EXPECT_EQ(after.live_bytes, base);
  EXPECT_GE(after.peak_bytes - base, 8000u);
  runtime::reset_peak(kCPU);
  EXPECT_EQ(runtime::memory_stats(kCPU).peak_bytes, base);
}

TEST(CpuDevice, CopiesBytes) {
  const char src[] = "kiln";
  char dst[sizeof src] = {};
  runtime::copy_bytes(dst, kCPU, src, kCPU, sizeof src);
  EXPECT_STREQ(dst, "kiln");
  runtime::synchronize(kCPU);  // nothing queued: returns
}

TEST(DeviceRegistry, UnregisteredTypeIsAClearError) {
  // The CUDA backend registers where libcuda loads (src/runtime/cuda/device.cc); elsewhere CUDA has none.
  if (runtime::find_device(DeviceType::CUDA)) GTEST_SKIP() << "the CUDA driver loaded: CUDA has a backend here";
  try {
    runtime::device_interface(DeviceType::CUDA);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no device backend for cuda on this machine: the CUDA driver could not be loaded"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(runtime::register_device(DeviceType::CPU, runtime::find_device(DeviceType::CPU)), Error);  // once per type
}

}  // namespace
}  // namespace kiln
