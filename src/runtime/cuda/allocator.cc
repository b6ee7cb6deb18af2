#include "runtime/cuda/allocator.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace kiln::runtime::cuda {
namespace {

std::string bytes(size_t n) {
  char buf[64];
  if (n >= (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(size_t(1) << 30));
  else if (n >= (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(size_t(1) << 20));
  else std::snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t CachingAllocator::round(size_t nbytes) {
  return nbytes <= kSmallLimit ? round_up(nbytes, kSmallRound) : round_up(nbytes, kLargeRound);
}

CachingAllocator::~CachingAllocator() {
  for (Pool* p : {&small_, &large_})
    for (Block* b : *p) delete b;
  for (auto& [ptr, b] : in_use_) delete b;
  for (auto& [base, size] : segments_) raw_.free(base, size);
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t size, Stream stream, bool any_stream) {
  if (!any_stream) {
    Block key{nullptr, size, false};
    key.stream = stream;
    auto it = pool.lower_bound(&key);
    return it != pool.end() && (*it)->stream == stream ? *it : nullptr;
  }
  Block* best = nullptr;  // the best fit among every stream's blocks (the rare path)
  for (Block* b : pool)
    if (b->size >= size && (!best || b->size < best->size)) best = b;
  return best;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, bool small) {
  char* p = static_cast<char*>(raw_.alloc(size));
  if (!p) return nullptr;
  segments_[p] = size;
  stats_.reserved += size;
  stats_.segments++;
  stats_.device_allocs++;
  return new Block{p, size, small};
}

// Cuts `size` bytes off the front of a free block that is not in a pool; the rest goes back to it.
CachingAllocator::Block* CachingAllocator::split(Block* b, size_t size) {
  if (b->size == size) return b;
  Block* rest = new Block{b->ptr + size, b->size - size, b->small};
  rest->stream = b->stream;
  rest->prev = b;
  rest->next = b->next;
  if (b->next) b->next->prev = rest;
  b->next = rest;
  b->size = size;
  pool(b->small).insert(rest);
  return b;
}

void* CachingAllocator::allocate(size_t nbytes, Stream stream) {
  KILN_CHECK(nbytes > 0, "CUDA allocator: a block of 0 bytes was asked for");
  const size_t size = round(nbytes);
  const bool small = nbytes <= kSmallLimit;
  std::lock_guard<std::mutex> lock(m_);
  Pool& free_blocks = pool(small);
  // Its own stream's cached block; else a new segment; else (the device is full) another stream's
  // cached block, after a wait on that stream; else the whole cache goes back and the device is asked again.
  const size_t segment = small ? kSmallSegment : size;
  Block* b = find_free(free_blocks, size, stream, false);
  if (b) {
    free_blocks.erase(b);
  } else if ((b = new_segment(segment, small))) {
    b->stream = stream;
  } else if ((b = find_free(free_blocks, size, stream, true))) {
    raw_.order(b->stream, stream);  // the new owner waits for the old one's work
    free_blocks.erase(b);
    b->stream = stream;
  } else {
    release_free_segments();
    if (!(b = new_segment(segment, small))) fail_oom(nbytes, size);
    b->stream = stream;
  }
  b = split(b, size);
  b->in_use = true;
  in_use_[b->ptr] = b;
  stats_.allocated += b->size;
  stats_.max_allocated = std::max(stats_.max_allocated, stats_.allocated);
  stats_.requests++;
  stats_.requested_bytes += nbytes;
  return b->ptr;
}

void CachingAllocator::deallocate(void* p) {
  std::lock_guard<std::mutex> lock(m_);
  auto it = in_use_.find(p);
  KILN_CHECK(it != in_use_.end(), "CUDA allocator: ", p, " is not a block in use on ", raw_.name());
  Block* b = it->second;
  in_use_.erase(it);
  b->in_use = false;
  stats_.allocated -= b->size;
  Pool& free_blocks = pool(b->small);
  // Merge with free neighbours of the same stream (another stream's block may still be in flight).
  auto mergeable = [&](Block* n) { return n && !n->in_use && n->stream == b->stream; };
  if (mergeable(b->prev)) {
    Block* prev = b->prev;
    free_blocks.erase(prev);
    prev->size += b->size;
    prev->next = b->next;
    if (b->next) b->next->prev = prev;
    delete b;
    b = prev;
  }
  if (mergeable(b->next)) {
    Block* next = b->next;
    free_blocks.erase(next);
    b->size += next->size;
    b->next = next->next;
    if (next->next) next->next->prev = b;
    delete next;
  }
  free_blocks.insert(b);
}

// Gives back every segment whose blocks are all free (of one stream, merged into one block, or of
// several, side by side).
void CachingAllocator::release_free_segments() {
  for (Pool* p : {&small_, &large_}) {
    std::vector<Block*> firsts;  // free blocks that start a segment
    for (Block* b : *p)
      if (!b->prev) firsts.push_back(b);
    for (Block* first : firsts) {
      bool all_free = true;
      for (Block* b = first; b && all_free; b = b->next) all_free = !b->in_use;
      if (!all_free) continue;
      char* base = first->ptr;
      for (Block* b = first; b;) {
        Block* next = b->next;
        p->erase(b);
        delete b;
        b = next;
      }
      const size_t size = segments_.at(base);
      raw_.free(base, size);
      segments_.erase(base);
      stats_.reserved -= size;
      stats_.segments--;
      stats_.device_frees++;
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(m_);
  release_free_segments();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(m_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(m_);
  stats_.max_allocated = stats_.allocated;
}

void CachingAllocator::fail_oom(size_t nbytes, size_t rounded) {
  const MemInfo info = raw_.info();
  kiln::detail::fail(
      kiln::detail::cat("CUDA out of memory on ", raw_.name(), ": tried to allocate ", bytes(nbytes), " (", nbytes,
                        " bytes, ", rounded, " rounded); kiln holds ", bytes(stats_.allocated), " in tensors and ",
                        bytes(stats_.reserved - stats_.allocated), " cached (", bytes(stats_.reserved),
                        " reserved); the device has ", bytes(info.free), " free of ", bytes(info.total)),
      "kiln already released its cache and retried: free tensors that are no longer needed (del), or use "
      "smaller batches");
}

}  // namespace kiln::runtime::cuda
