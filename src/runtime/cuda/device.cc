// The CUDA device interface (runtime/device.h) for DeviceType::CUDA: memory from one caching
// allocator per device (allocator.h), copies and launches on the thread's current stream,
// streams, events, pinned memory and modules through the driver API (driver.h).
//
// It registers itself at start-up wherever libcuda.so.1 loads (no driver call: cuInit waits for
// the first use); where the driver is absent, CUDA stays unregistered and asking for a CUDA
// tensor says there is no backend. A driver without a usable GPU is a kiln::Error at first use,
// "no CUDA GPU: <why>".
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/cuda/allocator.h"
#include "runtime/cuda/driver.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {
namespace {

constexpr int kMaxDevices = 64;

// Device memory and stream ordering for one device's allocator.
class DeviceMemory final : public RawMemory {
 public:
  explicit DeviceMemory(int device) : device_(device) {}
  void* alloc(size_t nbytes) override { return mem_alloc(nbytes, device_); }
  // Segments go back only from empty_cache and the out-of-memory path: waiting for the device
  // first makes sure no queued kernel still uses one (rare, so the wait costs little).
  void free(void* p, size_t) override {
    device_synchronize(device_);
    mem_free(p, device_);
  }
  MemInfo info() override { return mem_info(device_); }
  void order(Stream from, Stream to) override {
    Event e = event_create(device_, false);
    event_record(e, from);
    stream_wait(to, e);
    event_destroy(e);  // the driver keeps it until the wait is resolved
  }
  std::string name() const override { return "cuda:" + std::to_string(device_); }

 private:
  int device_;
};

Stream as_stream(void* s) { return static_cast<Stream>(s); }
Event as_event(void* e) { return static_cast<Event>(e); }

class CudaDevice final : public DeviceInterface {
 public:
  void* allocate(size_t nbytes, int16_t index) override {
    return allocator(index).allocate(nbytes, current_stream_of(index));
  }
  void deallocate(void* p, size_t, int16_t index) override { allocator(index).deallocate(p); }

  void copy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) override {
    const auto [device, kind] = route(dst_device, src_device);
    copy_sync(dst, src, nbytes, kind, current_stream_of(device));
  }
  void copy_async(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) override {
    const auto [device, kind] = route(dst_device, src_device);
    cuda::copy_async(dst, src, nbytes, kind, current_stream_of(device));
  }
  void synchronize(int16_t index) override { device_synchronize(index); }

  MemoryStats memory_stats(int16_t index) const override {
    MemoryStats m;
    if (!available() || index < 0 || index >= device_count()) return m;
    const AllocatorStats s = allocator(index).stats();
    m.allocated_bytes = s.requested_bytes;
    m.allocated_blocks = s.requests;
    m.live_bytes = s.allocated;
    m.peak_bytes = s.max_allocated;
    m.cached_bytes = s.reserved - s.allocated;
    m.reserved_bytes = s.reserved;
    return m;
  }
  void reset_peak(int16_t index) override { allocator(index).reset_peak(); }
  void empty_cache(int16_t index) override { allocator(index).empty_cache(); }

  void* current_stream(int16_t index) override { return current_stream_of(index); }
  void set_current_stream(void* stream, int16_t index) override { cuda::set_current_stream(index, as_stream(stream)); }
  void* create_stream(int16_t index) override { return stream_create(index); }
  void destroy_stream(void* stream, int16_t) override { stream_destroy(as_stream(stream)); }
  void synchronize_stream(void* stream, int16_t) override { stream_synchronize(as_stream(stream)); }

  void* create_event(bool timing, int16_t index) override { return event_create(index, timing); }
  void destroy_event(void* event, int16_t) override { event_destroy(as_event(event)); }
  void record_event(void* event, void* stream, int16_t index) override {
    set_device(index);
    event_record(as_event(event), as_stream(stream));
  }
  void wait_event(void* stream, void* event, int16_t index) override {
    set_device(index);
    stream_wait(as_stream(stream), as_event(event));
  }
  void synchronize_event(void* event, int16_t) override { event_synchronize(as_event(event)); }
  float elapsed_ms(void* start, void* end, int16_t) override { return event_elapsed_ms(as_event(start), as_event(end)); }

  void* allocate_pinned(size_t nbytes, int16_t index) override {
    set_device(index);
    return host_alloc(nbytes);
  }
  void deallocate_pinned(void* p, int16_t) override { host_free(p); }

  void* load_module(const void* image, size_t nbytes, int16_t index) override {
    return module_load(std::string_view(static_cast<const char*>(image), nbytes), index);
  }
  void unload_module(void* module, int16_t) override { module_unload(static_cast<Module>(module)); }
  void* module_function(void* module, const char* name, int16_t) override {
    return cuda::module_function(static_cast<Module>(module), name);
  }
  void launch(const Launch& l, int16_t index) override {
    set_device(index);
    cuda::launch(static_cast<Function>(l.function), {l.grid[0], l.grid[1], l.grid[2]},
                 {l.block[0], l.block[1], l.block[2]}, l.shared_bytes, as_stream(l.stream), l.args);
  }

 private:
  CachingAllocator& allocator(int16_t index) const {
    set_device(index);  // checks the GPU and the index
    std::lock_guard<std::mutex> lock(m_);
    if (!allocators_[index]) {
      memory_[index] = std::make_unique<DeviceMemory>(index);
      allocators_[index] = std::make_unique<CachingAllocator>(*memory_[index]);
    }
    return *allocators_[index];
  }
  static Stream current_stream_of(int index) {
    set_device(index);
    return cuda::current_stream(index);
  }
  // The device whose stream a copy is queued on, and its direction.
  static std::pair<int, CopyKind> route(Device dst, Device src) {
    if (src.type == DeviceType::CPU) return {dst.index, CopyKind::HostToDevice};
    if (dst.type == DeviceType::CPU) return {src.index, CopyKind::DeviceToHost};
    return {src.index, CopyKind::DeviceToDevice};  // unified addressing: also between two GPUs
  }

  mutable std::mutex m_;  // made on first use of each device
  mutable std::array<std::unique_ptr<DeviceMemory>, kMaxDevices> memory_;
  mutable std::array<std::unique_ptr<CachingAllocator>, kMaxDevices> allocators_;
};

// Never destroyed: tensors may free their storage during static destruction.
// Where the driver does not load, the "no device backend" error says why (the paths tried).
[[maybe_unused]] const bool registered = driver_loaded() ? register_device(DeviceType::CUDA, new CudaDevice)
                                                         : note_device_absent(DeviceType::CUDA, unavailable_reason());

}  // namespace
}  // namespace kiln::runtime::cuda
