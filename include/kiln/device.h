// Where a tensor lives.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace kiln {

// One per device backend. PrivateUse1 is for a backend kept outside kiln's tree (as PyTorch's):
// it registers its device interface and kernels like any other (docs/devices.md).
enum class DeviceType : uint8_t { CPU, CUDA, PrivateUse1 };
inline constexpr int kNumDeviceTypes = 3;
const char* name(DeviceType t);  // "cpu", "cuda", "privateuseone": the names device strings use

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = 0;
  constexpr Device() = default;
  constexpr Device(DeviceType t, int idx = 0) : type(t), index(int16_t(idx)) {}
  Device(const char* spec);  // "cpu", "cuda", "cuda:1", "privateuseone:0"
  Device(const std::string& spec) : Device(spec.c_str()) {}
  constexpr bool is_cpu() const { return type == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type == DeviceType::CUDA; }
  constexpr bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const;  // "cpu", or the type's name and index: "cuda:0"
};
inline constexpr Device kCPU{DeviceType::CPU, 0};
std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace kiln
