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
// The cheapest correct way to free a block of nbytes from cpu_alloc: small blocks were never
// cached, so they skip cpu_free's lock and lookup.
void (*cpu_deleter(size_t nbytes))(void*);

}  // namespace kiln
