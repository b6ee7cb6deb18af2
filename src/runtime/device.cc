#include "runtime/device.h"

#include <kiln/error.h>

#include <memory>

namespace kiln::runtime {

namespace detail {
DeviceInterface* g_devices[kNumDeviceTypes] = {};  // zero before any dynamic initialization

// (a function's static: backends note their absence during static initialization)
std::string& absent_reason(DeviceType type) {
  static std::string reasons[kNumDeviceTypes];
  return reasons[size_t(type)];
}

void fail_no_device(DeviceType type) {
  kiln::detail::fail(no_device_message(type), "keep the tensors on the CPU (the default device; .cpu() moves one back)");
}
}  // namespace detail

namespace {
[[noreturn]] void unsupported(const char* what) {
  kiln::detail::fail(std::string("this device has no ") + what,
                     "streams, events, pinned memory, modules and kernel launch are the CUDA backend's");
}
}  // namespace

void* DeviceInterface::current_stream(int16_t) { unsupported("streams"); }
void DeviceInterface::set_current_stream(void*, int16_t) { unsupported("streams"); }
void* DeviceInterface::create_stream(int16_t) { unsupported("streams"); }
void DeviceInterface::destroy_stream(void*, int16_t) { unsupported("streams"); }
void DeviceInterface::synchronize_stream(void*, int16_t) { unsupported("streams"); }
void* DeviceInterface::create_event(bool, int16_t) { unsupported("events"); }
void DeviceInterface::destroy_event(void*, int16_t) { unsupported("events"); }
void DeviceInterface::record_event(void*, void*, int16_t) { unsupported("events"); }
void DeviceInterface::wait_event(void*, void*, int16_t) { unsupported("events"); }
void DeviceInterface::synchronize_event(void*, int16_t) { unsupported("events"); }
float DeviceInterface::elapsed_ms(void*, void*, int16_t) { unsupported("events"); }
void* DeviceInterface::allocate_pinned(size_t, int16_t) { unsupported("pinned host memory"); }
void DeviceInterface::deallocate_pinned(void*, int16_t) { unsupported("pinned host memory"); }
void* DeviceInterface::load_module(const void*, size_t, int16_t) { unsupported("kernel modules"); }
void DeviceInterface::unload_module(void*, int16_t) { unsupported("kernel modules"); }
void* DeviceInterface::module_function(void*, const char*, int16_t) { unsupported("kernel modules"); }
void DeviceInterface::launch(const Launch&, int16_t) { unsupported("kernel launch"); }

std::string no_device_message(DeviceType type) {
  const std::string& why = detail::absent_reason(type);
  return std::string("no device backend for ") + name(type) +
         (why.empty() ? std::string(" is registered in this build") : " on this machine: " + why);
}

bool note_device_absent(DeviceType type, const std::string& why) {
  detail::absent_reason(type) = why;
  return true;
}

bool register_device(DeviceType type, DeviceInterface* device) {
  KILN_CHECK(device, "register_device: null interface for ", name(type));
  KILN_CHECK(!detail::g_devices[size_t(type)], "register_device: ", name(type), " already has an interface");
  detail::g_devices[size_t(type)] = device;
  return true;
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (nbytes == 0) return;
  const DeviceType dt = dst_device.type, st = src_device.type;
  if (dt == st || st == DeviceType::CPU) return device_interface(dt).copy(dst, dst_device, src, src_device, nbytes);
  if (dt == DeviceType::CPU) return device_interface(st).copy(dst, dst_device, src, src_device, nbytes);
  // Two backends that know nothing of each other: through host memory.
  std::unique_ptr<char[]> host(new char[nbytes]);
  device_interface(st).copy(host.get(), kCPU, src, src_device, nbytes);
  device_interface(dt).copy(dst, dst_device, host.get(), kCPU, nbytes);
}

MemoryStats memory_stats(Device device) { return device_interface(device.type).memory_stats(device.index); }
void reset_peak(Device device) { device_interface(device.type).reset_peak(device.index); }
void synchronize(Device device) { device_interface(device.type).synchronize(device.index); }

}  // namespace kiln::runtime
