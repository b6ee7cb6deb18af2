// Adding a device is a registration: a device backed by host memory plugs in here the way a
// backend does (docs/devices.md), with nothing in core or ops knowing it. Its interface counts
// allocations and copies for DeviceType::PrivateUse1, and it registers a handful of kernels. Those
// kernels run the CPU's kernel over host aliases of the device's memory: what is under test is
// the plumbing (dispatch by device, allocation, moving tensors on and off, the errors), so the
// expected values are worked out by hand, not taken from the CPU.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/tensor_impl.h"
#include "ops/dispatch.h"
#include "runtime/device.h"

namespace kiln {
namespace {

const Device kTest{DeviceType::PrivateUse1, 0};

class HostTestDevice final : public runtime::DeviceInterface {
 public:
  std::atomic<int64_t> live_blocks{0}, allocations{0}, copies_in{0}, copies_out{0}, copies_within{0};
  std::atomic<size_t> live{0}, peak{0}, allocated{0};

  void* allocate(size_t nbytes, int16_t index) override {
    EXPECT_EQ(index, 0);
    ++allocations, ++live_blocks, allocated += nbytes;
    const size_t now = live += nbytes;
    if (now > peak) peak = now;
    const size_t a = runtime::kAlignment;
    return std::aligned_alloc(a, (nbytes + a - 1) / a * a);
  }
  void deallocate(void* p, size_t nbytes, int16_t) override {
    --live_blocks, live -= nbytes;
    std::free(p);
  }
  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) override {
    EXPECT_TRUE(dst_device == kTest || src_device == kTest) << "a copy that is none of this device's business";
    (dst_device.is_cpu() ? copies_out : src_device.is_cpu() ? copies_in : copies_within)++;
    std::memcpy(dst, src, nbytes);
  }
  void synchronize(int16_t) override {}
  runtime::MemoryStats memory_stats(int16_t) const override {
    runtime::MemoryStats s;
    s.allocated_bytes = allocated, s.allocated_blocks = size_t(allocations.load()), s.live_bytes = live;
    s.peak_bytes = peak;
    return s;
  }
  void reset_peak(int16_t) override { peak = live.load(); }
};

HostTestDevice& test_device() {
  static HostTestDevice* d = new HostTestDevice;  // outlives every tensor on it
  return *d;
}
[[maybe_unused]] const bool registered = runtime::register_device(DeviceType::PrivateUse1, &test_device());

std::atomic<int> g_kernel_calls[ops::kNumOps];

// The device's memory is host memory: a CPU tensor can alias it.
Tensor host_alias(const Tensor& t) { return from_blob(t.data_ptr(), t.sizes(), t.dtype(), t.strides()); }

// Runs the op's CPU kernel on host aliases of the arguments, into outputs on the test device.
std::vector<Tensor> host_kernel(const ops::Args& a, const std::vector<TensorSpec>& specs) {
  ++g_kernel_calls[size_t(a.op)];
  ops::Args cpu = a;
  for (ops::Arg& x : cpu.v) {
    if (auto* t = std::get_if<Tensor>(&x); t && t->defined() && t->device() == kTest) *t = host_alias(*t);
    if (auto* d = std::get_if<Device>(&x); d && *d == kTest) *d = kCPU;  // a factory's device argument
  }
  std::vector<Tensor> results = ops::call_backend(cpu);
  if (a.op == ops::OpId::copy_) return {a.tensor(0)};  // written in place through the alias
  std::vector<Tensor> outs;
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].device, kTest) << ops::op_info(a.op).name << " output " << i;
    Tensor out = make_tensor(specs[i]);  // allocated through the test device's interface
    Tensor r = contiguous(results[i]);
    std::memcpy(out.data_ptr(), r.data_ptr(), size_t(r.numel()) * r.element_size());
    outs.push_back(out);
  }
  return outs;
}

KILN_DEVICE_KERNEL(add, PrivateUse1) { return host_kernel(a, specs); }
KILN_DEVICE_KERNEL(mul, PrivateUse1) { return host_kernel(a, specs); }
[[maybe_unused]] const bool others_registered =
    ops::register_kernel(ops::OpId::sum, DeviceType::PrivateUse1, host_kernel) &&
    ops::register_kernel(ops::OpId::copy_, DeviceType::PrivateUse1, host_kernel) &&
    ops::register_kernel(ops::OpId::empty, DeviceType::PrivateUse1, host_kernel) &&
    ops::register_kernel(ops::OpId::full, DeviceType::PrivateUse1, host_kernel);

int calls(ops::OpId op) { return g_kernel_calls[size_t(op)].load(); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TestDevice, TensorsMoveOnAndOffThroughItsInterface) {
  HostTestDevice& dev = test_device();
  const int64_t allocs = dev.allocations, in = dev.copies_in, out = dev.copies_out;
  Tensor x = tensor<float>({1, 2, 3, 4}, {2, 2}).to(kTest);
  EXPECT_EQ(x.device(), kTest);
  EXPECT_EQ(dev.allocations - allocs, 1);
  EXPECT_EQ(dev.copies_in - in, 1);  // dense and of one dtype: the bytes in one copy
  EXPECT_EQ(x.to(kTest).impl(), x.impl());  // already there: no copy
  Tensor back = x.cpu();
  EXPECT_TRUE(back.device().is_cpu());
  EXPECT_EQ(dev.copies_out - out, 1);
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  // Layouts and dtypes are dealt with on the host: a transposed source, a cast on the way.
  EXPECT_EQ(tensor<float>({1, 2, 3, 4}, {2, 2}).t().to(kTest).to_vector<float>(), (std::vector<float>{1, 3, 2, 4}));
  Tensor d = empty({2, 2}, kFloat64, kTest);
  copy_(d, tensor<int64_t>({5, 6, 7, 8}, {2, 2}));
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{5, 6, 7, 8}));
  // A strided destination on the device keeps the elements it does not cover.
  Tensor wide = full({2, 3}, 9, kFloat32, kTest);
  copy_(wide.slice(1, 0, 2), tensor<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(wide.to_vector<float>(), (std::vector<float>{1, 2, 9, 3, 4, 9}));
  // and a strided source on the device comes back with its own layout.
  EXPECT_EQ(wide.t().cpu().to_vector<float>(), (std::vector<float>{1, 3, 2, 4, 9, 9}));
  EXPECT_FLOAT_EQ(wide.select(1, 1).select(0, 1).item<float>(), 4.f);  // item() reads through the interface
}

TEST(TestDevice, RegisteredKernelsRunOnIt) {
  Tensor x = tensor<float>({1, 2, 3, 4}).to(kTest), y = tensor<float>({10, 20, 30, 40}).to(kTest);
  const int adds = calls(ops::OpId::add), muls = calls(ops::OpId::mul), sums = calls(ops::OpId::sum);
  Tensor s = x + y;
  EXPECT_EQ(s.device(), kTest);
  EXPECT_EQ(calls(ops::OpId::add) - adds, 1);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ((x * y).to_vector<float>(), (std::vector<float>{10, 40, 90, 160}));
  EXPECT_EQ(calls(ops::OpId::mul) - muls, 1);
  EXPECT_FLOAT_EQ(x.sum().item<float>(), 10.f);
  EXPECT_EQ(x.view({2, 2}).sum({1}).to_vector<float>(), (std::vector<float>{3, 7}));
  EXPECT_EQ(calls(ops::OpId::sum) - sums, 2);
  // Numbers and 0-d CPU tensors join a device's tensors, as in PyTorch.
  Tensor twice = x * 2.0;
  EXPECT_EQ(twice.device(), kTest);
  EXPECT_EQ(twice.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  Tensor shifted = x + scalar_tensor(0.5f);
  EXPECT_EQ(shifted.device(), kTest);
  EXPECT_EQ(shifted.to_vector<float>(), (std::vector<float>{1.5, 2.5, 3.5, 4.5}));
  Tensor reversed = scalar_tensor(0.5f) + x;  // the 0-d CPU tensor first: the output still lands on the device
  EXPECT_EQ(reversed.device(), kTest);
  // In place: computed by the kernel, copied into x within the device.
  const int64_t within = test_device().copies_within;
  x.add_(y);
  EXPECT_EQ(test_device().copies_within - within, 1);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
  x.fill_(3);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
}

TEST(TestDevice, CompositesRunTheirDecomposition) {
  Tensor x = tensor<float>({1, 2, 3}).to(kTest), y = tensor<float>({4, 5, 6}).to(kTest);
  const int muls = calls(ops::OpId::mul);
  EXPECT_EQ(square(x).to_vector<float>(), (std::vector<float>{1, 4, 9}));  // mul(x, x)
  EXPECT_EQ(calls(ops::OpId::mul) - muls, 1);
  EXPECT_EQ(addcmul(x, x, y, 0.5).to_vector<float>(), (std::vector<float>{3, 7, 12}));  // x + 0.5 * x * y
  Tensor z = zeros({3}, kFloat32, kTest), o = ones({2}, kInt64, kTest);  // factories: through full
  EXPECT_EQ(z.device(), kTest);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(o.to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
}

TEST(TestDevice, MixingWithCpuTensorsIsAClearError) {
  Tensor x = tensor<float>({1, 2}).to(kTest), c = tensor<float>({1, 2});
  const std::string e = error_of([&] { (void)(x + c); });
  EXPECT_NE(e.find("kiln.add: expected all tensors on one device, got privateuseone:0 and cpu"), std::string::npos)
      << e;
  EXPECT_NE(e.find("inputs: float32[2] on privateuseone:0, float32[2]"), std::string::npos) << e;
  EXPECT_NE(e.find(".to(device)"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { (void)(c * x); }).find("got cpu and privateuseone:0"), std::string::npos);
  // A 0-d tensor on the device does not join a CPU tensor with dims (only 0-d CPU tensors join).
  Tensor d0 = scalar_tensor(2.f).to(kTest);
  EXPECT_NE(error_of([&] { (void)(c * d0); }).find("got cpu and privateuseone:0"), std::string::npos);
}

TEST(TestDevice, OpWithoutKernelIsAClearError) {
  Tensor x = tensor<float>({1, 2}).to(kTest);
  const std::string e = error_of([&] { (void)exp(x); });
  EXPECT_NE(e.find("kiln.exp: exp has no kernel for privateuseone:0"), std::string::npos) << e;
  EXPECT_NE(e.find("register_kernel"), std::string::npos) << e;
  // A composite whose decomposition needs a missing kernel names the inner op.
  EXPECT_NE(error_of([&] { (void)sigmoid(x); }).find("has no kernel for privateuseone:0"), std::string::npos);
}

TEST(TestDevice, PrintsItsValuesAndDevice) {
  Tensor x = tensor<float>({1, 2, 3}).to(kTest);
  EXPECT_EQ(x.str(), "tensor([1., 2., 3.], device='privateuseone:0')");
  EXPECT_EQ(tensor<double>({0.5}).to(kTest).str(), "tensor([0.5000], device='privateuseone:0', dtype=float64)");
}

TEST(TestDevice, GradientsFlowBackAcrossTheMove) {
  Tensor w = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor y = w.to(kTest);
  EXPECT_TRUE(y.requires_grad());
  Tensor loss = (y * y).sum();
  EXPECT_EQ(loss.device(), kTest);
  loss.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().device().is_cpu());  // the leaf's gradient lives where the leaf does
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{2, 4, 6}));  // d(sum y^2)/dw = 2w
}

TEST(TestDevice, MemoryIsFreed) {
  HostTestDevice& dev = test_device();
  const int64_t blocks = dev.live_blocks;
  const size_t bytes = dev.live;
  {
    Tensor x = tensor<float>({1, 2, 3, 4}).to(kTest);
    Tensor y = (x * x + x).sum();
    EXPECT_GT(dev.live_blocks, blocks);
    EXPECT_EQ(runtime::memory_stats(kTest).live_bytes, dev.live.load());  // read through the registry
    EXPECT_FLOAT_EQ(y.item<float>(), 40.f);  // 1+4+9+16 + 10
  }
  EXPECT_EQ(dev.live_blocks, blocks);
  EXPECT_EQ(dev.live, bytes);
}

TEST(TestDevice, DeviceWithoutBackendIsAClearError) {
  // The CUDA backend registers where libcuda loads (src/runtime/cuda/device.cc); elsewhere CUDA has none.
  if (runtime::find_device(DeviceType::CUDA)) GTEST_SKIP() << "the CUDA driver loaded: CUDA has a backend here";
  const Device cuda("cuda");
  const std::string e = error_of([&] { (void)tensor<float>({1}).to(cuda); });
  // The build has the backend; the machine lacks the driver, and the error says what was tried.
  EXPECT_NE(e.find("no device backend for cuda on this machine: the CUDA driver could not be loaded; tried:"), std::string::npos) << e;
  // full has a CUDA kernel (generated: src/eager/cuda/), whose output cannot be allocated here;
  // rand_uniform has none yet, and its error says both.
  const std::string z = error_of([&] { (void)zeros({2}, kFloat32, cuda); });
  EXPECT_NE(z.find("no device backend for cuda on this machine"), std::string::npos) << z;
  const std::string r = error_of([&] { (void)rand({2}, kFloat32, cuda); });
  EXPECT_NE(r.find("rand_uniform has no kernel for cuda:0"), std::string::npos) << r;
  EXPECT_NE(r.find("no device backend for cuda on this machine"), std::string::npos) << r;
}

}  // namespace
}  // namespace kiln
