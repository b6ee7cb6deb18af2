// Host memory for tensor storage. Large blocks are recycled: a fresh multi-MiB block comes from
// mmap and every page of it faults on first touch, which costs more than the kernel that fills
// it (a 64 MiB add spent ~85% of its time in page faults).
#pragma once
#include <cstddef>

#include "runtime/device.h"

namespace kiln::runtime::cpu {

// kAlignment-aligned; `nbytes` > 0. Returns nullptr when out of memory.
void* allocate(size_t nbytes);
// Frees (or keeps for reuse) a block from allocate() of that size: small blocks were never
// cached, so they skip the cache's lock and lookup.
void deallocate(void* p, size_t nbytes);
// The statistics behind memory_stats(kCPU): tests check that capture on fake tensors allocates
// no tensor data, and measure the AOT partitioner's activation memory with live/peak bytes.
MemoryStats memory_stats();
void reset_peak();

}  // namespace kiln::runtime::cpu
