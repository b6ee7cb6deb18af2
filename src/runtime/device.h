// The device interface: what kiln's upper layers (Storage, copies between devices, later the
// compiled plan) call to use a device's memory. Each DeviceType has at most one implementation,
// which registers itself from its own .cc at static initialization (src/runtime/cpu/device.cc
// for the host). A backend plugs in by registering an interface here and its kernels with the
// dispatcher (ops::register_kernel(op, DeviceType, fn)); nothing in core or ops names it.
// docs/devices.md is the backend author's guide.
#pragma once
#include <kiln/device.h>

#include <cstddef>
#include <cstdint>

namespace kiln::runtime {

// Every block is aligned to at least this (a cache line; 16-byte vector loads need less).
inline constexpr size_t kAlignment = 64;

struct MemoryStats {
  size_t allocated_bytes = 0;   // requested since the process started (a running total)
  size_t allocated_blocks = 0;  // allocate() calls since the process started
  size_t live_bytes = 0;        // held by tensors now
  size_t peak_bytes = 0;        // the most live at once since the last reset_peak()
  size_t cached_bytes = 0;      // freed blocks the allocator keeps for reuse
};

class DeviceInterface {
 public:
  virtual ~DeviceInterface() = default;

  // --- memory. `index` is the device's index within its type (cuda:1 -> 1).
  // A block of nbytes > 0, aligned to kAlignment; null when out of memory (the caller raises
  // the kiln::Error, naming the size and device).
  virtual void* allocate(size_t nbytes, int16_t index) = 0;
  // Gives back a block from allocate() with the size it was asked for.
  virtual void deallocate(void* p, size_t nbytes, int16_t index) = 0;
  // Copies nbytes from src to dst. Each pointer comes with its device: one of them is of this
  // interface's type, the other of this type or the CPU (host memory). Returns when dst holds
  // the bytes (until streams arrive, every copy is synchronous).
  virtual void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) = 0;
  // Waits until all work queued on the device has finished.
  virtual void synchronize(int16_t index) = 0;
  virtual MemoryStats memory_stats(int16_t index) const = 0;
  virtual void reset_peak(int16_t index) = 0;

  // --- next, with the CUDA backend: streams (a current stream per device that copies and
  // launches are queued on; copy() then takes one), events (recorded on a stream, waited on by
  // another, timed), and kernel launch (a loaded module's function, grid, block, shared memory,
  // arguments). They join this class as virtual functions whose defaults fail with a clear error
  // for devices that have none, so the CPU and out-of-tree interfaces need not change.
};

// Installs the interface of a device type (once per type; it must outlive every tensor on that
// device). Returns true, for static registration: `static bool r = register_device(...)`.
bool register_device(DeviceType type, DeviceInterface* device);

namespace detail {
extern DeviceInterface* g_devices[kNumDeviceTypes];
[[noreturn]] void fail_no_device(DeviceType type);
}  // namespace detail
// The registered interface of a device type, or null: one load, for hot paths.
inline DeviceInterface* find_device(DeviceType type) { return detail::g_devices[size_t(type)]; }
// The interface of a device type; a kiln::Error naming the device when none is registered.
inline DeviceInterface& device_interface(DeviceType type) {
  if (DeviceInterface* d = find_device(type)) return *d;
  detail::fail_no_device(type);
}

// Copies nbytes between any two devices: through the interface of the one that is not the CPU
// (or of their common type), through host memory when they are of two different non-CPU types.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);
MemoryStats memory_stats(Device device);
void reset_peak(Device device);
void synchronize(Device device);

}  // namespace kiln::runtime
