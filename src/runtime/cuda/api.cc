// kiln/cuda.h: the public GPU questions, answered by the driver layer and the CUDA device
// interface (its caching allocator).
#include <kiln/cuda.h>
#include <kiln/error.h>

#include <utility>

#include "runtime/cuda/driver.h"
#include "runtime/device.h"

namespace kiln::cuda {
namespace {

namespace rc = runtime::cuda;

// A device index checked against the machine's (-1: the current one).
int16_t resolve(int device) {
  rc::require();
  if (device < 0) device = rc::current_device();
  KILN_CHECK(device < rc::device_count(), "kiln::cuda: no device ", device, ": this machine has ", rc::device_count(),
             " (cuda:0 to cuda:", rc::device_count() - 1, ")");
  return int16_t(device);
}

runtime::MemoryStats stats(int device) {
  const int16_t d = resolve(device);
  return runtime::device_interface(DeviceType::CUDA).memory_stats(d);
}

}  // namespace

bool is_available() { return rc::available(); }

const std::string& unavailable_reason() {
  static const std::string none;
  return rc::available() ? none : rc::unavailable_reason();
}

int device_count() { return rc::available() ? rc::device_count() : 0; }

int current_device() {
  rc::require();
  return rc::current_device();
}

void set_device(int device) { rc::set_device(resolve(device)); }

std::string get_device_name(int device) { return rc::properties(resolve(device)).name; }

std::pair<int, int> get_device_capability(int device) {
  const rc::DeviceProperties& p = rc::properties(resolve(device));
  return {p.major, p.minor};
}

void synchronize(int device) { rc::device_synchronize(resolve(device)); }

int64_t memory_allocated(int device) { return int64_t(stats(device).live_bytes); }
int64_t max_memory_allocated(int device) { return int64_t(stats(device).peak_bytes); }
int64_t memory_reserved(int device) { return int64_t(stats(device).reserved_bytes); }
// (resolved first: without a GPU the interface is not registered, and the error is "no CUDA GPU")
void reset_peak_memory_stats(int device) {
  const int16_t d = resolve(device);
  runtime::device_interface(DeviceType::CUDA).reset_peak(d);
}
void empty_cache(int device) {
  const int16_t d = resolve(device);
  runtime::device_interface(DeviceType::CUDA).empty_cache(d);
}

}  // namespace kiln::cuda
