// CPU memory for tensor storage. Large blocks are recycled: a fresh multi-MiB block comes from
// mmap and every page of it faults on first touch, which costs more than the kernel that fills
// it (a 64 MiB add spent ~85% of its time in page faults).
#pragma once
#include <cstddef>

namespace kiln {

// 64-byte aligned; `nbytes` > 0. Returns nullptr when out of memory.
void* cpu_alloc(size_t nbytes);
// Frees (or keeps for reuse) a block from cpu_alloc.
void cpu_free(void* p);
// Bytes requested from cpu_alloc since the process started (a statistic: tests check that
// capture on fake tensors allocates no tensor data).
size_t cpu_allocated_bytes();
size_t cpu_allocated_blocks();  // how many cpu_alloc calls
// Bytes of tensor storage alive now, and the most alive at once since the last reset (for
// memory measurements, e.g. of the AOT partitioner's activation memory budget).
size_t cpu_live_bytes();
size_t cpu_peak_bytes();
void cpu_reset_peak();
void cpu_track_live(ptrdiff_t delta);  // called by Storage as blocks come and go
// The cheapest correct way to free a block of nbytes from cpu_alloc: small blocks were never
// cached, so they skip cpu_free's lock and lookup.
void (*cpu_deleter(size_t nbytes))(void*);

}  // namespace kiln
