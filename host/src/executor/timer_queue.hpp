// Timers of all nodes of one task, ordered by deadline. Re-arming or
// cancelling bumps a generation so stale heap entries are skipped lazily.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

namespace sluice::host {

class TimerQueue {
 public:
  struct Due {
    size_t node;
    uint64_t timer_id;
  };

  void arm(size_t node, uint64_t timer_id, int64_t deadline) {
    uint64_t gen = ++generation_[{node, timer_id}];
    heap_.push({deadline, seq_++, node, timer_id, gen});
  }
  void cancel(size_t node, uint64_t timer_id) {
    auto it = generation_.find({node, timer_id});
    if (it != generation_.end()) ++it->second;
  }
  void cancel_node(size_t node) {
    for (auto& [key, gen] : generation_) {
      if (key.first == node) ++gen;
    }
  }
  // Earliest live deadline, if any.
  std::optional<int64_t> next_deadline() {
    drop_stale();
    if (heap_.empty()) return std::nullopt;
    return heap_.top().deadline;
  }
  // Removes and returns the earliest live timer due at `now` (ties in arming order).
  std::optional<Due> pop_due(int64_t now) {
    drop_stale();
    if (heap_.empty() || heap_.top().deadline > now) return std::nullopt;
    Entry e = heap_.top();
    heap_.pop();
    ++generation_[{e.node, e.timer_id}];  // fired: no longer armed
    return Due{e.node, e.timer_id};
  }

 private:
  struct Entry {
    int64_t deadline;
    uint64_t seq;
    size_t node;
    uint64_t timer_id;
    uint64_t generation;
    bool operator>(const Entry& o) const {
      return deadline != o.deadline ? deadline > o.deadline : seq > o.seq;
    }
  };
  void drop_stale() {
    while (!heap_.empty()) {
      const Entry& e = heap_.top();
      auto it = generation_.find({e.node, e.timer_id});
      if (it != generation_.end() && it->second == e.generation) return;
      heap_.pop();
    }
  }

  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::map<std::pair<size_t, uint64_t>, uint64_t> generation_;
  uint64_t seq_ = 0;
};

}  // namespace sluice::host
