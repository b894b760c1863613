#include "checkpoint/key_group_index.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>

namespace sluice::host::checkpoint {

namespace {

// The low bits of a claim: when it was made, in ms since the Unix epoch, strictly rising in
// this process. A claim is stored only with its member's next checkpoint, so a member that
// stops right after claiming leaves no trace of it, and the next owner finds the same
// highest stored claim: the time then still puts the later claim above the earlier one
// (given clocks that agree within a session timeout; if they do not, the two claims only
// tie, and either entry restores a consistent state).
uint64_t claim_time_ms() {
  static std::atomic<uint64_t> last{0};
  const auto now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count()) &
                   k_claim_time_mask;
  uint64_t prev = last.load();
  uint64_t next = 0;
  do {
    next = std::max(now, prev + 1) & k_claim_time_mask;
  } while (!last.compare_exchange_weak(prev, next));
  return next;
}

}  // namespace

KeyGroupIndex::KeyGroupIndex(std::unique_ptr<StoreHandle> store) : store_(std::move(store)) {}

Status KeyGroupIndex::refresh() {
  SLUICE_ASSIGN_OR_RETURN(auto listed, store_->list());
  std::set<uint64_t> present;
  for (const EpochEntry& e : listed) {
    present.insert(e.epoch);
    if (auto known = entries_.find(e.epoch); known != entries_.end()) {
      known->second.committed = e.committed;
      continue;
    }
    if (unreadable_.count(e.epoch) != 0) continue;
    auto bytes = store_->read(e.epoch);
    if (!bytes.is_ok()) {
      // Written by another member and removed by it since the list (retention), or a
      // store hiccup: the entry is looked at again next time.
      spdlog::debug("key groups: epoch {} not read: {}", e.epoch, bytes.status().message());
      continue;
    }
    auto cp = decode_checkpoint(bytes.value());
    if (!cp.is_ok()) {
      unreadable_.insert(e.epoch);
      spdlog::warn(
          "key groups: checkpoint epoch {} in store '{}' is unusable ({}); its key "
          "groups are restored from older entries",
          e.epoch, store_->name(), cp.status().message());
      continue;
    }
    Entry entry;
    entry.committed = e.committed;
    entry.member = cp->member;
    for (TaskState& t : cp->tasks) entry.tasks.push_back(std::move(t.claims));
    entries_.emplace(e.epoch, std::move(entry));
  }
  std::erase_if(entries_, [&](const auto& kv) { return present.count(kv.first) == 0; });
  std::erase_if(unreadable_, [&](uint64_t e) { return present.count(e) == 0; });
  return Status::ok();
}

KeyGroupIndex::View KeyGroupIndex::compute() const {
  View v;
  v.highest_claim = handed_out_;
  for (const auto& [epoch, entry] : entries_) {
    for (const Claims& claims : entry.tasks) {
      for (const auto& [source, groups] : claims) {
        for (const auto& [group, claim] : groups) {
          const GroupKey key{source, group};
          uint64_t& high = v.highest_claim[key];
          high = std::max(high, claim);
          if (!entry.committed) continue;
          Holder& h = v.holder[key];
          if (std::tie(claim, epoch) > std::tie(h.claim, h.epoch)) h = Holder{claim, epoch};
        }
      }
    }
  }
  return v;
}

Result<KeyGroupIndex::View> KeyGroupIndex::view() {
  std::lock_guard lock(mutex_);
  SLUICE_RETURN_IF_ERROR(refresh());
  return compute();
}

Result<std::map<uint32_t, KeyGroupDirectory::GroupState>> KeyGroupIndex::claim(
    uint32_t /*task*/, std::string_view source, std::span<const uint32_t> groups,
    std::span<const KeyedNode> keyed) {
  std::lock_guard lock(mutex_);
  SLUICE_RETURN_IF_ERROR(refresh());
  const View v = compute();
  std::map<uint32_t, GroupState> out;
  // Entries to read, each once: epoch -> the groups it holds.
  std::map<uint64_t, std::vector<uint32_t>> wanted;
  for (uint32_t g : groups) {
    const GroupKey key{std::string(source), g};
    GroupState& gs = out[g];
    auto high = v.highest_claim.find(key);
    const uint64_t highest = high == v.highest_claim.end() ? 0 : high->second;
    gs.claim = (((highest >> k_claim_time_bits) + 1) << k_claim_time_bits) | claim_time_ms();
    handed_out_[key] = gs.claim;
    if (auto h = v.holder.find(key); h != v.holder.end()) wanted[h->second.epoch].push_back(g);
  }
  for (const auto& [epoch, held] : wanted) {
    SLUICE_ASSIGN_OR_RETURN(auto bytes, store_->read(epoch));
    SLUICE_ASSIGN_OR_RETURN(Checkpoint cp, decode_checkpoint(bytes.view()));
    for (uint32_t g : held) {
      GroupState& gs = out[g];
      gs.epoch = epoch;
      gs.member = cp.member;
      // The task part that claimed the group in that entry holds its state.
      for (const TaskState& t : cp.tasks) {
        auto s = t.claims.find(std::string(source));
        if (s == t.claims.end() || s->second.count(g) == 0) continue;
        const std::string name = std::to_string(g);
        for (const KeyedNode& k : keyed) {
          for (const NodeState& n : t.nodes) {
            if (n.id != k.id || n.type != k.type) continue;
            auto by_group = n.state.get("groups");
            if (!by_group) continue;
            if (auto state = by_group->get(name)) gs.states.emplace_back(n.id, *state);
          }
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace sluice::host::checkpoint
