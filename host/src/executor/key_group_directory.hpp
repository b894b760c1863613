// Where a task finds the state of the key groups a partitioned source was just assigned
// (docs/SCALING.md, "State that follows its partition"): the newest committed checkpoint
// entry that holds each group, whichever daemon or task wrote it. The checkpoint module
// implements it over the shared store (checkpoint/key_group_index.hpp); the executor knows
// only this interface, so it never depends on the checkpoint module.
#pragma once

#include "common/result.hpp"
#include "executor/epoch_participant.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace sluice::host {

class KeyGroupDirectory {
 public:
  struct GroupState {
    uint64_t claim = 0;  // the caller's claim on the group: above every claim stored or given
    uint64_t epoch = 0;  // the checkpoint the state comes from; 0 when none holds the group
    std::string member;  // who wrote that checkpoint ("" for a pipeline run alone)
    EpochParticipant::NodeStates states;  // keyed node id -> the group's state there
  };
  // A keyed node that takes part: its id and type (a saved state of another type is not
  // handed to it).
  struct KeyedNode {
    std::string_view id;
    std::string_view type;
  };

  // Thread-safe (any task thread). Source `source` of task `task` was assigned `groups`:
  // claims them and returns, per group, the newest committed state of each node of `keyed`.
  virtual Result<std::map<uint32_t, GroupState>> claim(uint32_t task, std::string_view source,
                                                       std::span<const uint32_t> groups,
                                                       std::span<const KeyedNode> keyed) = 0;

 protected:
  KeyGroupDirectory() = default;
  ~KeyGroupDirectory() = default;  // not owned through this interface
  KeyGroupDirectory(const KeyGroupDirectory&) = default;
  KeyGroupDirectory& operator=(const KeyGroupDirectory&) = default;
};

}  // namespace sluice::host
