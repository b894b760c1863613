// Keyed operators of the core_ops plugin: key_by sets each message's key, aggregate keeps a
// running reduction per key, its state kept and checkpointed per key group
// (sl_message.key_group, ABI 1.3), so that a group's state can move with its partition
// (docs/SCALING.md).
#pragma once

#include <sluice/sluice.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "keyed_state.hpp"

namespace sluice::core_ops {

/// `key_by`: each message's key replaced by function(value); everything else kept.
class KeyBy final : public sdk::Operator {
 public:
  static constexpr const char* k_name = "key_by";
  static constexpr const char* k_doc =
      "Sets each message's key to function(x) of its value x, computed as map computes a "
      "value (`function` with `args`, or `lua`), and passes the value, headers, event time "
      "and key group on unchanged. aggregate keeps its state per key; to_kafka writes the key "
      "as the record key. key_by only sets the key, not the partition: aggregate keeps a "
      "key's state in the key group of the partition its records come from, so each key has "
      "one state only when the input is already partitioned by that key (docs/SCALING.md). "
      "With `repartition_topic` the host moves every key to one partition: it adds a to_kafka "
      "sink \"ID.repartition\" writing the keyed messages to that topic and a from_kafka "
      "source \"ID.repartitioned\" reading them back, whose output the nodes reading key_by "
      "then read (docs/SCALING.md, \"The repartition topic\").";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION,
                    "The function giving a message's key from its value, e.g. function = "
                    "\"get\", args = { path = \"user\" }, or lua = \"x.user\".")
          .one_of("map|predicate"),
      sdk::param("repartition_topic", SL_PARAM_STRING, nullptr,
                 "A Kafka topic (create it first; its partition count is the keyed "
                 "parallelism) through which the keyed messages go: written by the murmur2 of "
                 "the key, as Java producers do, and read back, so that every key is in one "
                 "partition and so has one owner. The upstream from_kafka sources get "
                 "origin_header = true and the reading source dedup_origin = true, so that "
                 "records replayed upstream after a crash are not applied twice. Absent: key_by "
                 "only sets the key.")
          .non_empty(),
      sdk::param("brokers", SL_PARAM_STRING, nullptr,
                 "With repartition_topic: the brokers of that topic. Absent: those of the "
                 "from_kafka sources upstream (an error when there is none)."),
      sdk::param("repartition_group_id", SL_PARAM_STRING, nullptr,
                 "With repartition_topic: the consumer group that reads it back. Absent: "
                 "\"<group_id>.<ID>\", the upstream from_kafka's group_id and this node's id "
                 "(\"<pipeline name>.<ID>\" when the upstream has no group).")
          .non_empty(),
      sdk::param("repartition_config", SL_PARAM_TABLE, nullptr,
                 "With repartition_topic: librdkafka properties of the sink and the source it "
                 "adds. Absent: the source gets the upstream from_kafka's `config`, the sink "
                 "its connection settings (security.protocol, sasl.*, ssl.*, client.id)."),
  };

  KeyBy(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  /// Operator chaining (sl_node_type.map_keys, ABI 1.3): the keys process gives.
  sdk::Status map_keys(sdk::Context ctx, std::span<const sl_value> in, std::span<sdk::Value> out);

 private:
  sdk::Function fn_;
  std::vector<sl_value> in_;  // per-batch scratch, reused
  std::vector<sdk::Value> keys_;
  std::vector<sl_message> messages_;
};

/// `aggregate`: state[key] = function(state[key], x) per message key, per key group.
class Aggregate final : public sdk::Operator {
 public:
  static constexpr uint32_t k_flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
  static constexpr const char* k_name = "aggregate";
  static constexpr const char* k_doc =
      "A running reduction per message key (a KTable's changelog, as in Kafka Streams): for "
      "each message, state[key] = function(state[key], x) and the new state goes out as the "
      "value, with the message's key, headers, event time and key group. `function` is a "
      "reducer (count, sum, min, max, collect_list, any reducer function, or lua = \"acc + "
      "x\"). A key's first message starts from `start`; without `start` it becomes the "
      "key's state and goes out unchanged, as in accumulate (so count needs start = 0). Keys "
      "compare as the host compares values (1 equals 1.0; bytes and strings differ). A "
      "message without a key (null) is an error of that message, handled by the node's "
      "on_error (put key_by before aggregate). With `ttl_ms`, the state of a key that got no "
      "message for ttl_ms is dropped, and its next message starts again from `start`. "
      "State: per key group (the input partition, sl_message.key_group; group 0 for input "
      "from an unpartitioned source), the keys and their states; a keyed node type, so one "
      "group's state moves with its partition when a grouped from_kafka upstream is assigned "
      "or revoked it (docs/SCALING.md). A key that arrives in two groups (input not "
      "partitioned by that key) has a state in each.";
  static constexpr std::array k_params{
      sdk::required("function", SL_PARAM_FUNCTION,
                    R"(The reducer, called (state, x), e.g. "count", "sum" or lua = "acc + x".)"),
      sdk::param("start", SL_PARAM_ANY, nullptr,
                 "Each key's initial state; absent: a key's first element becomes its state."),
      sdk::param("ttl_ms", SL_PARAM_DURATION, nullptr,
                 "Drop the state of a key that got no message for this long; absent: keep "
                 "every key.")
          .min(1),
  };

  Aggregate(sdk::Context ctx, const sdk::Config& cfg);
  sdk::Status start(sdk::Context ctx) override;
  sdk::Status process(sdk::Context ctx, uint32_t input, sdk::Batch batch) override;
  sdk::Status on_timer(sdk::Context ctx, uint64_t timer_id) override;
  sdk::Result<sdk::Value> snapshot(sdk::Context ctx) override;
  sdk::Status restore(sdk::Context ctx, sdk::ValueRef state) override;
  /// Key group `group` came to this task (SL_NODE_KEYED_STATE): its keys replaced by
  /// `state` (one entry of the snapshot's "groups"), none when null.
  sdk::Status restore_group(sdk::Context ctx, uint32_t group, sdk::ValueRef state) override;
  /// Key group `group` moved away: its keys forgotten.
  sdk::Status drop_group(sdk::Context ctx, uint32_t group) override;

 private:
  /// One key's state: its accumulated value and when it last got a message (task clock).
  struct Entry {
    sdk::Value acc;
    int64_t seen_ns = 0;
  };
  using Group = sdk::ValueMap<Entry>;
  /// The group of `key_group`, created when new (the last one is cached: a batch from a
  /// partitioned source is usually one partition).
  Group& group(uint64_t key_group);
  /// One group's table of a snapshot ({keys, states[, seen_ns]}); throws on a bad one.
  Group parse_group(std::string_view name, sdk::ValueRef table, int64_t now_ns) const;
  /// Drops the keys idle for ttl_ms at `now_ns`; re-arms the sweep while keys remain.
  sdk::Status sweep(sdk::Context ctx, int64_t now_ns);

  Reducer reducer_;
  int64_t ttl_ns_ = 0;  // 0: no ttl
  bool sweep_armed_ = false;
  std::unordered_map<uint64_t, Group> groups_;
  uint64_t last_group_id_ = 0;
  Group* last_group_ = nullptr;
  std::vector<sdk::Value> out_;  // boxed states emitted in this batch (kept alive)
  std::vector<sl_message> messages_;
};

}  // namespace sluice::core_ops
