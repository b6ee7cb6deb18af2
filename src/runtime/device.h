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
#include <string>

namespace kiln::runtime {

// Every block is aligned to at least this (a cache line; 16-byte vector loads need less).
inline constexpr size_t kAlignment = 64;

struct MemoryStats {
  size_t allocated_bytes = 0;   // requested since the process started (a running total)
  size_t allocated_blocks = 0;  // allocate() calls since the process started
  size_t live_bytes = 0;        // held by tensors now
  size_t peak_bytes = 0;        // the most live at once since the last reset_peak()
  size_t cached_bytes = 0;      // freed blocks the allocator keeps for reuse
  size_t reserved_bytes = 0;    // held from the device: in use + cached (0 where not tracked)
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

  // --- streams, events, modules and kernel launch (the CUDA backend, src/runtime/cuda/device.cc).
  // Handles are the backend's own, opaque here; a null stream is the device's default stream.
  // The defaults fail with a clear error (the CPU has none of them), except copy_async, which is
  // copy(), and empty_cache, which has nothing to release.
  // The stream that copies, launches and allocations of this thread on the device are queued on.
  virtual void* current_stream(int16_t index);
  virtual void set_current_stream(void* stream, int16_t index);
  virtual void* create_stream(int16_t index);
  virtual void destroy_stream(void* stream, int16_t index);
  virtual void synchronize_stream(void* stream, int16_t index);
  // Events: recorded on a stream, waited on by another (on the device, not the host), timed.
  virtual void* create_event(bool timing, int16_t index);
  virtual void destroy_event(void* event, int16_t index);
  virtual void record_event(void* event, void* stream, int16_t index);
  virtual void wait_event(void* stream, void* event, int16_t index);
  virtual void synchronize_event(void* event, int16_t index);
  virtual float elapsed_ms(void* start, void* end, int16_t index);  // between two recorded events
  // Queued on the current stream: returns before dst holds the bytes where the device can (host
  // memory from allocate_pinned, or both sides on the device); synchronize the stream before use.
  virtual void copy_async(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
    copy(dst, dst_device, src, src_device, nbytes);
  }
  // Page-locked host memory, the host side of asynchronous copies.
  virtual void* allocate_pinned(size_t nbytes, int16_t index);
  virtual void deallocate_pinned(void* p, int16_t index);
  // A compiled module (a cubin or PTX image) and its kernels; modules live until unloaded.
  virtual void* load_module(const void* image, size_t nbytes, int16_t index);
  virtual void unload_module(void* module, int16_t index);
  virtual void* module_function(void* module, const char* name, int16_t index);
  struct Launch {
    void* function = nullptr;           // from module_function
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared_bytes = 0;          // dynamic shared memory
    void* stream = nullptr;
    void** args = nullptr;              // one pointer to each parameter's value
  };
  virtual void launch(const Launch& launch, int16_t index);
  // Gives cached, unused memory back to the device.
  virtual void empty_cache(int16_t) {}
};

// Installs the interface of a device type (once per type; it must outlive every tensor on that
// device). Returns true, for static registration: `static bool r = register_device(...)`.
bool register_device(DeviceType type, DeviceInterface* device);
// For a backend this build has but this machine cannot run (CUDA without its driver): why, said
// in the "no device backend" error instead of "not in this build". Returns true, as above.
bool note_device_absent(DeviceType type, const std::string& why);

// "no device backend for cuda is registered in this build", or "... on this machine: <why>".
std::string no_device_message(DeviceType type);

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
