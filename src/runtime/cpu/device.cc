// The CPU's device interface: host memory from the CPU allocator, copies with memcpy.
#include <cstring>

#include "runtime/cpu/allocator.h"
#include "runtime/device.h"

namespace kiln::runtime::cpu {
namespace {

class CpuDevice final : public DeviceInterface {
 public:
  void* allocate(size_t nbytes, int16_t) override { return cpu::allocate(nbytes); }
  void deallocate(void* p, size_t nbytes, int16_t) override { cpu::deallocate(p, nbytes); }
  void copy(void* dst, Device, const void* src, Device, size_t nbytes) override { std::memcpy(dst, src, nbytes); }
  void synchronize(int16_t) override {}  // every CPU kernel has finished when it returns
  MemoryStats memory_stats(int16_t) const override { return cpu::memory_stats(); }
  void reset_peak(int16_t) override { cpu::reset_peak(); }
};

// Never destroyed: static tensors give their storage back at exit, after this file's statics.
[[maybe_unused]] const bool registered = register_device(DeviceType::CPU, new CpuDevice);

}  // namespace
}  // namespace kiln::runtime::cpu
