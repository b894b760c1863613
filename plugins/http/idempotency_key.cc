#include "idempotency_key.hpp"

#include <array>
#include <cstdio>

namespace sluice::http {

namespace {

constexpr uint64_t k_fnv_prime = 0x100000001b3ULL;

uint64_t fnv1a(uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= k_fnv_prime;
  }
  return h;
}

uint64_t fnv1a_u64(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= k_fnv_prime;
  }
  return h;
}

// splitmix64's finaliser: spreads FNV's weak high bits.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::array<uint64_t, 2> digest(std::string_view body) {
  return {fnv1a(0xcbf29ce484222325ULL, body), fnv1a(0x84222325cbf29ce4ULL, body)};
}

}  // namespace

std::string idempotency_key(uint64_t a, uint64_t b, std::string_view body) {
  const auto d = digest(body);
  const uint64_t hi = mix(fnv1a_u64(fnv1a_u64(d[0], a), b));
  const uint64_t lo = mix(fnv1a_u64(fnv1a_u64(d[1], b), a) ^ 0x9e3779b97f4a7c15ULL);
  std::array<char, 33> out{};
  std::snprintf(out.data(), out.size(), "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return std::string(out.data(), 32);
}

std::string SegmentKeys::next(std::string_view body) {
  const auto d = digest(body);
  std::string id(reinterpret_cast<const char*>(d.data()), sizeof(d));
  const uint32_t n = seen_[id]++;
  return idempotency_key(segment_, n, body);
}

void SegmentKeys::start_segment(uint64_t segment) {
  segment_ = segment;
  seen_.clear();
}

}  // namespace sluice::http
