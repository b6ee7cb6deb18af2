// The caching allocator of one CUDA device: cudaMalloc-sized requests cost a driver call and often
// a device synchronization, so freed blocks are kept and handed out again.
//
// - Size classes: a request of up to 1 MiB is rounded up to 512 B and carved from 2 MiB segments;
//   a larger one is rounded up to 2 MiB and gets a segment of its own or a split of a cached one.
//   Freed neighbours of one stream merge again, so a segment ends whole once all its blocks are free.
// - Streams: a block belongs to the stream it was allocated on. Freed, it is reused on that stream
//   at once (work on one stream runs in order). Another stream gets it only when the device has no
//   room for a new segment (a wait ties the two streams together): that stream first waits on an
//   event recorded on the old one (RawMemory::order), so the new owner's work cannot start before
//   the old owner's last use has finished.
// - empty_cache() gives every segment with no block in use back to the device (after waiting for it).
// - Out of memory: the cache is released and the device asked again; if it still refuses, a
//   kiln::Error says how much was asked, what kiln holds (in use and cached) and what the device
//   has free.
// The logic is written against RawMemory (device memory and stream ordering), so the unit tests
// drive it with a fake device (tests/unit/runtime/cuda_allocator_test.cc).
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "runtime/cuda/driver.h"

namespace kiln::runtime::cuda {

class RawMemory {
 public:
  virtual ~RawMemory() = default;
  virtual void* alloc(size_t nbytes) = 0;  // null when the device has no room
  virtual void free(void* p, size_t nbytes) = 0;
  virtual MemInfo info() = 0;  // the device's free and total bytes
  // From now on, work queued on `to` waits for the work queued on `from` so far.
  virtual void order(Stream from, Stream to) = 0;
  // A name for messages ("cuda:0").
  virtual std::string name() const = 0;
};

struct AllocatorStats {
  size_t allocated = 0;      // bytes in blocks in use (rounded sizes)
  size_t max_allocated = 0;  // the most at once since the last reset_peak()
  size_t reserved = 0;       // bytes of segments held from the device (in use + cached)
  size_t segments = 0;
  size_t device_allocs = 0;  // RawMemory::alloc calls that succeeded
  size_t device_frees = 0;
  size_t requests = 0;       // allocate() calls
  size_t requested_bytes = 0;
};

class CachingAllocator {
 public:
  static constexpr size_t kSmallLimit = size_t(1) << 20;  // requests up to this are small
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeRound = size_t(2) << 20;

  explicit CachingAllocator(RawMemory& raw) : raw_(raw) {}
  ~CachingAllocator();  // gives every segment back

  // A block of at least nbytes (> 0) for work on `stream`; a kiln::Error when the device is out of memory.
  void* allocate(size_t nbytes, Stream stream);
  void deallocate(void* p);
  void empty_cache();
  AllocatorStats stats() const;
  void reset_peak();
  // The rounded size a request gets (the size class).
  static size_t round(size_t nbytes);

 private:
  struct Block {
    char* ptr;
    size_t size;
    bool small;        // from the small pool (2 MiB segments)
    bool in_use = false;
    Stream stream = nullptr;
    Block* prev = nullptr;  // neighbours within the segment
    Block* next = nullptr;
  };
  struct ByStreamSize {  // the free lists: by stream, then best fit, then lowest address
    bool operator()(const Block* a, const Block* b) const {
      if (a->stream != b->stream) return a->stream < b->stream;
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, ByStreamSize>;

  Block* find_free(Pool& pool, size_t size, Stream stream, bool any_stream);
  Block* new_segment(size_t size, bool small);
  Block* split(Block* b, size_t size);
  void release_free_segments();
  [[noreturn]] void fail_oom(size_t nbytes, size_t rounded);
  Pool& pool(bool small) { return small ? small_ : large_; }

  RawMemory& raw_;
  mutable std::mutex m_;
  Pool small_, large_;                            // free blocks
  std::unordered_map<void*, Block*> in_use_;      // handed out
  std::map<char*, size_t> segments_;              // base -> size
  AllocatorStats stats_;
};

}  // namespace kiln::runtime::cuda
