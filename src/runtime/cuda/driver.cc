#include "runtime/cuda/driver.h"

#include <kiln/error.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/cuda/library.h"

namespace kiln::runtime::cuda {
namespace {

// The driver API as kiln declares it (the ABI of cuda.h: int results, int device ordinals,
// 64-bit device pointers, opaque handles). The _v2 names are the ones cuda.h's macros pick.
using Result = int;
using DevicePtr = unsigned long long;
using Context = struct ContextOpaque*;
constexpr Result kSuccess = 0, kOutOfMemory = 2, kNotReady = 600;
enum Attribute : int {
  kMaxThreadsPerBlock = 1, kWarpSize = 10, kSmCount = 16, kL2Bytes = 38, kMajor = 75, kMinor = 76,
  kSharedPerSm = 81, kSharedPerBlockOptin = 97,
};
constexpr int kFuncMaxDynamicShared = 8;
constexpr unsigned kStreamNonBlocking = 1, kEventDisableTiming = 2;
constexpr int kMaxDevices = 64;

struct Api {
  Result (*init)(unsigned);
  Result (*driver_get_version)(int*);
  Result (*get_error_name)(Result, const char**);
  Result (*get_error_string)(Result, const char**);
  Result (*device_get_count)(int*);
  Result (*device_get)(int*, int);
  Result (*device_get_name)(char*, int, int);
  Result (*device_total_mem)(size_t*, int);
  Result (*device_get_attribute)(int*, int, int);
  Result (*primary_ctx_retain)(Context*, int);
  Result (*ctx_set_current)(Context);
  Result (*ctx_synchronize)();
  Result (*mem_alloc)(DevicePtr*, size_t);
  Result (*mem_free)(DevicePtr);
  Result (*mem_get_info)(size_t*, size_t*);
  Result (*mem_host_alloc)(void**, size_t, unsigned);
  Result (*mem_free_host)(void*);
  Result (*memcpy_htod_async)(DevicePtr, const void*, size_t, Stream);
  Result (*memcpy_dtoh_async)(void*, DevicePtr, size_t, Stream);
  Result (*memcpy_dtod_async)(DevicePtr, DevicePtr, size_t, Stream);
  Result (*memset_d8_async)(DevicePtr, unsigned char, size_t, Stream);
  Result (*stream_create)(Stream*, unsigned);
  Result (*stream_destroy)(Stream);
  Result (*stream_synchronize)(Stream);
  Result (*stream_query)(Stream);
  Result (*stream_wait_event)(Stream, Event, unsigned);
  Result (*event_create)(Event*, unsigned);
  Result (*event_destroy)(Event);
  Result (*event_record)(Event, Stream);
  Result (*event_synchronize)(Event);
  Result (*event_query)(Event);
  Result (*event_elapsed_time)(float*, Event, Event);
  Result (*module_load_data)(Module*, const void*);
  Result (*module_unload)(Module);
  Result (*module_get_function)(Function*, Module, const char*);
  Result (*func_set_attribute)(Function, int, int);
  Result (*func_get_attribute)(int*, int, Function);
  Result (*occupancy_max_active_blocks)(int*, Function, int, size_t);
  Result (*launch_kernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Stream,
                          void**, void**);
};

struct Driver {
  Library lib{"the CUDA driver", library_candidates("KILN_CUDA_LIBRARY", {"libcuda.so.1", "libcuda.so"})};
  Api api{};
  bool loaded = false;
  // Filled by the first available() (cuInit is costly: not at load).
  std::once_flag init_once;
  bool usable = false;
  std::string reason;
  int count = 0;
  std::mutex m;
  std::array<Context, kMaxDevices> contexts{};
  std::array<std::unique_ptr<DeviceProperties>, kMaxDevices> props{};

  Driver() {
    Api& a = api;
    loaded = lib.ok() && lib.get(a.init, "cuInit") && lib.get(a.driver_get_version, "cuDriverGetVersion") &&
             lib.get(a.get_error_name, "cuGetErrorName") && lib.get(a.get_error_string, "cuGetErrorString") &&
             lib.get(a.device_get_count, "cuDeviceGetCount") && lib.get(a.device_get, "cuDeviceGet") &&
             lib.get(a.device_get_name, "cuDeviceGetName") && lib.get(a.device_total_mem, "cuDeviceTotalMem_v2") &&
             lib.get(a.device_get_attribute, "cuDeviceGetAttribute") &&
             lib.get(a.primary_ctx_retain, "cuDevicePrimaryCtxRetain") &&
             lib.get(a.ctx_set_current, "cuCtxSetCurrent") && lib.get(a.ctx_synchronize, "cuCtxSynchronize") &&
             lib.get(a.mem_alloc, "cuMemAlloc_v2") && lib.get(a.mem_free, "cuMemFree_v2") &&
             lib.get(a.mem_get_info, "cuMemGetInfo_v2") && lib.get(a.mem_host_alloc, "cuMemHostAlloc") &&
             lib.get(a.mem_free_host, "cuMemFreeHost") && lib.get(a.memcpy_htod_async, "cuMemcpyHtoDAsync_v2") &&
             lib.get(a.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2") &&
             lib.get(a.memcpy_dtod_async, "cuMemcpyDtoDAsync_v2") && lib.get(a.memset_d8_async, "cuMemsetD8Async") &&
             lib.get(a.stream_create, "cuStreamCreate") && lib.get(a.stream_destroy, "cuStreamDestroy_v2") &&
             lib.get(a.stream_synchronize, "cuStreamSynchronize") && lib.get(a.stream_query, "cuStreamQuery") &&
             lib.get(a.stream_wait_event, "cuStreamWaitEvent") && lib.get(a.event_create, "cuEventCreate") &&
             lib.get(a.event_destroy, "cuEventDestroy_v2") && lib.get(a.event_record, "cuEventRecord") &&
             lib.get(a.event_synchronize, "cuEventSynchronize") && lib.get(a.event_query, "cuEventQuery") &&
             lib.get(a.module_load_data, "cuModuleLoadData") && lib.get(a.module_unload, "cuModuleUnload") &&
             lib.get(a.module_get_function, "cuModuleGetFunction") &&
             lib.get(a.func_set_attribute, "cuFuncSetAttribute") && lib.get(a.func_get_attribute, "cuFuncGetAttribute") &&
             lib.get(a.occupancy_max_active_blocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor") &&
             lib.get(a.launch_kernel, "cuLaunchKernel");
    // cuEventElapsedTime_v2 (CUDA 12.8 on) is what cuda.h 13 names; older drivers have the first one.
    if (loaded && !(a.event_elapsed_time = reinterpret_cast<decltype(a.event_elapsed_time)>(
                        dlsym_either("cuEventElapsedTime_v2", "cuEventElapsedTime"))))
      loaded = false;
    if (!loaded) reason = lib.error();
  }
  void* dlsym_either(const char* a, const char* b) {
    void* p = lib.symbol(a);
    return p ? p : lib.symbol(b);
  }
};

Driver& driver() {
  static Driver* d = new Driver;  // never destroyed: frees may run during static destruction
  return *d;
}

std::string describe(Result r) {
  const Api& a = driver().api;
  const char* name = nullptr;
  const char* text = nullptr;
  a.get_error_name(r, &name);
  a.get_error_string(r, &text);
  return kiln::detail::cat(name ? name : "CUDA error", " (", r, ")", text ? std::string(": ") + text : std::string());
}

void check(Result r, const char* call) {
  if (r != kSuccess) kiln::detail::fail(kiln::detail::cat("CUDA ", call, " failed: ", describe(r)));
}

const Api& api() {
  require();
  return driver().api;
}

DevicePtr dptr(const void* p) { return reinterpret_cast<DevicePtr>(p); }

void check_device(int device) {
  KILN_CHECK(device >= 0 && device < device_count(), "cuda:", device, " does not exist: this machine has ",
             device_count(), " CUDA device(s)");
}

thread_local int t_device = 0;
thread_local Context t_context = nullptr;
thread_local std::array<Stream, kMaxDevices> t_streams{};

}  // namespace

bool driver_loaded() { return driver().loaded; }

bool available() {
  Driver& d = driver();
  if (!d.loaded) return false;
  std::call_once(d.init_once, [&] {
    if (Result r = d.api.init(0); r != kSuccess) {
      d.reason = "cuInit failed: " + describe(r);
      return;
    }
    if (Result r = d.api.device_get_count(&d.count); r != kSuccess || d.count == 0) {
      d.reason = r != kSuccess ? "cuDeviceGetCount failed: " + describe(r) : "the driver sees no CUDA device";
      d.count = 0;
      return;
    }
    d.count = std::min(d.count, kMaxDevices);
    d.usable = true;
  });
  return d.usable;
}

const std::string& unavailable_reason() {
  available();
  return driver().reason;
}

void require() {
  KILN_CHECK_HINT(available(), "kiln's CUDA backend needs an NVIDIA GPU and its driver (libcuda.so.1); keep "
                               "the tensors on the CPU, or set KILN_CUDA_LIBRARY to libcuda's path",
                  "no CUDA GPU: ", unavailable_reason());
}

int device_count() { return available() ? driver().count : 0; }

int driver_version() {
  if (!driver_loaded()) return 0;
  int v = 0;
  driver().api.driver_get_version(&v);
  return v;
}

std::string DeviceProperties::arch() const {
  return kiln::detail::cat("sm_", major, minor, major >= 9 ? "a" : "");
}

const DeviceProperties& properties(int device) {
  const Api& a = api();
  check_device(device);
  Driver& d = driver();
  std::lock_guard<std::mutex> lock(d.m);
  if (!d.props[device]) {
    auto p = std::make_unique<DeviceProperties>();
    int dev = 0;
    check(a.device_get(&dev, device), "cuDeviceGet");
    char name[256] = {};
    check(a.device_get_name(name, sizeof name, dev), "cuDeviceGetName");
    p->name = name;
    check(a.device_total_mem(&p->total_memory, dev), "cuDeviceTotalMem");
    const std::pair<int*, Attribute> attrs[] = {
        {&p->sm_count, kSmCount}, {&p->major, kMajor}, {&p->minor, kMinor},
        {&p->max_threads_per_block, kMaxThreadsPerBlock}, {&p->warp_size, kWarpSize},
        {&p->max_shared_per_block_optin, kSharedPerBlockOptin}, {&p->shared_per_sm, kSharedPerSm},
        {&p->l2_bytes, kL2Bytes}};
    for (auto [out, attr] : attrs) check(a.device_get_attribute(out, attr, dev), "cuDeviceGetAttribute");
    d.props[device] = std::move(p);
  }
  return *d.props[device];
}

void set_device(int device) {
  const Api& a = api();
  check_device(device);
  Driver& d = driver();
  Context ctx;
  {
    std::lock_guard<std::mutex> lock(d.m);
    if (!d.contexts[device]) {
      int dev = 0;
      check(a.device_get(&dev, device), "cuDeviceGet");
      check(a.primary_ctx_retain(&d.contexts[device], dev), "cuDevicePrimaryCtxRetain");
    }
    ctx = d.contexts[device];
  }
  if (ctx != t_context) {
    check(a.ctx_set_current(ctx), "cuCtxSetCurrent");
    t_context = ctx;
  }
  t_device = device;
}

int current_device() { return t_device; }

void* mem_alloc(size_t nbytes, int device) {
  set_device(device);
  DevicePtr p = 0;
  const Result r = driver().api.mem_alloc(&p, nbytes);
  if (r == kOutOfMemory) return nullptr;
  check(r, "cuMemAlloc");
  return reinterpret_cast<void*>(p);
}

void mem_free(void* p, int device) {
  if (!p) return;
  set_device(device);
  check(driver().api.mem_free(dptr(p)), "cuMemFree");
}

MemInfo mem_info(int device) {
  set_device(device);
  MemInfo m;
  check(driver().api.mem_get_info(&m.free, &m.total), "cuMemGetInfo");
  return m;
}

void* host_alloc(size_t nbytes) {
  set_device(current_device());  // pinned memory belongs to a context
  void* p = nullptr;
  const Result r = driver().api.mem_host_alloc(&p, nbytes, /*CU_MEMHOSTALLOC_PORTABLE*/ 1);
  KILN_CHECK(r != kOutOfMemory, "CUDA out of pinned host memory: tried to allocate ", nbytes, " bytes");
  check(r, "cuMemHostAlloc");
  return p;
}

void host_free(void* p) {
  if (p) check(api().mem_free_host(p), "cuMemFreeHost");
}

void copy_async(void* dst, const void* src, size_t nbytes, CopyKind kind, Stream stream) {
  const Api& a = api();
  if (nbytes == 0) return;
  switch (kind) {
    case CopyKind::HostToDevice: return check(a.memcpy_htod_async(dptr(dst), src, nbytes, stream), "cuMemcpyHtoDAsync");
    case CopyKind::DeviceToHost: return check(a.memcpy_dtoh_async(dst, dptr(src), nbytes, stream), "cuMemcpyDtoHAsync");
    case CopyKind::DeviceToDevice:
      return check(a.memcpy_dtod_async(dptr(dst), dptr(src), nbytes, stream), "cuMemcpyDtoDAsync");
  }
}

void copy_sync(void* dst, const void* src, size_t nbytes, CopyKind kind, Stream stream) {
  copy_async(dst, src, nbytes, kind, stream);
  stream_synchronize(stream);
}

void memset_async(void* dst, unsigned char value, size_t nbytes, Stream stream) {
  if (nbytes) check(api().memset_d8_async(dptr(dst), value, nbytes, stream), "cuMemsetD8Async");
}

Stream stream_create(int device) {
  set_device(device);
  Stream s = nullptr;
  check(driver().api.stream_create(&s, kStreamNonBlocking), "cuStreamCreate");
  return s;
}

void stream_destroy(Stream s) {
  if (s) check(api().stream_destroy(s), "cuStreamDestroy");
}

void stream_synchronize(Stream s) { check(api().stream_synchronize(s), "cuStreamSynchronize"); }

bool stream_done(Stream s) {
  const Result r = api().stream_query(s);
  if (r == kNotReady) return false;
  check(r, "cuStreamQuery");
  return true;
}

Stream current_stream(int device) {
  check_device(device);
  return t_streams[device];
}

void set_current_stream(int device, Stream s) {
  check_device(device);
  t_streams[device] = s;
}

void device_synchronize(int device) {
  set_device(device);
  check(driver().api.ctx_synchronize(), "cuCtxSynchronize");
}

Event event_create(int device, bool timing) {
  set_device(device);
  Event e = nullptr;
  check(driver().api.event_create(&e, timing ? 0 : kEventDisableTiming), "cuEventCreate");
  return e;
}

void event_destroy(Event e) {
  if (e) check(api().event_destroy(e), "cuEventDestroy");
}

void event_record(Event e, Stream s) { check(api().event_record(e, s), "cuEventRecord"); }
void stream_wait(Stream s, Event e) { check(api().stream_wait_event(s, e, 0), "cuStreamWaitEvent"); }
void event_synchronize(Event e) { check(api().event_synchronize(e), "cuEventSynchronize"); }

bool event_done(Event e) {
  const Result r = api().event_query(e);
  if (r == kNotReady) return false;
  check(r, "cuEventQuery");
  return true;
}

float event_elapsed_ms(Event start, Event end) {
  float ms = 0;
  check(api().event_elapsed_time(&ms, start, end), "cuEventElapsedTime");
  return ms;
}

Module module_load(std::string_view image, int device) {
  set_device(device);
  const std::string copy(image);  // the driver reads PTX as a C string: NUL-terminated
  Module m = nullptr;
  check(driver().api.module_load_data(&m, copy.c_str()), "cuModuleLoadData");
  return m;
}

void module_unload(Module m) {
  if (m) check(api().module_unload(m), "cuModuleUnload");
}

Function module_function(Module m, const char* name) {
  Function f = nullptr;
  const Result r = api().module_get_function(&f, m, name);
  KILN_CHECK(r == kSuccess, "CUDA module has no kernel named '", name, "' (", describe(r), ")");
  return f;
}

void set_max_dynamic_shared(Function f, int bytes) {
  check(api().func_set_attribute(f, kFuncMaxDynamicShared, bytes), "cuFuncSetAttribute");
}

FunctionResources function_resources(Function f, int block_threads, size_t shared_bytes) {
  constexpr int kLocalSizeBytes = 3, kNumRegs = 4;  // CU_FUNC_ATTRIBUTE_*
  FunctionResources r;
  check(api().func_get_attribute(&r.registers, kNumRegs, f), "cuFuncGetAttribute");
  check(api().func_get_attribute(&r.local_bytes, kLocalSizeBytes, f), "cuFuncGetAttribute");
  check(api().occupancy_max_active_blocks(&r.blocks_per_sm, f, block_threads, shared_bytes),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return r;
}

void launch(Function f, Dim3 grid, Dim3 block, unsigned shared_bytes, Stream stream, void** args) {
  const Result r = api().launch_kernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, stream,
                                       args, nullptr);
  if (r != kSuccess)
    kiln::detail::fail(kiln::detail::cat("CUDA kernel launch failed (grid ", grid.x, "x", grid.y, "x", grid.z, ", block ",
                                   block.x, "x", block.y, "x", block.z, ", ", shared_bytes,
                                   " bytes of shared memory): ", describe(r)));
}

}  // namespace kiln::runtime::cuda
