#include "idempotency_key.hpp"

#include <array>
#include <cstdio>
#include <cstring>

namespace sluice::http {

namespace {

constexpr uint64_t k_mul1 = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t k_mul2 = 0xc2b2ae3d27d4eb4fULL;

// splitmix64's finaliser.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// One 64-bit lane over `bytes`, 8 bytes per step (a multiply-rotate per word, as
// Murmur-style hashes do): bodies are up to megabytes, and a byte-at-a-time hash cost
// a visible share of a checkpointed run (bench/http_bench.py).
uint64_t lane(uint64_t seed, std::string_view bytes) {
  uint64_t h = seed ^ (bytes.size() * k_mul1);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, 8);
    h = rotl(h ^ (rotl(w * k_mul2, 31) * k_mul1), 27) * 5 + 0x52dce729;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  h ^= rotl(tail * k_mul2, 31) * k_mul1;
  return mix(h);
}

Digest digest(std::string_view body) {
  return {lane(0x243f6a8885a308d3ULL, body), lane(0x13198a2e03707344ULL, body)};
}

std::string key_of(uint64_t salt, uint64_t a, uint64_t b, const Digest& d) {
  const uint64_t hi = mix(d[0] ^ mix(a ^ k_mul1) ^ rotl(mix(b), 17) ^ salt);
  const uint64_t lo = mix(d[1] ^ mix(b ^ k_mul2) ^ rotl(mix(a), 29) ^ rotl(salt, 32));
  std::array<char, 33> out{};
  std::snprintf(out.data(), out.size(), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return std::string(out.data(), 32);
}

}  // namespace

uint64_t key_salt(std::string_view sender, uint64_t task) {
  return mix(lane(0x452821e638d01377ULL, sender) ^ mix(task + k_mul1));
}

std::string idempotency_key(uint64_t salt, uint64_t a, uint64_t b, std::string_view body) {
  return key_of(salt, a, b, digest(body));
}

std::string SegmentKeys::next(std::string_view body) {
  const Digest d = digest(body);
  const std::string id(reinterpret_cast<const char*>(d.data()), sizeof(d));
  const uint32_t n = seen_[id]++;
  return key_of(salt_, segment_, n, d);
}

void SegmentKeys::start_segment(uint64_t segment) {
  segment_ = segment;
  seen_.clear();
}

}  // namespace sluice::http
