// from_kafka / from_kafka_batched and checkpoints (docs/KAFKA.md "Delivery guarantees"): the
// positions of the partitions read are the snapshot, restore seeks to them, the group's offsets
// move only with a stored checkpoint, and recovery asks the group whether an epoch was
// committed. Also the OffsetSource face an exactly-once to_kafka of the same task uses.
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sluice::kafka {

using sdk::Context;
using sdk::Result;
using sdk::Status;
using sdk::Value;
using sdk::ValueRef;

void KafkaSource::note_checkpointing(Context ctx) {
  if (checkpointing_) return;
  if (checkpointing_known_) return;  // the host said no: snapshot comes from `sluiced test`
  // An older host that does not say: the first snapshot/restore tells. Commits made before
  // it (commit_interval_ms) may be ahead of the first checkpoint (see docs/KAFKA.md).
  checkpointing_ = true;
  ctx.timer_cancel(k_commit_timer);
  ctx.log_info("checkpointing: offsets are committed only with stored checkpoints");
}

Result<Value> KafkaSource::snapshot(Context ctx) {
  note_checkpointing(ctx);
  std::vector<Value> items;
  items.reserve(processed_.size() + restored_.size());
  auto add = [&](const TopicPartition& tp, int64_t next) {
    items.push_back(
        Value::array({Value::string(tp.first), Value::integer(tp.second), Value::integer(next)}));
  };
  for (const auto& [tp, next] : processed_) add(tp, next);
  // Restored positions of partitions not assigned yet (metadata or the group's assignment
  // still to come) are carried forward: the operators' state counts everything before them.
  for (const auto& [tp, next] : restored_) add(tp, next);
  snapshot_ = processed_;
  return Value::object({{"group", opts_.group_id ? Value::string(*opts_.group_id) : Value()},
                        {"positions", Value::array(std::span<const Value>(items))}});
}

Result<std::map<KafkaSource::TopicPartition, int64_t>> KafkaSource::parse_positions(
    ValueRef state) {
  std::optional<Value> list = state.is_object() ? state.get("positions") : std::nullopt;
  if (!list || !list->is_array()) {
    return sdk::invalid_argument("from_kafka: checkpoint state has no 'positions' array: " +
                                 state.to_json());
  }
  std::map<TopicPartition, int64_t> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Value item = (*list)[i];
    if (!item.is_array() || item.size() != 3 || !item[0].is_string() || !item[1].is_int() ||
        !item[2].is_int() || item[2].as_int() < 0) {
      return sdk::invalid_argument(
          "from_kafka: checkpoint position is not [topic, partition, offset]: " + item.to_json());
    }
    out[{std::string(item[0].as_str()), static_cast<int32_t>(item[1].as_int())}] = item[2].as_int();
  }
  return out;
}

Status KafkaSource::restore(Context ctx, ValueRef state) {
  note_checkpointing(ctx);
  SLUICE_SDK_ASSIGN_OR_RETURN(restored_, parse_positions(state));
  std::optional<Value> group = state.get("group");
  const std::string saved = group && group->is_string() ? std::string(group->as_str()) : "";
  if (saved != opts_.group_id.value_or("")) {
    ctx.log_warn("the checkpoint was taken with group_id '" + saved + "', now '" +
                 opts_.group_id.value_or("") + "': its positions are used all the same");
  }
  std::string text;
  for (const auto& [tp, next] : restored_) {
    text +=
        (text.empty() ? "" : ", ") + tp_name(tp.first, tp.second) + " at " + std::to_string(next);
  }
  ctx.log_info("restored positions: " + (text.empty() ? std::string("(none)") : text));
  return {};
}

Status KafkaSource::checkpoint_commit(Context ctx, uint64_t epoch) {
  note_checkpointing(ctx);
  // With an exactly-once to_kafka in the task, its transaction (committed just before, sinks
  // first) already holds these offsets: committing them again changes nothing on a real
  // cluster, and moves them where the broker ignores transactional offsets (librdkafka's
  // mock), so that checkpoint_recover sees them.
  if (!group_mode()) return {};
  const Status st = commit_positions(snapshot_, false, nullptr);
  if (!st.is_ok()) {
    // The checkpoint is stored: a restart seeks to its positions whatever the group says;
    // only the next owner after a rebalance may re-read more (at-least-once). Try again with
    // the next epoch.
    ctx.log_warn("checkpoint " + std::to_string(epoch) +
                 ": offsets not committed to the group (retried with the next): " + st.message());
  }
  return {};
}

Result<bool> KafkaSource::checkpoint_recover(Context ctx, uint64_t epoch, ValueRef state) {
  if (!group_mode()) return true;  // nothing is committed without a group
  SLUICE_SDK_ASSIGN_OR_RETURN(auto positions, parse_positions(state));
  if (positions.empty()) return true;
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(positions.size())));
  for (const auto& [tp, next] : positions) {
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second);
  }
  const rd_kafka_resp_err_t e = rd_kafka_committed(
      rk(), list.get(), static_cast<int>(std::max<int64_t>(opts_.close_timeout.count(), 1)));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return unavailable("from_kafka: cannot read group '" + *opts_.group_id +
                       "''s committed offsets to decide whether checkpoint " +
                       std::to_string(epoch) + " was committed: " + rd_kafka_err2str(e));
  }
  bool committed = true;
  std::string diff;
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& p = list->elems[i];
    if (p.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return unavailable("from_kafka: cannot read the committed offset of " +
                         tp_name(p.topic, p.partition) + ": " + rd_kafka_err2str(p.err));
    }
    const int64_t want = positions[{p.topic, p.partition}];
    if (p.offset != want) {
      committed = false;
      diff += (diff.empty() ? "" : ", ") + tp_name(p.topic, p.partition) + " committed " +
              std::to_string(p.offset) + " vs " + std::to_string(want);
    }
  }
  ctx.log_info("checkpoint " + std::to_string(epoch) + " was " +
               (committed ? "committed (group offsets equal its positions)"
                          : "not committed (" + diff + ")"));
  return committed;
}

rd_kafka_consumer_group_metadata_t* KafkaSource::group_metadata() {
  if (!group_mode() || !shared_->handle) return nullptr;
  return rd_kafka_consumer_group_metadata(rk());
}

PartitionListPtr KafkaSource::positions() {
  PartitionListPtr list(rd_kafka_topic_partition_list_new(static_cast<int>(processed_.size())));
  for (const auto& [tp, next] : processed_) {
    if (assigned_.count(tp) == 0) continue;
    rd_kafka_topic_partition_list_add(list.get(), tp.first.c_str(), tp.second)->offset = next;
  }
  return list;
}

std::string KafkaSource::describe() const {
  return "node '" + std::string(ctx_.node_id()) + "'" +
         (opts_.group_id ? " (group '" + *opts_.group_id + "')" : "");
}

}  // namespace sluice::kafka
