// The checkpoint module's KeyGroupDirectory (executor/key_group_directory.hpp): which stored
// checkpoint entry holds the newest state of each key group, across the daemons (members)
// and tasks that share one store (docs/SCALING.md, "State that follows its partition").
//
// Every entry's claims (task part -> grouped source -> key group -> claim number) are read
// once and kept; the store is listed again at each question, so entries other members
// wrote meanwhile are seen. A group's state comes from the committed entry holding it with
// the highest claim, then the newest epoch. A new claim is above every claim stored or
// handed out in this process, and above an unstored claim made earlier elsewhere (its low
// bits are the time), so a member that lost a group (a zombie) never wins it back with the
// checkpoints it writes late.
//
// Threading: every public call takes the index's lock; task threads (claim) and the
// control thread (the coordinator's fencing and retention) share it. The index has a store
// handle of its own.
#pragma once

#include "checkpoint/format.hpp"
#include "checkpoint/store.hpp"
#include "common/result.hpp"
#include "executor/key_group_directory.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host::checkpoint {

// A claim number is (generation << k_claim_time_bits) | (ms when claimed): the generation is
// one above the highest claim seen, the time orders two claims of one generation (see
// key_group_index.cc, claim_time_ms).
inline constexpr int k_claim_time_bits = 40;
inline constexpr uint64_t k_claim_time_mask = (uint64_t{1} << k_claim_time_bits) - 1;
// The generation part of a claim, as logs and `sluiced checkpoints` show it.
inline constexpr uint64_t claim_generation(uint64_t claim) { return claim >> k_claim_time_bits; }

class KeyGroupIndex final : public KeyGroupDirectory {
 public:
  explicit KeyGroupIndex(std::unique_ptr<StoreHandle> store);

  Result<std::map<uint32_t, GroupState>> claim(uint32_t task, std::string_view source,
                                               std::span<const uint32_t> groups,
                                               std::span<const KeyedNode> keyed) override;

  using GroupKey = std::pair<std::string, uint32_t>;  // grouped source id, key group
  struct Holder {
    uint64_t claim = 0;
    uint64_t epoch = 0;
  };
  struct View {
    // The highest claim on each group: stored anywhere (committed or not) or handed out here.
    std::map<GroupKey, uint64_t> highest_claim;
    // The committed entry each group is restored from.
    std::map<GroupKey, Holder> holder;
  };
  // Lists the store again and answers from everything stored now.
  Result<View> view();

 private:
  struct Entry {
    bool committed = false;
    std::string member;
    std::vector<Claims> tasks;  // index = task index
  };
  // Lists the store, reads the entries not seen yet, forgets removed ones. Lock held.
  Status refresh();
  View compute() const;  // lock held

  std::mutex mutex_;
  std::unique_ptr<StoreHandle> store_;
  std::map<uint64_t, Entry> entries_;
  std::set<uint64_t> unreadable_;  // entries that do not decode (warned once)
  std::map<GroupKey, uint64_t> handed_out_;
};

}  // namespace sluice::host::checkpoint
