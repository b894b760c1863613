// A per-thread cache of freed value blocks, in front of operator new/delete.
//
// Why: a pipeline that makes a new array or string per element (sliding_window, split)
// frees a whole batch of blocks of one size at once, then allocates as many again. glibc's
// tcache keeps 7 blocks per size; the rest went through _int_free/_int_malloc and
// unlink_chunk, about a quarter of sliding_window(10) -> map(sum). Here each thread keeps
// freed blocks of up to k_max_bytes in size classes of k_step bytes, and reuses them LIFO.
//
// Bounds (memory stays bounded): a class keeps at most class_limit(c) blocks (k_class_bytes
// worth, at most k_class_blocks), a thread at most k_thread_bytes in all; a block beyond
// either bound goes to operator delete. A block may be given back on any thread: it joins
// THAT thread's list (blocks are plain operator new blocks of their class's size, so any
// thread may reuse or free them). A thread's lists are freed when it exits (the main
// thread's by exit(), before static destructors); a block given back after that goes
// straight to operator delete.
//
// Off under AddressSanitizer (so ASan sees every use-after-free and overflow; value.cc then
// allocates exact sizes) and when the environment has SLUICE_VALUE_CACHE=0 (read once per
// process; e.g. for valgrind memcheck hunting a use-after-free).
//
// Threading: every function acts on the calling thread's cache only; no locks, no atomics.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define SLUICE_BLOCK_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLUICE_BLOCK_CACHE_ASAN 1
#endif
#endif

namespace sluice::host::block_cache {

#ifdef SLUICE_BLOCK_CACHE_ASAN
inline constexpr bool k_compiled_in = false;
#else
inline constexpr bool k_compiled_in = true;
#endif

inline constexpr size_t k_step = 16;        // class c holds blocks of c * k_step bytes
inline constexpr size_t k_max_bytes = 512;  // larger blocks are never cached
inline constexpr uint32_t k_classes = k_max_bytes / k_step;
inline constexpr size_t k_class_bytes = 256 * 1024;
inline constexpr uint32_t k_class_blocks = 4096;
inline constexpr size_t k_thread_bytes = 1024 * 1024;

/// The class of a block of `bytes` (1..k_classes), or 0: not cacheable (too large, or the
/// cache is compiled out).
constexpr uint32_t class_of(size_t bytes) noexcept {
  if (!k_compiled_in || bytes == 0 || bytes > k_max_bytes) return 0;
  return static_cast<uint32_t>((bytes + k_step - 1) / k_step);
}
/// The size of the blocks of class `c` (>= 1).
constexpr size_t class_size(uint32_t c) noexcept { return c * k_step; }
/// How many freed blocks of class `c` a thread keeps at most.
constexpr uint32_t class_limit(uint32_t c) noexcept {
  const size_t by_bytes = k_class_bytes / class_size(c);
  return static_cast<uint32_t>(by_bytes < k_class_blocks ? by_bytes : k_class_blocks);
}

namespace detail {

enum : uint8_t { k_unset = 0, k_on = 1, k_off = 2 };

// One thread's lists: trivially constructed and destroyed, so reaching it costs no guard;
// the destructor that frees the lists at thread exit is a separate object (block_cache.cc),
// registered the first time this thread gives a block back.
struct ThreadCache {
  std::array<void*, k_classes + 1> heads;  // singly linked through each block's first word
  std::array<uint32_t, k_classes + 1> counts;
  size_t bytes;
  uint8_t state;
};
extern constinit thread_local ThreadCache t_cache;

inline constexpr auto k_limits = [] {
  std::array<uint32_t, k_classes + 1> l{};
  for (uint32_t c = 1; c <= k_classes; ++c) l[c] = class_limit(c);
  return l;
}();

void give_back_slow(void* block, uint32_t c) noexcept;

}  // namespace detail

/// A block of class_size(c) bytes for class `c` (>= 1): the calling thread's most recently
/// cached one, else a new one from operator new (which may throw std::bad_alloc).
inline void* take(uint32_t c) {
  detail::ThreadCache& t = detail::t_cache;
  void* block = t.heads[c];
  if (block == nullptr) return ::operator new(class_size(c));
  t.heads[c] = *static_cast<void**>(block);
  --t.counts[c];
  t.bytes -= class_size(c);
  return block;
}

/// Gives back a block that take(c) returned, on any thread: kept by the calling thread
/// within the bounds, else freed. The caller has destroyed what the block held.
inline void give_back(void* block, uint32_t c) noexcept {
  detail::ThreadCache& t = detail::t_cache;
  if (t.state == detail::k_on && t.counts[c] < detail::k_limits[c] &&
      t.bytes + class_size(c) <= k_thread_bytes) [[likely]] {
    *static_cast<void**>(block) = t.heads[c];
    t.heads[c] = block;
    ++t.counts[c];
    t.bytes += class_size(c);
    return;
  }
  detail::give_back_slow(block, c);
}

/// Whether the calling thread caches blocks (false: compiled out, SLUICE_VALUE_CACHE=0, or
/// the thread is exiting). Sets the cache up on a thread that has not used it yet.
bool enabled() noexcept;
/// Blocks of class `c` the calling thread holds now (for tests and diagnostics).
uint32_t cached_blocks(uint32_t c) noexcept;
/// Bytes the calling thread holds now in all classes.
size_t cached_bytes() noexcept;
/// Frees every block the calling thread holds (the thread keeps caching afterwards).
void trim() noexcept;
/// Blocks freed so far, process-wide, by exiting threads emptying their lists.
uint64_t freed_at_thread_exit() noexcept;

}  // namespace sluice::host::block_cache
