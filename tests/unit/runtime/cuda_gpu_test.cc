// The CUDA runtime on a real GPU (src/runtime/cuda/): properties, copies, an NVRTC-compiled kernel
// launched through the device interface, streams and events, the caching allocator on device
// memory and out-of-memory. Every CudaGpu test skips with "no CUDA GPU: <reason>" where there is
// none, and carries the ctest label `gpu` (CMakeLists.txt); bench/gpu.sh runs them on the H200.
// CudaDriver.* run everywhere: what a machine without a GPU says.
#include <gtest/gtest.h>
#include <kiln/cuda.h>
#include <kiln/error.h>
#include <kiln/ops.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/cuda/driver.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {
namespace {

#define SKIP_WITHOUT_GPU() \
  if (!available()) GTEST_SKIP() << "no CUDA GPU: " << unavailable_reason()
// Under the fake driver (cuda_fake_driver_test.cc), which runs no kernels.
#define SKIP_WITHOUT_KERNELS() \
  if (std::getenv("KILN_TEST_FAKE_CUDA")) GTEST_SKIP() << "the fake driver runs no kernels"

constexpr Device kGpu{DeviceType::CUDA, 0};

DeviceInterface& gpu() { return device_interface(DeviceType::CUDA); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CudaDriver, NoGpuIsAClearErrorAtFirstUse) {
  if (available()) GTEST_SKIP() << "a CUDA GPU is present: " << properties(0).name;
  EXPECT_FALSE(unavailable_reason().empty());
  EXPECT_EQ(device_count(), 0);
  const std::string e = error_of([] { require(); });
  EXPECT_NE(e.find("no CUDA GPU: "), std::string::npos) << e;
  EXPECT_NE(e.find(unavailable_reason()), std::string::npos) << e;
  const std::string m = error_of([] { mem_alloc(16, 0); });
  EXPECT_NE(m.find("no CUDA GPU: "), std::string::npos) << m;
  // The public answers (kiln/cuda.h), as torch.cuda's on a machine without one.
  EXPECT_FALSE(kiln::cuda::is_available());
  EXPECT_EQ(kiln::cuda::device_count(), 0);
  EXPECT_EQ(kiln::cuda::unavailable_reason(), unavailable_reason());
  for (const std::function<void()>& f : std::vector<std::function<void()>>{
           [] { kiln::cuda::synchronize(); }, [] { (void)kiln::cuda::memory_allocated(); },
           [] { (void)kiln::cuda::get_device_name(); }, [] { kiln::cuda::empty_cache(); }}) {
    const std::string p = error_of(f);
    EXPECT_NE(p.find("no CUDA GPU: "), std::string::npos) << p;
  }
  // Registered exactly where the driver library loads (and only then), so CPU-only machines keep
  // the "no device backend" error.
  EXPECT_EQ(find_device(DeviceType::CUDA) != nullptr, driver_loaded());
}

// The hooks device.h adds fail clearly on a device without them (the CPU), except copy_async
// (a synchronous copy) and empty_cache (nothing to release).
TEST(CudaDriver, OtherDevicesSayTheyHaveNoStreamsEventsOrLaunch) {
  DeviceInterface& cpu = device_interface(DeviceType::CPU);
  EXPECT_NE(error_of([&] { cpu.create_stream(0); }).find("this device has no streams"), std::string::npos);
  EXPECT_NE(error_of([&] { cpu.create_event(true, 0); }).find("this device has no events"), std::string::npos);
  EXPECT_NE(error_of([&] { cpu.allocate_pinned(64, 0); }).find("this device has no pinned host memory"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cpu.load_module("x", 1, 0); }).find("this device has no kernel modules"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cpu.launch({}, 0); }).find("this device has no kernel launch"), std::string::npos);
  char src[5] = "kiln", dst[5] = {};
  cpu.copy_async(dst, kCPU, src, kCPU, 5);
  EXPECT_STREQ(dst, "kiln");
  cpu.empty_cache(0);
}

TEST(CudaGpu, Properties) {
  SKIP_WITHOUT_GPU();
  ASSERT_GE(device_count(), 1);
  const DeviceProperties& p = properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.sm_count, 0);
  EXPECT_GT(p.total_memory, size_t(1) << 30);
  EXPECT_GE(p.major, 7);
  EXPECT_EQ(p.warp_size, 32);
  EXPECT_GE(p.max_threads_per_block, 1024);
  EXPECT_EQ(p.arch().rfind("sm_" + std::to_string(p.major) + std::to_string(p.minor), 0), 0u) << p.arch();
  EXPECT_GE(driver_version(), 12000);
  EXPECT_THROW(properties(device_count()), kiln::Error);
  std::printf("cuda:0 %s, %d SMs, %.1f GiB, cc %d.%d (%s), L2 %d KiB, driver %d\n", p.name.c_str(), p.sm_count,
              double(p.total_memory) / double(1 << 30), p.major, p.minor, p.arch().c_str(), p.l2_bytes / 1024,
              driver_version());
}

TEST(CudaGpu, CopiesRoundTrip) {
  SKIP_WITHOUT_GPU();
  const size_t n = (size_t(3) << 20) + 17;  // a large block and an odd size
  std::vector<uint8_t> host(n), back(n, 0);
  for (size_t i = 0; i < n; i++) host[i] = uint8_t(i * 31 + 7);
  void* a = gpu().allocate(n, 0);
  void* b = gpu().allocate(n, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  copy_bytes(a, kGpu, host.data(), kCPU, n);  // host -> device
  copy_bytes(b, kGpu, a, kGpu, n);            // device -> device
  copy_bytes(back.data(), kCPU, b, kGpu, n);  // device -> host
  EXPECT_EQ(back, host);
  // Asynchronous, through pinned memory on a stream of its own.
  uint8_t* pinned = static_cast<uint8_t*>(gpu().allocate_pinned(n, 0));
  void* s = gpu().create_stream(0);
  gpu().set_current_stream(s, 0);
  std::memset(pinned, 0, n);
  gpu().copy_async(pinned, kCPU, b, kGpu, n);
  gpu().synchronize_stream(s, 0);
  EXPECT_EQ(std::memcmp(pinned, host.data(), n), 0);
  gpu().set_current_stream(nullptr, 0);
  gpu().destroy_stream(s, 0);
  gpu().deallocate_pinned(pinned, 0);
  gpu().deallocate(a, n, 0);
  gpu().deallocate(b, n, 0);
}

constexpr const char* kKernels = R"(
extern "C" __global__ void axpb(float* x, float a, float b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + b;
}
extern "C" __global__ void spin(float* x, int iters) {  // keeps the GPU busy a measurable while
  float v = x[threadIdx.x];
  for (int k = 0; k < iters; k++) v = v * 0.999f + 0.001f;
  x[threadIdx.x] = v;
}
extern "C" __global__ void fill_shared(float* out, int n) {  // dynamic shared memory
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = float(i);
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i];
}
)";

struct Kernels {
  void* module = nullptr;
  void* axpb = nullptr;
  void* spin = nullptr;
  void* fill_shared = nullptr;
  Kernels() {
    const nvrtc::Output out = nvrtc::compile(kKernels, "cuda_gpu_test.cu", properties(0).arch());
    module = gpu().load_module(out.binary.data(), out.binary.size(), 0);
    axpb = gpu().module_function(module, "axpb", 0);
    spin = gpu().module_function(module, "spin", 0);
    fill_shared = gpu().module_function(module, "fill_shared", 0);
  }
  ~Kernels() { gpu().unload_module(module, 0); }
};

TEST(CudaGpu, LaunchesAnNvrtcCompiledKernel) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_KERNELS();
  if (!nvrtc::available()) GTEST_SKIP() << "no NVRTC: " << nvrtc::unavailable_reason();
  Kernels k;
  const int n = 100000;
  std::vector<float> x(n);
  std::iota(x.begin(), x.end(), 0.f);
  void* d = gpu().allocate(n * sizeof(float), 0);
  copy_bytes(d, kGpu, x.data(), kCPU, n * sizeof(float));
  float a = 2.f, b = -1.f;
  int count = n;
  void* args[] = {&d, &a, &b, &count};
  DeviceInterface::Launch l;
  l.function = k.axpb;
  l.grid[0] = (n + 255) / 256;
  l.block[0] = 256;
  l.args = args;
  gpu().launch(l, 0);
  std::vector<float> y(n);
  copy_bytes(y.data(), kCPU, d, kGpu, n * sizeof(float));
  for (int i = 0; i < n; i += 997) EXPECT_EQ(y[i], 2.f * float(i) - 1.f) << i;
  EXPECT_EQ(y[n - 1], 2.f * float(n - 1) - 1.f);

  // 64 KiB of dynamic shared memory: past the default 48 KiB, after opting in.
  const int m = 16384;
  set_max_dynamic_shared(static_cast<Function>(k.fill_shared), m * 4);
  void* out = gpu().allocate(m * sizeof(float), 0);
  void* sargs[] = {&out, const_cast<int*>(&m)};
  DeviceInterface::Launch s;
  s.function = k.fill_shared;
  s.block[0] = 512;
  s.shared_bytes = m * 4;
  s.args = sargs;
  gpu().launch(s, 0);
  std::vector<float> r(m);
  copy_bytes(r.data(), kCPU, out, kGpu, m * sizeof(float));
  EXPECT_EQ(r[0], float(m - 1));
  EXPECT_EQ(r[m - 1], 0.f);
  gpu().deallocate(out, m * sizeof(float), 0);
  gpu().deallocate(d, n * sizeof(float), 0);
}

TEST(CudaGpu, ALaunchErrorIsClearAndLeavesTheProcessUsable) {
  SKIP_WITHOUT_GPU();
  if (!nvrtc::available()) GTEST_SKIP() << "no NVRTC: " << nvrtc::unavailable_reason();
  Kernels k;
  void* d = gpu().allocate(1024 * sizeof(float), 0);
  float a = 1.f, b = 1.f;
  int n = 1024;
  void* args[] = {&d, &a, &b, &n};
  DeviceInterface::Launch bad;
  bad.function = k.axpb;
  bad.block[0] = 4096;  // more threads than a block may have
  bad.args = args;
  const std::string e = error_of([&] { gpu().launch(bad, 0); });
  EXPECT_NE(e.find("CUDA kernel launch failed (grid 1x1x1, block 4096x1x1"), std::string::npos) << e;
  DeviceInterface::Launch good = bad;
  good.block[0] = 1024;
  gpu().launch(good, 0);
  gpu().synchronize(0);
  gpu().deallocate(d, 1024 * sizeof(float), 0);
}

TEST(CudaGpu, EventsTimeAndOrderTwoStreams) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_KERNELS();
  if (!nvrtc::available()) GTEST_SKIP() << "no NVRTC: " << nvrtc::unavailable_reason();
  Kernels k;
  void* s1 = gpu().create_stream(0);
  void* s2 = gpu().create_stream(0);
  void* start = gpu().create_event(true, 0);
  void* end = gpu().create_event(true, 0);
  void* done = gpu().create_event(false, 0);
  std::vector<float> twos(256, 2.f), back(256, 0.f);
  void* x = gpu().allocate(256 * sizeof(float), 0);
  gpu().set_current_stream(s1, 0);
  copy_bytes(x, kGpu, twos.data(), kCPU, 256 * sizeof(float));
  int iters = 2000000;
  void* args[] = {&x, &iters};
  DeviceInterface::Launch l;
  l.function = k.spin;
  l.block[0] = 256;
  l.stream = s1;
  l.args = args;
  gpu().record_event(start, s1, 0);
  gpu().launch(l, 0);  // a long kernel on s1 ...
  gpu().record_event(end, s1, 0);
  gpu().record_event(done, s1, 0);
  gpu().wait_event(s2, done, 0);  // ... which s2's copy must wait for
  gpu().set_current_stream(s2, 0);
  gpu().copy_async(back.data(), kCPU, x, kGpu, 256 * sizeof(float));
  gpu().synchronize_stream(s2, 0);
  EXPECT_EQ(back[0], back[255]);
  EXPECT_NEAR(back[0], 1.f, 1e-2f);  // the copy saw the kernel's result (v -> 1), not the input 2
  gpu().synchronize_event(end, 0);
  const float ms = gpu().elapsed_ms(start, end, 0);
  EXPECT_GT(ms, 0.f);
  std::printf("spin kernel: %.3f ms by events\n", ms);
  gpu().set_current_stream(nullptr, 0);
  gpu().deallocate(x, 256 * sizeof(float), 0);
  for (void* e : {start, end, done}) gpu().destroy_event(e, 0);
  gpu().destroy_stream(s1, 0);
  gpu().destroy_stream(s2, 0);
}

TEST(CudaGpu, AllocatorOnDeviceMemory) {
  SKIP_WITHOUT_GPU();
  gpu().empty_cache(0);
  const MemoryStats before = memory_stats(kGpu);
  void* p = gpu().allocate(100, 0);
  void* q = gpu().allocate(5 << 20, 0);
  const MemoryStats during = memory_stats(kGpu);
  EXPECT_EQ(during.live_bytes - before.live_bytes, 512u + (6u << 20));  // rounded sizes
  EXPECT_GE(during.reserved_bytes - before.reserved_bytes, (2u << 20) + (6u << 20));
  EXPECT_GE(during.peak_bytes, during.live_bytes);
  gpu().deallocate(q, 5 << 20, 0);
  void* q2 = gpu().allocate(6 << 20, 0);
  EXPECT_EQ(q2, q);  // the cached block, on the same stream
  gpu().deallocate(q2, 6 << 20, 0);
  gpu().deallocate(p, 100, 0);
  EXPECT_EQ(memory_stats(kGpu).live_bytes, before.live_bytes);
  const size_t free_before = mem_info(0).free;
  gpu().empty_cache(0);
  EXPECT_EQ(memory_stats(kGpu).reserved_bytes, before.reserved_bytes);
  EXPECT_GE(mem_info(0).free, free_before);
}

TEST(CudaGpu, OutOfMemoryIsAClearErrorAndLeavesTheProcessUsable) {
  SKIP_WITHOUT_GPU();
  const size_t too_much = properties(0).total_memory * 2;
  const std::string e = error_of([&] { gpu().allocate(too_much, 0); });
  EXPECT_NE(e.find("CUDA out of memory on cuda:0: tried to allocate"), std::string::npos) << e;
  EXPECT_NE(e.find("the device has"), std::string::npos) << e;
  void* p = gpu().allocate(1 << 20, 0);  // still usable
  ASSERT_NE(p, nullptr);
  std::vector<uint8_t> v(1 << 20, 5), back(1 << 20, 0);
  copy_bytes(p, kGpu, v.data(), kCPU, v.size());
  copy_bytes(back.data(), kCPU, p, kGpu, v.size());
  EXPECT_EQ(back, v);
  gpu().deallocate(p, 1 << 20, 0);
}

// kiln/cuda.h on the device: its answers agree with the driver layer's, and the memory stats
// follow a tensor's life (the fake driver runs this too: nothing here launches a kernel).
TEST(CudaGpu, ThePublicApiAnswersAsTorchCuda) {
  SKIP_WITHOUT_GPU();
  namespace kc = kiln::cuda;
  EXPECT_TRUE(kc::is_available());
  EXPECT_TRUE(kc::unavailable_reason().empty());
  EXPECT_EQ(kc::device_count(), device_count());
  EXPECT_EQ(kc::get_device_name(0), properties(0).name);
  EXPECT_EQ(kc::get_device_capability(), std::make_pair(properties(0).major, properties(0).minor));
  EXPECT_EQ(kc::current_device(), current_device());
  kc::synchronize();
  kc::empty_cache();
  kc::reset_peak_memory_stats();
  const int64_t before = kc::memory_allocated();
  {
    Tensor t = kiln::empty({1 << 20}, kFloat32, kGpu);
    EXPECT_GE(kc::memory_allocated() - before, int64_t(4) << 20);
    EXPECT_GE(kc::max_memory_allocated(), kc::memory_allocated());
    EXPECT_GE(kc::memory_reserved(), kc::memory_allocated());
  }
  EXPECT_EQ(kc::memory_allocated(), before);
  EXPECT_GE(kc::max_memory_allocated() - before, int64_t(4) << 20);
  kc::reset_peak_memory_stats();
  EXPECT_EQ(kc::max_memory_allocated(), kc::memory_allocated());
  const std::string bad = error_of([] { kiln::cuda::set_device(99); });
  EXPECT_NE(bad.find("no device 99"), std::string::npos) << bad;
}

}  // namespace
}  // namespace kiln::runtime::cuda
