// What the definitions of the core_ops sources share (from_iterable.cc, from_textfile.cc,
// periodic_sources.cc, filenames.cc, process_source.cc; included by them only): the SDK
// names they use and the check of their keys that must be positive.
#pragma once

#include <sluice/sluice.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::core_ops {

using sdk::Config;
using sdk::Context;
using sdk::Result;
using sdk::SourceState;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

/// Fails through `cfg` with "key 'KEY' must be positive (got N)" unless `n` > 0. The keys'
/// `.min(1)` constraints refuse it at validate on hosts from ABI 1.2; this keeps create
/// from taking it on older ones.
inline void require_positive(const Config& cfg, std::string_view key, int64_t n) {
  if (n <= 0) cfg.fail(key, "must be positive (got " + std::to_string(n) + ")");
}

}  // namespace sluice::core_ops
