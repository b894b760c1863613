// What an answer means for a request, and when to try it again.
//
// Retried: a transport failure (refused, reset, timed out: no answer, or half of one), 408,
// 429 and every 5xx, the answers that say "not now" rather than "not this". Every other
// non-2xx answer refuses the batch for good: sending it again would get the same answer,
// so it goes to the node's on_rejected policy.
//
// The delay before attempt n+1 is exponential with jitter, "equal jitter": half of
// min(max, initial * 2^(n-1)) plus a random part of the other half, so that many senders
// that failed together do not come back together, yet none retries much sooner than the
// backoff. A Retry-After of the answer (seconds or an HTTP date; libcurl reads both) wins
// over the backoff: the server said when.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace sluice::http {

enum class Verdict { delivered, retry, rejected };

/// `transport_ok`: libcurl got a whole answer with `status`.
Verdict classify(bool transport_ok, long status);

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, uint64_t seed)
      : initial_(initial), max_(max), rng_(seed) {}
  /// The delay before the next attempt of a request that failed `failures` times (>= 1).
  std::chrono::milliseconds delay(uint32_t failures);

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::mt19937_64 rng_;
};

}  // namespace sluice::http
