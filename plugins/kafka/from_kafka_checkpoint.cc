// from_kafka / from_kafka_batched and checkpoints (docs/KAFKA.md "Delivery guarantees"): the
// positions of the partitions read are the snapshot, restore seeks to them, the group's offsets
// move only with a stored checkpoint, and recovery asks the group whether an epoch was
// committed. Also the OffsetSource face an exactly-once to_kafka of the same task uses.
#include "from_kafka.hpp"

#include <sluice/sluice.hpp>

#include <librdkafka/rdkafka.h>

#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
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

namespace {

/// [[topic, partition, offset], ...]
Value triples(const std::map<std::pair<std::string, int32_t>, int64_t>& items) {
  std::vector<Value> out;
  out.reserve(items.size());
  for (const auto& [tp, offset] : items) {
    out.push_back(
        Value::array({Value::string(tp.first), Value::integer(tp.second), Value::integer(offset)}));
  }
  return Value::array(std::span<const Value>(out));
}

/// [[topic, partition, offset], ...] into `out`; `what` names the list in errors.
Status parse_triples(ValueRef list, const char* what,
                     std::map<std::pair<std::string, int32_t>, int64_t>& out) {
  for (size_t i = 0; i < list.size(); ++i) {
    const Value item = list[i];
    if (!item.is_array() || item.size() != 3 || !item[0].is_string() || !item[1].is_int() ||
        item[1].as_int() < 0 || item[1].as_int() > INT32_MAX || !item[2].is_int() ||
        item[2].as_int() < 0) {
      return sdk::invalid_argument(std::string("from_kafka: checkpoint ") + what +
                                   " is not [topic, partition, offset]: " + item.to_json());
    }
    out[{std::string(item[0].as_str()), static_cast<int32_t>(item[1].as_int())}] = item[2].as_int();
  }
  return {};
}

std::string describe_positions(const std::map<std::pair<std::string, int32_t>, int64_t>& list) {
  std::string text;
  for (const auto& [tp, next] : list) {
    text +=
        (text.empty() ? "" : ", ") + tp_name(tp.first, tp.second) + " at " + std::to_string(next);
  }
  return text.empty() ? std::string("(none)") : text;
}

}  // namespace

Result<Value> KafkaSource::snapshot(Context ctx) {
  note_checkpointing(ctx);
  // {"group": ..., "groups": {"<g>": {"positions": [...][, "origins": [...]]}}}: one entry
  // per key group (partition + 1) the node holds, so that the host can move each alone.
  // Every group of an assigned partition has an entry, even with no position yet: the
  // checkpoint then says that this task owned it.
  std::map<uint32_t, ParsedState> groups;
  for (const TopicPartition& tp : assigned_) groups[group_of(tp.second)];
  for (const auto& [tp, next] : processed_) groups[group_of(tp.second)].positions[tp] = next;
  // Restored positions of partitions not assigned yet (metadata or the group's assignment
  // still to come) are carried forward: the operators' state counts everything before them.
  for (const auto& [tp, next] : restored_) {
    groups[group_of(tp.second)].positions.try_emplace(tp, next);
  }
  for (const auto& [g, maxima] : origins_) groups[g].origins[g] = maxima;
  std::vector<std::string> names;
  std::vector<Value> tables;
  names.reserve(groups.size());
  tables.reserve(groups.size());
  for (const auto& [g, parsed] : groups) {
    names.push_back(std::to_string(g));
    if (auto o = parsed.origins.find(g); o != parsed.origins.end()) {
      tables.push_back(Value::object(
          {{"positions", triples(parsed.positions)}, {"origins", triples(o->second)}}));
    } else {
      tables.push_back(Value::object({{"positions", triples(parsed.positions)}}));
    }
  }
  std::vector<std::pair<std::string_view, Value>> entries;
  entries.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) entries.emplace_back(names[i], tables[i]);
  snapshot_ = processed_;
  return Value::object({{"group", opts_.group_id ? Value::string(*opts_.group_id) : Value()},
                        {"groups", Value::object(entries)}});
}

Status KafkaSource::parse_group(ValueRef table, uint32_t group, ParsedState& out) {
  const std::string name = "group " + std::to_string(group);
  std::optional<Value> list = table.is_object() ? table.get("positions") : std::nullopt;
  if (!list || !list->is_array()) {
    return sdk::invalid_argument("from_kafka: checkpoint state of key " + name +
                                 " has no 'positions' array: " + table.to_json());
  }
  Positions positions;
  SLUICE_SDK_RETURN_IF_ERROR(parse_triples(*list, "position", positions));
  for (const auto& [tp, next] : positions) {
    if (group_of(tp.second) != group) {
      return sdk::invalid_argument("from_kafka: checkpoint state of key " + name +
                                   " holds a position of " + tp_name(tp.first, tp.second) +
                                   ", which is in key group " +
                                   std::to_string(group_of(tp.second)));
    }
    out.positions[tp] = next;
  }
  if (std::optional<Value> origins = table.get("origins")) {
    if (!origins->is_array()) {
      return sdk::invalid_argument("from_kafka: checkpoint state of key " + name +
                                   " has an 'origins' that is not an array: " + table.to_json());
    }
    Positions& maxima = out.origins[group];
    SLUICE_SDK_RETURN_IF_ERROR(parse_triples(*origins, "origin", maxima));
  }
  return {};
}

Result<KafkaSource::ParsedState> KafkaSource::parse_state(ValueRef state) {
  ParsedState out;
  std::optional<Value> groups = state.is_object() ? state.get("groups") : std::nullopt;
  if (!groups) {
    // Written before key groups: {"positions": [...]}.
    std::optional<Value> list = state.is_object() ? state.get("positions") : std::nullopt;
    if (!list || !list->is_array()) {
      return sdk::invalid_argument(
          "from_kafka: checkpoint state has neither a 'groups' object nor a 'positions' array: " +
          state.to_json());
    }
    SLUICE_SDK_RETURN_IF_ERROR(parse_triples(*list, "position", out.positions));
    return out;
  }
  if (!groups->is_object()) {
    return sdk::invalid_argument("from_kafka: checkpoint state's 'groups' is not an object: " +
                                 state.to_json());
  }
  for (size_t i = 0; i < groups->size(); ++i) {
    const std::string_view name = groups->key_at(i);
    uint64_t g = 0;
    const bool digits = !name.empty() && name.size() <= 10 &&
                        name.find_first_not_of("0123456789") == std::string_view::npos;
    for (char c : digits ? name : std::string_view()) g = g * 10 + static_cast<uint64_t>(c - '0');
    if (g == 0 || g > UINT32_MAX) {
      return sdk::invalid_argument(
          "from_kafka: checkpoint state has a key group that is not a "
          "number from 1 (\"" +
          std::string(name) + "\")");
    }
    SLUICE_SDK_RETURN_IF_ERROR(parse_group((*groups)[i], static_cast<uint32_t>(g), out));
  }
  return out;
}

Status KafkaSource::restore(Context ctx, ValueRef state) {
  note_checkpointing(ctx);
  SLUICE_SDK_ASSIGN_OR_RETURN(ParsedState parsed, parse_state(state));
  restored_ = std::move(parsed.positions);
  origins_ = std::move(parsed.origins);
  std::optional<Value> group = state.get("group");
  const std::string saved = group && group->is_string() ? std::string(group->as_str()) : "";
  if (saved != opts_.group_id.value_or("")) {
    ctx.log_warn("the checkpoint was taken with group_id '" + saved + "', now '" +
                 opts_.group_id.value_or("") + "': its positions are used all the same");
  }
  ctx.log_info("restored positions: " + describe_positions(restored_));
  return {};
}

void KafkaSource::forget_group(uint32_t group) {
  // Only partitions not assigned now: an assigned partition's position is the consumer's
  // (the host moves a group only when no assigned partition has it).
  auto erase = [&](std::map<TopicPartition, int64_t>& m) {
    for (auto it = m.begin(); it != m.end();) {
      if (group_of(it->first.second) == group && assigned_.count(it->first) == 0) {
        it = m.erase(it);
      } else {
        ++it;
      }
    }
  };
  erase(restored_);
  erase(processed_);
  erase(committed_);
  erase(snapshot_);
  origins_.erase(group);
}

Status KafkaSource::restore_group(Context ctx, uint32_t group, ValueRef state) {
  // Called re-entrantly from on_rebalance's key_groups_assigned (see there): it changes only
  // restored_, processed_, committed_, snapshot_ and origins_, of which on_rebalance holds
  // nothing across the call.
  note_checkpointing(ctx);
  ParsedState parsed;
  if (!state.is_null()) SLUICE_SDK_RETURN_IF_ERROR(parse_group(state, group, parsed));
  forget_group(group);
  for (const auto& [tp, next] : parsed.positions) {
    if (assigned_.count(tp) != 0) {
      ctx.log_warn("key group " + std::to_string(group) + " restored while " +
                   tp_name(tp.first, tp.second) + " is assigned: its position stays");
      continue;
    }
    restored_[tp] = next;
  }
  if (auto o = parsed.origins.find(group); o != parsed.origins.end()) {
    origins_[group] = std::move(o->second);
  }
  ctx.log_info("key group " + std::to_string(group) + " restored: " +
               (state.is_null() ? std::string("no checkpoint holds it")
                                : describe_positions(parsed.positions)));
  return {};
}

Status KafkaSource::drop_group(Context /*ctx*/, uint32_t group) {
  forget_group(group);
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
  SLUICE_SDK_ASSIGN_OR_RETURN(ParsedState parsed, parse_state(state));
  Positions& positions = parsed.positions;
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
