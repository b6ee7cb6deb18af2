// The CUDA driver API, loaded with dlopen (library.h) from libcuda.so.1, the library the NVIDIA
// driver installs: device properties, primary contexts, memory, copies, streams, events, modules
// and kernel launch. No CUDA header is needed to build it, and a machine without the driver or a
// GPU is "no GPU" (available() false, with the reason), an error only when CUDA is asked for.
// The handles are the driver's own, under kiln's names. docs/cuda.md.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime::cuda {

using Stream = struct StreamOpaque*;  // null: the device's default (legacy) stream
using Event = struct EventOpaque*;
using Module = struct ModuleOpaque*;
using Function = struct FunctionOpaque*;

// Whether libcuda loaded (cheap: no driver call), and whether a GPU is usable (cuInit succeeded and
// found one or more devices; the first call runs cuInit). $KILN_CUDA_LIBRARY names a path to try first.
bool driver_loaded();
bool available();
// Why not, when unavailable: the library candidates tried, or the driver's answer to cuInit.
const std::string& unavailable_reason();
// Raises kiln::Error "no CUDA GPU: <reason>" unless available().
void require();

int device_count();    // 0 without a GPU
int driver_version();  // as CUDA_VERSION counts (13000 for 13.0); 0 without the driver

struct DeviceProperties {
  std::string name;            // "NVIDIA H200"
  int sm_count = 0;            // multiprocessors
  size_t total_memory = 0;     // bytes
  int major = 0, minor = 0;    // compute capability (9.0 on Hopper)
  int max_threads_per_block = 0;
  int warp_size = 0;
  int max_shared_per_block_optin = 0;  // bytes a block may have once its function opts in
  int shared_per_sm = 0;
  int l2_bytes = 0;
  // The NVRTC arch of this exact device: "sm_90a" (the "a" targets, with wgmma and setmaxnreg,
  // from compute capability 9.0 on), "sm_86" before.
  std::string arch() const;
};
const DeviceProperties& properties(int device);  // cached; a kiln::Error for a bad index

// Makes the device's primary context current on this thread (retained once per process). Every
// call below that takes a device does this first.
void set_device(int device);
int current_device();  // of this thread; 0 until set_device

// --- memory. alloc returns null when the device is out of memory (the caching allocator then
// releases its cache and retries); every other failure is a kiln::Error.
void* mem_alloc(size_t nbytes, int device);
void mem_free(void* p, int device);
struct MemInfo {
  size_t free = 0, total = 0;
};
MemInfo mem_info(int device);
// Page-locked host memory: copies from and to it can be asynchronous.
void* host_alloc(size_t nbytes);
void host_free(void* p);

// --- copies, ordered on `stream`. copy_async returns at once when the host side is pinned (or
// both are on the device); memcpy_sync waits until dst holds the bytes.
enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };
void copy_async(void* dst, const void* src, size_t nbytes, CopyKind kind, Stream stream);
void copy_sync(void* dst, const void* src, size_t nbytes, CopyKind kind, Stream stream);
void memset_async(void* dst, unsigned char value, size_t nbytes, Stream stream);

// --- streams. The current stream of a device is per thread, the default stream until set.
Stream stream_create(int device);  // non-blocking with respect to the default stream
void stream_destroy(Stream s);
void stream_synchronize(Stream s);
bool stream_done(Stream s);  // all work queued on it has finished
Stream current_stream(int device);
void set_current_stream(int device, Stream s);
void device_synchronize(int device);

// --- events
Event event_create(int device, bool timing = false);
void event_destroy(Event e);
void event_record(Event e, Stream s);
void stream_wait(Stream s, Event e);  // work queued on s from now on waits for e
void event_synchronize(Event e);
bool event_done(Event e);
float event_elapsed_ms(Event start, Event end);  // both recorded, both with timing

// --- modules and launch
// Loads a cubin (or PTX, which the driver compiles for the device) from memory.
Module module_load(std::string_view image, int device);
void module_unload(Module m);
Function module_function(Module m, const char* name);  // a kiln::Error naming it when absent
// Lets the function's blocks use up to `bytes` of dynamic shared memory (past 48 KiB needs this).
void set_max_dynamic_shared(Function f, int bytes);
// What a function's blocks hold on an SM: registers per thread, local memory (spills) per
// thread, and how many of its blocks of block_threads fit on one SM at once.
struct FunctionResources {
  int registers = 0, local_bytes = 0, blocks_per_sm = 0;
};
FunctionResources function_resources(Function f, int block_threads, size_t shared_bytes);
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
// args: one pointer per kernel parameter, to that parameter's value.
void launch(Function f, Dim3 grid, Dim3 block, unsigned shared_bytes, Stream stream, void** args);

}  // namespace kiln::runtime::cuda
