// The checkpoint file format (docs/CHECKPOINTING.md "On-disk format"): what the
// host hands a store as the bytes of one epoch, and how it checks them on read.
//
//   offset 0  8 bytes  magic "SLUICECK"
//          8  u32 LE   format version (1)
//         12  u32 LE   CRC-32C of the payload
//         16  u64 LE   payload length
//         24  payload  one encoded value (encode_value), the Checkpoint below
//
// A store keeps the bytes opaque; a truncated or corrupt file is detected here
// (DATA_LOSS) so that the loader can fall back to the previous epoch.
#pragma once

#include "common/result.hpp"
#include "executor/epoch_participant.hpp"
#include "value/value.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::host::checkpoint {

inline constexpr std::string_view k_magic = "SLUICECK";
inline constexpr uint32_t k_format_version = 1;
inline constexpr size_t k_header_size = 24;

// One node's saved state in one task.
struct NodeState {
  std::string id;
  std::string type;
  int32_t role = 0;  // SL_ROLE_*: sources' states are their positions
  Value state;
};

// Key groups a task owned when it took the epoch, per grouped source (the node that
// called key_groups_assigned): source id -> key group -> claim number (docs/SCALING.md).
using Claims = EpochParticipant::GroupClaims;

// One task's part of a checkpoint.
struct TaskState {
  bool finished = false;  // the task had ended (all its input consumed): nothing to restore
  std::vector<NodeState> nodes;
  Claims claims;  // empty without grouped sources
};

struct Checkpoint {
  uint64_t epoch = 0;
  int64_t time_ns = 0;  // wall clock when the epoch was taken
  std::string pipeline;
  std::string member;            // the daemon that took it, when several share the store
  std::vector<TaskState> tasks;  // index = task index

  [[nodiscard]] const NodeState* find(size_t task, std::string_view id) const;
};

// CRC-32C (Castagnoli), as used by iSCSI, ext4 and Kafka.
uint32_t crc32c(std::string_view data, uint32_t crc = 0);
// The same without the hardware instruction (tests compare the two).
uint32_t crc32c_portable(std::string_view data, uint32_t crc = 0);

// A compact binary encoding of a value that keeps every kind (bytes stay bytes,
// unlike JSON) and the order of object keys.
void encode_value(const Value& v, std::string& out);
Result<Value> decode_value(std::string_view in);

// The full file: header + payload.
std::string encode_checkpoint(const Checkpoint& cp);
// DATA_LOSS (with what is wrong: truncated, checksum, magic) for a damaged file.
Result<Checkpoint> decode_checkpoint(std::string_view bytes);

}  // namespace sluice::host::checkpoint
