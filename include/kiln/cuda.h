// kiln::cuda: what a program asks of the GPUs, as torch.cuda answers it. Every call works in a
// build or on a machine without a GPU: is_available() is false (unavailable_reason() says why),
// device_count() 0, and what needs a device raises kiln::Error "no CUDA GPU: <reason>".
//
//   if (kiln::cuda::is_available()) x = x.to("cuda");
//   ...
//   kiln::cuda::synchronize();   // wait for the kernels queued on the current device
//
// Device -1 below means the current device of this thread (0 until set_device). docs/cuda.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>

namespace kiln::cuda {

bool is_available();
const std::string& unavailable_reason();  // empty when available
int device_count();
int current_device();
void set_device(int device);
std::string get_device_name(int device = -1);
// Compute capability: {9, 0} on an H200.
std::pair<int, int> get_device_capability(int device = -1);

// Waits until every kernel and copy queued on the device has finished.
void synchronize(int device = -1);

// The caching allocator's statistics, in bytes: held by tensors now; the most held at once
// since the last reset_peak_memory_stats(); held from the device (in use + cached for reuse).
int64_t memory_allocated(int device = -1);
int64_t max_memory_allocated(int device = -1);
int64_t memory_reserved(int device = -1);
void reset_peak_memory_stats(int device = -1);
// Gives the cached blocks back to the device (tensors' memory stays).
void empty_cache(int device = -1);

}  // namespace kiln::cuda
