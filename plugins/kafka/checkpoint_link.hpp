// What the kafka plugin's nodes of ONE pipeline task tell each other for checkpoints: an
// exactly-once to_kafka sends the input offsets of the task's from_kafka sources inside its
// transaction (rd_kafka_send_offsets_to_transaction needs the consumer's group metadata), and
// those sources then leave the offset commit to the transaction.
//
// A process-wide registry keyed by (pipeline name, task index). Every node of a task runs on
// that task's executor thread, so a sink may call the sources it finds here directly; the
// mutex only guards the map itself (tasks register and unregister concurrently).
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kafka_common.hpp"

namespace sluice::kafka {

/// A from_kafka instance as a transactional sink of its task sees it.
class OffsetSource {
 public:
  virtual ~OffsetSource() = default;
  /// The consumer's group metadata (caller destroys it), or null without a group.
  virtual rd_kafka_consumer_group_metadata_t* group_metadata() = 0;
  /// The positions (next offset per assigned partition) that the checkpoint being taken
  /// holds: what is processed now (sources are paused during an epoch).
  virtual PartitionListPtr positions() = 0;
  /// "node 'ID' (group G)", for messages.
  virtual std::string describe() const = 0;

 protected:
  OffsetSource() = default;
  OffsetSource(const OffsetSource&) = default;
  OffsetSource& operator=(const OffsetSource&) = default;
};

class TaskLink {
 public:
  /// The key of a node's task: its pipeline's name and task index.
  static std::string key(const std::string& pipeline, uint32_t task_index);

  static void add_source(const std::string& key, OffsetSource* source);
  static void remove_source(const std::string& key, OffsetSource* source);
  /// The sources of the task `key` (use on the task's thread only).
  static std::vector<OffsetSource*> sources(const std::string& key);

  /// Registers `sink` as THE exactly-once sink of the task; false when another one is.
  static bool claim_transactions(const std::string& key, const void* sink);
  static void release_transactions(const std::string& key, const void* sink);
  /// True when an exactly-once to_kafka of the task commits the offsets in its transaction.
  static bool transactional(const std::string& key);
};

/// The pipeline name and checkpoint mode from sl_node_init (fields appended in ABI 1.1;
/// absent with an older host).
struct InitCheckpointInfo {
  std::string pipeline;  // empty when the host does not say
  bool known = false;    // the host says whether checkpointing is on
  bool checkpointing = false;
};
InitCheckpointInfo checkpoint_info(const sl_node_init& init);

}  // namespace sluice::kafka
