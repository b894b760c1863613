// Key groups that move with their partitions (docs/SCALING.md), through the real host
// parts on a virtual clock: a keyed test source that is told which key groups it owns
// (as from_kafka is by its consumer group) and a keyed per-group counter. Two or three
// "members" (coordinators with member names) share one fs store directory: a group
// assigned to another member comes back with the state and position of the newest
// checkpoint that holds it; a member that lost a group without noticing (a zombie) has it
// left out of what it writes once the new owner checkpointed it, so it never wins; and
// retention keeps an old entry while it is still where a group is restored from.
#include "checkpoint/coordinator.hpp"
#include "checkpoint/store.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "support/in_process_plugin.hpp"

#include <unistd.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace sluice::host::checkpoint {
namespace {

namespace fs = std::filesystem;

const sl_host_api* api() { return host_api_table(); }

using Groups = std::map<uint32_t, int64_t>;

// {"groups": {"<g>": n, ...}}
sl_value groups_value(const Groups& groups) {
  std::vector<std::pair<std::string, Value>> entries;
  for (const auto& [g, n] : groups) entries.emplace_back(std::to_string(g), Value::integer(n));
  const std::vector<std::pair<std::string, Value>> top{{"groups", Value::object(entries)}};
  return Value::object(top).release();
}
Groups groups_of(sl_value state) {
  Groups out;
  const Value v = Value::borrow(state);
  auto groups = v.get("groups");
  for (size_t i = 0; groups && i < groups->size(); ++i) {
    out[static_cast<uint32_t>(std::stoul(std::string(groups->key_at(i))))] = groups->at(i).as_int();
  }
  return out;
}

// parted: a keyed source. The test sets `assign` / `revoke`; the next poll tells the host.
// Each poll emits one message of value 1 per owned group; a group's position is how many
// it emitted.
struct Parted {
  Groups next;
  std::vector<uint32_t> assign, revoke;
};
std::vector<Parted*> g_sources;
sl_status parted_create(const sl_node_init*, void** self) {
  g_sources.push_back(new Parted{});
  *self = g_sources.back();
  return SL_OK;
}
void parted_destroy(void* self) {
  std::erase(g_sources, static_cast<Parted*>(self));
  delete static_cast<Parted*>(self);
}
sl_status parted_poll(void* self, sl_context* ctx, uint32_t, int32_t* state) {
  auto* s = static_cast<Parted*>(self);
  if (!s->revoke.empty()) {
    for (uint32_t g : s->revoke) s->next.erase(g);
    sl_status st = api()->key_groups_revoked(ctx, s->revoke.data(), s->revoke.size());
    s->revoke.clear();
    if (st != SL_OK) return st;
  }
  if (!s->assign.empty()) {
    std::vector<uint32_t> groups = std::move(s->assign);
    s->assign.clear();
    sl_status st = api()->key_groups_assigned(ctx, groups.data(), groups.size());
    if (st != SL_OK) return st;
    for (uint32_t g : groups) s->next.try_emplace(g, 0);  // restore_group set the others
  }
  std::vector<sl_message> out;
  for (auto& [g, n] : s->next) {
    sl_message m{};
    m.value = sl_int(1);
    m.timestamp_ns = SL_NO_TIMESTAMP;
    m.key_group = g;
    out.push_back(m);
    ++n;
  }
  *state = SL_SOURCE_IDLE;
  api()->timer_start(ctx, 1, 1'000'000);
  return api()->emit(ctx, out.data(), out.size());
}
sl_status parted_snapshot(void* self, sl_context*, sl_value* out) {
  *out = groups_value(static_cast<Parted*>(self)->next);
  return SL_OK;
}
sl_status parted_restore(void* self, sl_context*, sl_value state) {
  static_cast<Parted*>(self)->next = groups_of(state);
  return SL_OK;
}
sl_status parted_restore_group(void* self, sl_context*, uint32_t group, sl_value state) {
  auto* s = static_cast<Parted*>(self);
  if (state.kind == SL_KIND_NULL) {
    s->next.erase(group);
  } else {
    s->next[group] = state.as.i;
  }
  return SL_OK;
}
sl_status parted_drop_group(void* self, sl_context*, uint32_t group) {
  static_cast<Parted*>(self)->next.erase(group);
  return SL_OK;
}

// counter: a keyed operator, the sum of values per key group.
std::vector<Groups*> g_counters;
sl_status counter_create(const sl_node_init*, void** self) {
  g_counters.push_back(new Groups{});
  *self = g_counters.back();
  return SL_OK;
}
void counter_destroy(void* self) {
  std::erase(g_counters, static_cast<Groups*>(self));
  delete static_cast<Groups*>(self);
}
sl_status counter_process(void* self, sl_context*, uint32_t, const sl_batch* batch) {
  auto* sums = static_cast<Groups*>(self);
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    (*sums)[static_cast<uint32_t>(m->key_group)] += m->value.as.i;
  }
  return SL_OK;
}
sl_status counter_snapshot(void* self, sl_context*, sl_value* out) {
  *out = groups_value(*static_cast<Groups*>(self));
  return SL_OK;
}
sl_status counter_restore(void* self, sl_context*, sl_value state) {
  *static_cast<Groups*>(self) = groups_of(state);
  return SL_OK;
}
sl_status counter_restore_group(void* self, sl_context*, uint32_t group, sl_value state) {
  auto* sums = static_cast<Groups*>(self);
  if (state.kind == SL_KIND_NULL) {
    sums->erase(group);
  } else {
    (*sums)[group] = state.as.i;
  }
  return SL_OK;
}
sl_status counter_drop_group(void* self, sl_context*, uint32_t group) {
  static_cast<Groups*>(self)->erase(group);
  return SL_OK;
}

class KeyGroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sluice-keygroups-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    static sl_node_type parted = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SOURCE, "parted");
      t.flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
      t.create = parted_create;
      t.destroy = parted_destroy;
      t.poll = parted_poll;
      t.snapshot = parted_snapshot;
      t.restore = parted_restore;
      t.restore_group = parted_restore_group;
      t.drop_group = parted_drop_group;
      return t;
    }();
    static sl_node_type counter = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_OPERATOR, "group_counter");
      t.flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
      t.create = counter_create;
      t.destroy = counter_destroy;
      t.process = counter_process;
      t.snapshot = counter_snapshot;
      t.restore = counter_restore;
      t.restore_group = counter_restore_group;
      t.drop_group = counter_drop_group;
      return t;
    }();
    static const sl_node_type* types[] = {&parted, &counter};
    static sl_plugin plugin = test_support::in_process_plugin("key_group_test_nodes", types);
    ASSERT_TRUE(register_builtin_stores(registry_).is_ok());
    ASSERT_TRUE(registry_.add_plugin(&plugin, "<test>", nullptr).is_ok());
    auto doc = parse_config_string(
        "name = \"kg\"\n[checkpoint]\ninterval_ms = 3600000\nkeep = 1\ndir = \"" + dir_.string() +
            "\"\n[sources.src]\ntype = \"parted\"\n[operators.count]\ntype = "
            "\"group_counter\"\ninputs = [\"src\"]\n",
        "kg.toml");
    ASSERT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, registry_);
    for (const auto& d : spec.diagnostics) {
      if (d.severity == Severity::error) ADD_FAILURE() << d.to_string();
    }
    spec_ = std::move(*spec.value);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One member: its coordinator, its task, its control loop; the task's source and counter.
  struct Member {
    boost::asio::io_context control;  // first: destroyed last (the coordinator's timer)
    std::unique_ptr<Coordinator> coordinator;
    std::unique_ptr<Task> task;
    Parted* source = nullptr;
    Groups* counts = nullptr;
  };
  std::unique_ptr<Member> start(const std::string& name) {
    auto m = std::make_unique<Member>();
    auto store = open_store(spec_);
    EXPECT_TRUE(store.is_ok()) << store.status().message();
    m->coordinator =
        std::make_unique<Coordinator>(spec_, std::move(store).value(), ResetState{}, name);
    Status loaded = m->coordinator->load();
    EXPECT_TRUE(loaded.is_ok()) << loaded.message();
    m->task = std::make_unique<Task>(spec_, TaskOptions{8, 0, 1, &clock_});
    EXPECT_TRUE(m->task->create().is_ok());
    m->source = g_sources.back();
    m->counts = g_counters.back();
    m->task->set_key_group_directory(m->coordinator->key_groups());
    EXPECT_TRUE(m->coordinator->restore_task(m->task.get(), 0).is_ok());
    EXPECT_TRUE(m->task->start().is_ok());
    m->coordinator->attach(m->control, {m->task.get()});
    return m;
  }
  void settle(Member& m) {
    for (int i = 0; i < 100; ++i) {
      Status st = m.task->run_until_idle();
      ASSERT_TRUE(st.is_ok()) << st.message();
      m.control.restart();
      if (m.control.poll() == 0) return;
    }
    FAIL() << "did not settle";
  }
  // `polls` more polls of the member's source (one message per owned group each).
  void run(Member& m, int polls) {
    for (int i = 0; i < polls; ++i) {
      ASSERT_TRUE(m.task->advance_to(clock_, clock_.monotonic_ns() + 1'000'000).is_ok());
      settle(m);
    }
  }
  void checkpoint(Member& m) {
    m.coordinator->trigger();
    settle(m);
    ASSERT_FALSE(m.coordinator->epoch_running());
  }
  std::vector<EpochEntry> stored() {
    auto store = open_store(spec_);
    auto list = store.value()->list();
    EXPECT_TRUE(list.is_ok());
    return list.value();
  }
  Checkpoint read(uint64_t epoch) {
    auto store = open_store(spec_);
    auto bytes = store.value()->read(epoch);
    EXPECT_TRUE(bytes.is_ok());
    return decode_checkpoint(bytes.value()).value();
  }

  PluginRegistry registry_;
  VirtualClock clock_{1'000'000'000};
  fs::path dir_;
  GraphSpec spec_;
};

TEST_F(KeyGroupsTest, AGroupMovesWithItsStateAndPositionAndAZombieNeverWinsItBack) {
  auto a = start("a");
  a->source->assign = {1, 2};
  run(*a, 1);
  run(*a, 9);
  EXPECT_EQ(*a->counts, (Groups{{1, 10}, {2, 10}}));
  checkpoint(*a);  // a: groups 1 and 2 at 10, claim 1 each

  run(*a, 5);  // a goes on past its checkpoint: 15 each, not checkpointed
  // b is assigned group 1 (a's session timed out, but a does not know yet: a zombie).
  auto b = start("b");
  b->source->assign = {1};
  run(*b, 1);
  // The state and the position came from a's checkpoint, together: 10, not 15.
  EXPECT_EQ(b->counts->at(1), 11);
  EXPECT_EQ(b->source->next.at(1), 11);
  EXPECT_EQ(claim_generation(b->task->claims().at("src").at(1)), 2u);
  run(*b, 4);
  checkpoint(*b);  // b: group 1 at 15, claim 2

  // The zombie runs on and checkpoints: group 1 is left out (b claimed it after a), group 2
  // (still a's) is kept.
  run(*a, 10);
  EXPECT_GT(a->counts->at(1), 15);  // the zombie counts on (the shared clock may add a poll)
  const int64_t a2 = a->counts->at(2);
  checkpoint(*a);
  const uint64_t zombie_epoch = a->coordinator->last_completed_epoch();
  const Checkpoint late = read(zombie_epoch);
  EXPECT_EQ(late.member, "a");
  EXPECT_EQ(late.tasks[0].claims.at("src").count(1), 0u);
  EXPECT_EQ(claim_generation(late.tasks[0].claims.at("src").at(2)), 1u);
  const NodeState* counted = late.find(0, "count");
  ASSERT_NE(counted, nullptr);
  EXPECT_EQ(groups_of(counted->state.raw()), (Groups{{2, a2}}));

  // A third member assigned group 1 gets b's state (claim 2), not the zombie's newer one.
  auto c = start("c");
  c->source->assign = {1};
  run(*c, 1);
  EXPECT_EQ(c->counts->at(1), 16);
  EXPECT_EQ(c->source->next.at(1), 16);
  EXPECT_EQ(claim_generation(c->task->claims().at("src").at(1)), 3u);
}

TEST_F(KeyGroupsTest, AZombieStoppedBeforeItsFirstCheckpointIsFencedAllTheSame) {
  auto a = start("a");
  a->source->assign = {1};
  run(*a, 3);
  checkpoint(*a);  // group 1: generation 1
  // z takes group 1 and stops before its first checkpoint: its claim is nowhere in the store.
  auto z = start("z");
  z->source->assign = {1};
  run(*z, 1);
  const uint64_t zombie_claim = z->task->claims().at("src").at(1);
  // n takes group 1 from z: the same highest stored claim (a's), but a later claim.
  auto n = start("n");
  n->source->assign = {1};
  run(*n, 1);
  const uint64_t owner_claim = n->task->claims().at("src").at(1);
  EXPECT_EQ(claim_generation(owner_claim), claim_generation(zombie_claim));
  EXPECT_GT(owner_claim, zombie_claim);
  checkpoint(*n);
  // z wakes and checkpoints: group 1 is left out, not a tie decided by epoch numbers.
  run(*z, 2);
  checkpoint(*z);
  const Checkpoint late = read(z->coordinator->last_completed_epoch());
  EXPECT_EQ(late.member, "z");
  const auto src = late.tasks[0].claims.find("src");
  EXPECT_TRUE(src == late.tasks[0].claims.end() || src->second.count(1) == 0);
}

TEST_F(KeyGroupsTest, RevokedGroupsAreDroppedAndRetentionKeepsTheirLastHolder) {
  auto a = start("a");
  a->source->assign = {1, 2};
  run(*a, 3);
  checkpoint(*a);
  const uint64_t first = a->coordinator->last_completed_epoch();
  a->source->revoke = {1};
  run(*a, 2);
  EXPECT_EQ(a->counts->count(1), 0u);  // dropped with the revocation
  EXPECT_EQ(a->task->claims().at("src").count(1), 0u);
  // keep = 1, but the first epoch is still the only one holding group 1.
  checkpoint(*a);
  checkpoint(*a);
  std::vector<uint64_t> epochs;
  for (const EpochEntry& e : stored()) epochs.push_back(e.epoch);
  EXPECT_NE(std::find(epochs.begin(), epochs.end(), first), epochs.end());
  EXPECT_EQ(epochs.size(), 2u) << "the newest and the holder of group 1";

  // Once another member checkpointed group 1, the old entry goes with the next retention.
  auto b = start("b");
  b->source->assign = {1};
  run(*b, 2);
  EXPECT_EQ(b->counts->at(1), 5);  // 3 restored + 2
  checkpoint(*b);
  checkpoint(*a);
  epochs.clear();
  for (const EpochEntry& e : stored()) epochs.push_back(e.epoch);
  EXPECT_EQ(std::find(epochs.begin(), epochs.end(), first), epochs.end());
}

TEST_F(KeyGroupsTest, ARestartKeepsOnlyTheGroupsItIsAssignedAgain) {
  {
    auto a = start("a");
    a->source->assign = {1, 2};
    run(*a, 4);
    checkpoint(*a);
  }
  auto a = start("a");  // restored at start: both groups
  EXPECT_EQ(*a->counts, (Groups{{1, 4}, {2, 4}}));
  a->source->assign = {2};
  run(*a, 1);
  EXPECT_EQ(*a->counts, (Groups{{2, 5}})) << "group 1 moved while the member was down";
  EXPECT_EQ(a->task->claims().at("src").count(1), 0u);
  EXPECT_EQ(claim_generation(a->task->claims().at("src").at(2)), 2u);
}

TEST_F(KeyGroupsTest, MemberEpochsDoNotCollideAndEachRestartFindsItsOwn) {
  EXPECT_NE(member_tag("a"), member_tag("b"));
  EXPECT_EQ(member_tag(""), 0u);
  {
    auto a = start("a");
    auto b = start("b");
    a->source->assign = {1};
    b->source->assign = {2};
    run(*a, 2);
    run(*b, 3);
    checkpoint(*a);
    checkpoint(*b);
    EXPECT_EQ(a->coordinator->last_completed_epoch() & k_member_mask, member_tag("a"));
    EXPECT_EQ(b->coordinator->last_completed_epoch() & k_member_mask, member_tag("b"));
  }
  EXPECT_EQ(stored().size(), 2u);
  auto b = start("b");
  EXPECT_EQ(*b->counts, (Groups{{2, 3}}));
}

}  // namespace
}  // namespace sluice::host::checkpoint
