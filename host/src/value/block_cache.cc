// The per-thread block cache's slow paths: setting a thread up, the bounds, thread exit.
#include "value/block_cache.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace sluice::host::block_cache {
namespace detail {

constinit thread_local ThreadCache t_cache{};

}  // namespace detail

namespace {

using detail::t_cache;

std::atomic<uint64_t> g_freed_at_exit{0};

// SLUICE_VALUE_CACHE=0 turns the cache off for the whole process; read once.
bool allowed_by_environment() noexcept {
  static const bool allowed = [] {
    const char* v = std::getenv("SLUICE_VALUE_CACHE");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return allowed;
}

uint64_t free_all() noexcept {
  uint64_t freed = 0;
  for (uint32_t c = 1; c <= k_classes; ++c) {
    for (void* b = t_cache.heads[c]; b != nullptr;) {
      void* next = *static_cast<void**>(b);
      ::operator delete(b);
      b = next;
      ++freed;
    }
    t_cache.heads[c] = nullptr;
    t_cache.counts[c] = 0;
  }
  t_cache.bytes = 0;
  return freed;
}

// Frees the thread's lists when it exits. Its first use (in set_up) registers the
// destructor with the C++ runtime (__cxa_thread_atexit), which runs it at thread exit, or
// at exit() for the main thread, before the destructors of static objects.
struct ExitHook {
  ExitHook() = default;
  ExitHook(const ExitHook&) = delete;
  ExitHook& operator=(const ExitHook&) = delete;
  ~ExitHook() {
    t_cache.state = detail::k_off;  // values released later on this thread: operator delete
    g_freed_at_exit.fetch_add(free_all(), std::memory_order_relaxed);
  }
};
thread_local ExitHook t_exit_hook;

void set_up() noexcept {
  if (t_cache.state != detail::k_unset) return;
  if (!k_compiled_in || !allowed_by_environment()) {
    t_cache.state = detail::k_off;
    return;
  }
  // Odr-use of the hook constructs it on this thread and registers its destructor; it may
  // need memory for that: without it, this thread does without a cache.
  try {
    [[maybe_unused]] ExitHook* volatile hook = &t_exit_hook;
  } catch (...) {
    t_cache.state = detail::k_off;
    return;
  }
  t_cache.state = detail::k_on;
}

}  // namespace

void detail::give_back_slow(void* block, uint32_t c) noexcept {
  if (t_cache.state == k_unset) {
    set_up();
    if (t_cache.state == k_on) {
      give_back(block, c);
      return;
    }
  }
  ::operator delete(block);  // off, or over a bound
}

bool enabled() noexcept {
  set_up();
  return t_cache.state == detail::k_on;
}

uint32_t cached_blocks(uint32_t c) noexcept {
  return c >= 1 && c <= k_classes ? t_cache.counts[c] : 0;
}

size_t cached_bytes() noexcept { return t_cache.bytes; }

void trim() noexcept { free_all(); }

uint64_t freed_at_thread_exit() noexcept { return g_freed_at_exit.load(std::memory_order_relaxed); }

}  // namespace sluice::host::block_cache
