// Where a tensor lives.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace kiln {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int16_t index = 0;
  Device() = default;
  Device(DeviceType t, int idx = 0) : type(t), index(int16_t(idx)) {}
  Device(const char* spec);  // "cpu", "cuda", "cuda:1"
  Device(const std::string& spec) : Device(spec.c_str()) {}
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string str() const;
};
inline const Device kCPU{DeviceType::CPU, 0};
std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace kiln
