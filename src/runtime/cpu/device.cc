// The CPU's device interface: host memory, copies with memcpy. Large blocks are recycled: a fresh
// multi-MiB block comes from mmap and every page of it faults on first touch, which costs more
// than the kernel that fills it (a 64 MiB add spent ~85% of its time in page faults). The
// statistics (memory_stats(kCPU)) let tests check that capture on fake tensors allocates no tensor
// data, and measure the AOT partitioner's activation memory with live/peak bytes.
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "runtime/device.h"

namespace kiln::runtime::cpu {
namespace {

constexpr size_t kLarge = size_t(1) << 20;      // blocks from here on are cached
constexpr size_t kHugePage = size_t(2) << 20;   // and rounded to (and aligned on) huge pages
constexpr size_t kCacheLimit = size_t(512) << 20;  // idle bytes kept at most

struct Cache {
  std::mutex m;
  std::unordered_map<void*, size_t> live;        // large blocks handed out -> size
  std::unordered_multimap<size_t, void*> idle;   // size -> free blocks
  size_t idle_bytes = 0;
};

std::atomic<size_t> g_allocated{0}, g_blocks{0};  // totals since the process started

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: static tensors free their storage at exit
  return *c;
}

// Under AddressSanitizer every block goes straight back to the system: a cached block would hide
// a use after free from it.
#if defined(KILN_SANITIZE) || defined(__SANITIZE_ADDRESS__)
constexpr bool kBypassCache = true;
#else
constexpr bool kBypassCache = false;
#endif

std::atomic<size_t> g_live{0}, g_peak{0};

void add_live(size_t nbytes) {
  const size_t now = g_live.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

bool cached(size_t nbytes) { return nbytes >= kLarge && !kBypassCache; }

// KILN_HUGEPAGES=1 asks for transparent huge pages on large blocks (docs/performance.md,
// "Memory"); off by default: a huge page's first touch zeroes 2 MB at once, and on a VM that
// returns free memory to its host (free page reporting) it faults there as well, which doubled
// the first training step of a fresh process while steady steps measured the same either way.
bool huge_pages() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_HUGEPAGES");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// The large-block paths stay out of line: the small-block path (every small tensor) then needs no
// stack frame of its own.
[[gnu::noinline]] void* allocate_large(size_t nbytes) {
  const size_t size = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.m);
    auto it = c.idle.find(size);
    if (it != c.idle.end()) {
      void* p = it->second;
      c.idle.erase(it);
      c.idle_bytes -= size;
      c.live[p] = size;
      return p;
    }
  }
  void* p = std::aligned_alloc(kHugePage, size);
  if (!p) {  // out of memory: give the idle blocks back and retry once
    std::lock_guard<std::mutex> lock(c.m);
    for (auto& [sz, q] : c.idle) std::free(q);
    c.idle.clear();
    c.idle_bytes = 0;
  }
  if (!p) p = std::aligned_alloc(kHugePage, size);
  if (!p) return nullptr;
  if (huge_pages()) madvise(p, size, MADV_HUGEPAGE);  // fewer TLB misses and faults; a hint only
  std::lock_guard<std::mutex> lock(c.m);
  c.live[p] = size;
  return p;
}

[[gnu::noinline]] void deallocate_large(void* p) {
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.m);
    auto it = c.live.find(p);
    if (it != c.live.end()) {
      const size_t size = it->second;
      c.live.erase(it);
      if (c.idle_bytes + size <= kCacheLimit) {
        c.idle.emplace(size, p);
        c.idle_bytes += size;
        return;
      }
    }
  }
  std::free(p);
}

class CpuDevice final : public DeviceInterface {
 public:
  void* allocate(size_t nbytes, int16_t) override {
    static_assert(kAlignment == 64, "the small-block path aligns to 64 bytes");
    g_allocated.fetch_add(nbytes, std::memory_order_relaxed);
    g_blocks.fetch_add(1, std::memory_order_relaxed);
    void* p = cached(nbytes) ? allocate_large(nbytes) : std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
    if (p) add_live(nbytes);
    return p;
  }

  void deallocate(void* p, size_t nbytes, int16_t) override {
    if (!p) return;
    g_live.fetch_sub(nbytes, std::memory_order_relaxed);
    if (cached(nbytes)) deallocate_large(p);
    else std::free(p);
  }

  void copy(void* dst, Device, const void* src, Device, size_t nbytes) override { std::memcpy(dst, src, nbytes); }
  void synchronize(int16_t) override {}  // every CPU kernel has finished when it returns

  MemoryStats memory_stats(int16_t) const override {
    MemoryStats s;
    s.allocated_bytes = g_allocated.load(std::memory_order_relaxed);
    s.allocated_blocks = g_blocks.load(std::memory_order_relaxed);
    s.live_bytes = g_live.load(std::memory_order_relaxed);
    s.peak_bytes = g_peak.load(std::memory_order_relaxed);
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.m);
    s.cached_bytes = c.idle_bytes;
    return s;
  }

  void reset_peak(int16_t) override {
    g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
};

// Never destroyed: static tensors give their storage back at exit, after this file's statics.
[[maybe_unused]] const bool registered = register_device(DeviceType::CPU, new CpuDevice);

}  // namespace
}  // namespace kiln::runtime::cpu
