#include "retry_policy.hpp"

#include <algorithm>

namespace sluice::http {

Verdict classify(bool transport_ok, long status) {
  if (!transport_ok) return Verdict::retry;
  if (status >= 200 && status < 300) return Verdict::delivered;
  if (status == 408 || status == 429 || status >= 500) return Verdict::retry;
  return Verdict::rejected;
}

std::chrono::milliseconds Backoff::delay(uint32_t failures) {
  // initial * 2^(failures-1), saturating at max (the shift is bounded so it cannot overflow).
  const uint32_t shift = std::min<uint32_t>(failures == 0 ? 0 : failures - 1, 30);
  const int64_t full = std::min<int64_t>(max_.count(), initial_.count() * (int64_t{1} << shift));
  const int64_t half = full / 2;
  std::uniform_int_distribution<int64_t> extra(0, full - half);
  return std::chrono::milliseconds(half + extra(rng_));
}

}  // namespace sluice::http
