// The optional idempotency key of a batch (header `idempotency_key_header`), so that a
// receiver can drop a batch it already has.
//
// It must be the same for every attempt of a batch and, with checkpoints, for the same batch
// sent again after a restart: a restart replays the elements after the restored
// checkpoint. It is therefore derived from what a restart reproduces and nothing else:
//
//   key = H(sender, epoch segment, n, body)
//
// where the sender is the pipeline's name, the node's id and the task's index: two tasks
// (or two sinks) that send the same body in the same segment are two batches, and their
// keys must differ, or a receiver would drop one of them.
//
// where the epoch segment is 1 + the epoch of the last checkpoint this sink prepared before
// the batch (kept in its snapshot, so a restart from checkpoint E is in segment E+1 again,
// as the first run was after E), and n counts the earlier batches of the segment with the
// same body (two identical batches of one segment stay two). A key never names a different
// content: a replay cut into other batches (a batch_timeout_ms that expired elsewhere) gets
// other keys, and its elements are delivered again (at-least-once) rather than dropped by a
// receiver that mistook them for a batch it has. Keys from the epoch number plus a batch
// counter alone would be stable too, but would name different content after such a
// replay: the receiver would drop elements it never got.
//
// Without checkpoints nothing is replayed: key = H(sender, a random nonce of the run, batch
// number).
//
// H is 128 bits: two independent 64-bit passes over the body, 8 bytes per step, mixed
// with a and b: not cryptographic (nothing here is secret), 32 hex digits.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sluice::http {

using Digest = std::array<uint64_t, 2>;

/// The sender's part of H: `sender` (pipeline and node) and the task index.
uint64_t key_salt(std::string_view sender, uint64_t task);
/// H(salt, a, b, body) as 32 lowercase hex digits.
std::string idempotency_key(uint64_t salt, uint64_t a, uint64_t b, std::string_view body);

/// The keys of one epoch segment (checkpointed runs).
class SegmentKeys {
 public:
  void set_salt(uint64_t salt) noexcept { salt_ = salt; }
  /// The key of the next batch with `body` in the current segment.
  std::string next(std::string_view body);
  /// A checkpoint was prepared (or restored): later batches belong to segment `segment`.
  void start_segment(uint64_t segment);
  [[nodiscard]] uint64_t segment() const noexcept { return segment_; }

 private:
  uint64_t salt_ = 0;
  uint64_t segment_ = 1;
  std::unordered_map<std::string, uint32_t> seen_;  // body digest -> batches with it
};

}  // namespace sluice::http
