// The CUDA caching allocator's logic (src/runtime/cuda/allocator.h) on a fake device: size
// classes, segments carved and merged, reuse on a stream and across streams, empty_cache, the
// statistics and the out-of-memory error. No GPU needed: the fake hands out addresses of a fake
// address space (never dereferenced) up to a capacity.
#include <gtest/gtest.h>
#include <kiln/error.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda/allocator.h"

namespace kiln::runtime::cuda {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

class FakeDevice final : public RawMemory {
 public:
  explicit FakeDevice(size_t capacity) : capacity_(capacity) {}
  void* alloc(size_t nbytes) override {
    if (used_ + nbytes > capacity_) return nullptr;
    used_ += nbytes;
    const uintptr_t p = next_;
    next_ += (nbytes + 2 * MiB - 1) / (2 * MiB) * (2 * MiB) + 2 * MiB;  // a gap: segments never touch
    live_[p] = nbytes;
    allocs++;
    return reinterpret_cast<void*>(p);
  }
  void free(void* p, size_t nbytes) override {
    auto it = live_.find(reinterpret_cast<uintptr_t>(p));
    ASSERT_NE(it, live_.end()) << "freed a pointer the device never gave";
    EXPECT_EQ(it->second, nbytes) << "freed with another size";
    used_ -= nbytes;
    live_.erase(it);
    frees++;
  }
  MemInfo info() override { return {capacity_ - used_, capacity_}; }
  void order(Stream from, Stream to) override { orders.emplace_back(from, to); }
  std::string name() const override { return "cuda:7"; }

  size_t used() const { return used_; }
  int allocs = 0, frees = 0;
  std::vector<std::pair<Stream, Stream>> orders;

 private:
  size_t capacity_, used_ = 0;
  uintptr_t next_ = uintptr_t(1) << 32;
  std::map<uintptr_t, size_t> live_;
};

Stream stream(uintptr_t id) { return reinterpret_cast<Stream>(id); }
const Stream s0 = nullptr, s1 = stream(0x100), s2 = stream(0x200);
char* at(void* p) { return static_cast<char*>(p); }

TEST(CudaAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::round(1), 512u);
  EXPECT_EQ(CachingAllocator::round(512), 512u);
  EXPECT_EQ(CachingAllocator::round(513), 1024u);
  EXPECT_EQ(CachingAllocator::round(1 * MiB), 1 * MiB);       // the largest small request
  EXPECT_EQ(CachingAllocator::round(1 * MiB + 1), 2 * MiB);   // the smallest large one
  EXPECT_EQ(CachingAllocator::round(5 * MiB + 3), 6 * MiB);
}

TEST(CudaAllocator, SmallBlocksAreCarvedFromOne2MiBSegment) {
  FakeDevice dev(64 * MiB);
  CachingAllocator a(dev);
  void* p = a.allocate(100, s0);
  void* q = a.allocate(1000, s0);
  EXPECT_EQ(dev.allocs, 1);
  EXPECT_EQ(dev.used(), 2 * MiB);
  EXPECT_EQ(at(q), at(p) + 512);  // the next block of the segment
  const AllocatorStats st = a.stats();
  EXPECT_EQ(st.allocated, 512u + 1024u);
  EXPECT_EQ(st.reserved, 2 * MiB);
  EXPECT_EQ(st.segments, 1u);
  EXPECT_EQ(st.requested_bytes, 1100u);
  a.deallocate(p);
  a.deallocate(q);
  EXPECT_EQ(a.stats().allocated, 0u);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);  // cached, not given back
  EXPECT_EQ(dev.frees, 0);
}

TEST(CudaAllocator, LargeBlocksGetSegmentsRoundedTo2MiB) {
  FakeDevice dev(64 * MiB);
  CachingAllocator a(dev);
  void* p = a.allocate(3 * MiB, s0);
  EXPECT_EQ(dev.used(), 4 * MiB);
  a.deallocate(p);
  void* q = a.allocate(4 * MiB, s0);  // same class: the cached segment
  EXPECT_EQ(q, p);
  EXPECT_EQ(dev.allocs, 1);
  a.deallocate(q);
  void* r = a.allocate(2 * MiB, s0);  // smaller: the front of the cached block, the rest stays cached
  EXPECT_EQ(r, p);
  void* r2 = a.allocate(2 * MiB, s0);
  EXPECT_EQ(at(r2), at(p) + 2 * MiB);
  EXPECT_EQ(dev.allocs, 1);
  a.deallocate(r);
  a.deallocate(r2);
}

TEST(CudaAllocator, FreedNeighboursMergeAndTheHoleIsReused) {
  FakeDevice dev(64 * MiB);
  CachingAllocator a(dev);
  std::vector<void*> b;
  for (int i = 0; i < 4; i++) b.push_back(a.allocate(512 * KiB, s0));  // fills one 2 MiB segment
  EXPECT_EQ(dev.allocs, 1);
  a.deallocate(b[1]);
  a.deallocate(b[2]);
  void* hole = a.allocate(1 * MiB, s0);  // fits only in the merged 1 MiB of blocks 1 and 2
  EXPECT_EQ(hole, b[1]);
  EXPECT_EQ(dev.allocs, 1);
  void* more = a.allocate(512, s0);  // no room left in the segment: a second one
  EXPECT_EQ(dev.allocs, 2);
  a.deallocate(hole);
  a.deallocate(b[0]);
  a.deallocate(b[3]);
  a.empty_cache();  // the first segment is whole again and goes back; the second is in use
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(a.stats().reserved, 2 * MiB);
  a.deallocate(more);
  a.empty_cache();
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.used(), 0u);
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(a.stats().segments, 0u);
}

TEST(CudaAllocator, ABlockIsReusedOnItsStreamWithoutWaiting) {
  FakeDevice dev(64 * MiB);
  CachingAllocator a(dev);
  void* p1 = a.allocate(4096, s1);
  void* p2 = a.allocate(4096, s2);
  a.deallocate(p1);
  a.deallocate(p2);
  EXPECT_EQ(a.allocate(4096, s2), p2);  // s2's own block, though s1's is free too
  EXPECT_EQ(a.allocate(4096, s1), p1);
  EXPECT_EQ(dev.allocs, 2);  // with room on the device, each stream got a segment of its own
  EXPECT_TRUE(dev.orders.empty());
}

TEST(CudaAllocator, AnotherStreamsBlockIsReusedAfterAnEvent) {
  FakeDevice dev(2 * MiB);  // room for one segment: s2 must take s1's cached block
  CachingAllocator a(dev);
  void* p = a.allocate(2 * MiB, s1);
  a.deallocate(p);
  void* q = a.allocate(2 * MiB, s2);
  EXPECT_EQ(q, p);
  ASSERT_EQ(dev.orders.size(), 1u);
  EXPECT_EQ(dev.orders[0].first, s1);   // s2 waits on what s1 has queued
  EXPECT_EQ(dev.orders[0].second, s2);
  a.deallocate(q);
  EXPECT_EQ(a.allocate(2 * MiB, s2), p);  // now s2's: no second wait
  EXPECT_EQ(dev.orders.size(), 1u);
}

TEST(CudaAllocator, FreeBlocksOfTwoStreamsDoNotMerge) {
  FakeDevice dev(2 * MiB);  // one segment: s2 must take a block of s1's
  CachingAllocator a(dev);
  void* x = a.allocate(512 * KiB, s1);  // [0, 512K) of a segment
  void* y = a.allocate(512 * KiB, s1);  // [512K, 1M); [1M, 2M) stays free for s1
  a.deallocate(x);
  void* z = a.allocate(512 * KiB, s2);  // the best fit is x's block: s2 takes it after a wait
  EXPECT_EQ(z, x);
  EXPECT_EQ(dev.orders.size(), 1u);
  a.deallocate(y);  // merges with s1's free tail: [512K, 2M)
  a.deallocate(z);  // s2's block stays apart from s1's neighbour
  void* w = a.allocate(1 * MiB, s1);  // from s1's merged 1.5 MiB, no wait
  EXPECT_EQ(at(w), at(x) + 512 * KiB);
  EXPECT_EQ(dev.orders.size(), 1u);
  EXPECT_EQ(dev.allocs, 1);
  a.deallocate(w);
  a.empty_cache();  // every block of the segment is free, though of two streams: it goes back
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(dev.used(), 0u);
  EXPECT_EQ(a.stats().reserved, 0u);
}

TEST(CudaAllocator, PeakAndReset) {
  FakeDevice dev(64 * MiB);
  CachingAllocator a(dev);
  void* p = a.allocate(4 * MiB, s0);
  void* q = a.allocate(2 * MiB, s0);
  a.deallocate(p);
  EXPECT_EQ(a.stats().allocated, 2 * MiB);
  EXPECT_EQ(a.stats().max_allocated, 6 * MiB);
  a.reset_peak();
  EXPECT_EQ(a.stats().max_allocated, 2 * MiB);
  a.deallocate(q);
}

TEST(CudaAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  FakeDevice dev(8 * MiB);
  CachingAllocator a(dev);
  a.deallocate(a.allocate(1024, s0));  // a cached small segment: 2 MiB of the 8
  void* big = a.allocate(8 * MiB, s0);  // needs the whole device: the cache goes first
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(a.stats().reserved, 8 * MiB);
  a.deallocate(big);
}

TEST(CudaAllocator, OutOfMemorySaysWhatWasAskedHeldAndFree) {
  FakeDevice dev(8 * MiB);
  CachingAllocator a(dev);
  void* held = a.allocate(6 * MiB, s0);
  std::string message;
  try {
    a.allocate(3 * MiB, s0);
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("CUDA out of memory on cuda:7: tried to allocate 3.00 MiB (3145728 bytes, 4194304 rounded)"),
            std::string::npos) << message;
  EXPECT_NE(message.find("kiln holds 6.00 MiB in tensors and 0 bytes cached (6.00 MiB reserved)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the device has 2.00 MiB free of 8.00 MiB"), std::string::npos) << message;
  // Still usable: what fits is allocated, and freeing makes room for the request that failed.
  void* small = a.allocate(1 * MiB, s0);
  EXPECT_NE(small, nullptr);
  a.deallocate(small);
  a.deallocate(held);
  void* retry = a.allocate(3 * MiB, s0);  // the 6 MiB block is cached and split
  EXPECT_EQ(retry, held);
  a.deallocate(retry);
}

TEST(CudaAllocator, BadFreesAreClearErrors) {
  FakeDevice dev(8 * MiB);
  CachingAllocator a(dev);
  int x = 0;
  EXPECT_THROW(a.deallocate(&x), kiln::Error);
  EXPECT_THROW(a.allocate(0, s0), kiln::Error);
  void* p = a.allocate(10, s0);
  a.deallocate(p);
  EXPECT_THROW(a.deallocate(p), kiln::Error);  // twice
}

TEST(CudaAllocator, DestructionGivesEverySegmentBack) {
  FakeDevice dev(64 * MiB);
  {
    CachingAllocator a(dev);
    a.allocate(100, s0);
    a.deallocate(a.allocate(5 * MiB, s1));
  }
  EXPECT_EQ(dev.used(), 0u);
  EXPECT_EQ(dev.frees, dev.allocs);
}

}  // namespace
}  // namespace kiln::runtime::cuda
