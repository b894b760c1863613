// The kafka plugin's parts of state that moves with its partition (docs/SCALING.md), in this
// process against sluice_test_broker (librdkafka's mock cluster in a process of its own),
// with kcat as another process:
// - the "kafka" checkpoint store shared by several processes (the members of one pipeline):
//   a store opened earlier lists and reads what others wrote into the topic since, and sees
//   their removals;
// - from_kafka in a group calls the host's key_groups_assigned for the key groups of its
//   new partitions before it chooses their offsets, and a group's restored position (handed
//   back re-entrantly through its own restore_group, as the host does) wins.
#include "checkpoint/store.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_loader.hpp"
#include "registry/plugin_registry.hpp"
#include "support/in_process_plugin.hpp"
#include "value/json.hpp"
#include "value/value.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace sluice::host {
namespace {

/// One sluice_test_broker process with topics "cp" (1 partition) and "t" (2).
class Broker {
 public:
  Broker() {
    int in[2];
    int out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, in[1]);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    std::string path = SLUICE_TEST_BROKER_PATH;
    std::string topic_flag = "--topic";
    std::string topic = "cp:1";
    std::string topic2 = "t:2";
    char* argv[] = {path.data(),       topic_flag.data(), topic.data(),
                    topic_flag.data(), topic2.data(),     nullptr};
    const int rc = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
    if (rc != 0) {
      pid_ = -1;
      return;
    }
    bootstrap_ = read_line(std::chrono::seconds(20));
  }
  ~Broker() {
    if (in_ >= 0) ::close(in_);  // EOF: the broker exits
    if (pid_ > 0) {
      int status = 0;
      for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (i == 60) ::kill(pid_, SIGKILL);
      }
      ::waitpid(pid_, &status, WNOHANG);
    }
    if (out_ >= 0) ::close(out_);
  }
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  [[nodiscard]] const std::string& bootstrap() const { return bootstrap_; }

 private:
  std::string read_line(std::chrono::seconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char c = 0;
      if (::read(out_, &c, 1) != 1) break;
      if (c == '\n') return line;
      line += c;
    }
    return {};
  }

  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string bootstrap_;
};

class KafkaStoreSharedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(broker_.bootstrap().empty()) << "the test broker did not start";
    PluginLoader loader(*registry_, host_api_table());
    const Status loaded =
        loader.load_file(std::filesystem::path(SLUICE_TEST_PLUGIN_DIR) / "libsluice_kafka.so");
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  }

  std::unique_ptr<checkpoint::StoreHandle> open(const std::string& pipeline) {
    const StoreInfo* info = registry_->find_store("kafka");
    EXPECT_NE(info, nullptr);
    if (info == nullptr) return nullptr;
    Value cfg = Value::object(std::vector<std::pair<std::string, Value>>{
        {"brokers", Value::string(broker_.bootstrap())},
        {"topic", Value::string("cp")},
        {"timeout_ms", Value::integer(15000)},
        {"config", Value::object(std::vector<std::pair<std::string, Value>>{})}});
    auto h = checkpoint::StoreHandle::open(*info, pipeline, cfg, registry_);
    EXPECT_TRUE(h.is_ok()) << h.status().message();
    return h.is_ok() ? std::move(h).value() : nullptr;
  }

  /// Another process writes records "KEY|VALUE" (an empty value: a tombstone) into
  /// `topic`[`partition`], and returns once they are acknowledged.
  void kcat_produce(const std::vector<std::string>& lines, const std::string& topic = "cp",
                    int partition = 0) {
    const std::string cmd = std::string(SLUICE_TEST_KCAT) + " -q -b " + broker_.bootstrap() +
                            " -t " + topic + " -p " + std::to_string(partition) + " -K '|' -Z -P";
    FILE* p = ::popen(cmd.c_str(), "w");
    ASSERT_NE(p, nullptr) << cmd;
    for (const std::string& line : lines) std::fprintf(p, "%s\n", line.c_str());
    const int status = ::pclose(p);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << ": " << status;
  }

  static std::vector<uint64_t> epochs(checkpoint::StoreHandle& store, bool committed_only = false) {
    auto list = store.list();
    EXPECT_TRUE(list.is_ok()) << list.status().message();
    std::vector<uint64_t> out;
    if (!list.is_ok()) return out;
    for (const checkpoint::EpochEntry& e : *list) {
      if (!committed_only || e.committed) out.push_back(e.epoch);
    }
    return out;
  }

  Broker broker_;
  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
};

TEST_F(KafkaStoreSharedTest, AStoreOpenedEarlierListsWhatOtherProcessesWroteSince) {
  std::unique_ptr<checkpoint::StoreHandle> first = open("p");
  ASSERT_TRUE(first);
  EXPECT_TRUE(epochs(*first).empty());

  // Another process writes epoch 5 and its commit marker, and a record of another pipeline.
  kcat_produce({"p/5|five", "p/5/committed|1", "q/9|nine"});
  // Another client (a second member in this process) writes epoch 6, committed.
  std::unique_ptr<checkpoint::StoreHandle> second = open("p");
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->write(6, "six").is_ok());
  ASSERT_TRUE(second->mark_committed(6).is_ok());

  EXPECT_EQ(epochs(*first), (std::vector<uint64_t>{6, 5}));
  EXPECT_EQ(epochs(*first, /*committed_only=*/true), (std::vector<uint64_t>{6, 5}));
  auto five = first->read(5);
  ASSERT_TRUE(five.is_ok()) << five.status().message();
  EXPECT_EQ(five->view(), "five");

  // A read of an epoch not listed yet reads the topic first.
  ASSERT_TRUE(second->write(7, "seven").is_ok());
  auto seven = first->read(7);
  ASSERT_TRUE(seven.is_ok()) << seven.status().message();
  EXPECT_EQ(seven->view(), "seven");
  EXPECT_EQ(epochs(*first, /*committed_only=*/true), (std::vector<uint64_t>{6, 5}));

  // Removals by others (tombstones) are seen too; the first store's own writes still count.
  ASSERT_TRUE(second->remove(6).is_ok());
  kcat_produce({"p/5/committed|", "p/5|"});
  ASSERT_TRUE(first->write(8, "eight").is_ok());
  EXPECT_EQ(epochs(*first), (std::vector<uint64_t>{8, 7}));
  EXPECT_EQ(epochs(*second), (std::vector<uint64_t>{8, 7}));
  EXPECT_FALSE(first->read(6).is_ok());
  auto eight = second->read(8);
  ASSERT_TRUE(eight.is_ok()) << eight.status().message();
  EXPECT_EQ(eight->view(), "eight");
}

// ---- from_kafka and key_groups_assigned ----------------------------------------------------

// The host's side, as the lead's executor does it: key_groups_assigned restores each group
// into the keyed nodes (here: the source itself, re-entrantly, from inside its rebalance
// handling) before it returns. Group 1 comes back at offset 3 of t[0]; no checkpoint holds
// group 2.
struct GroupCalls {
  const Task* task = nullptr;
  std::vector<std::vector<uint32_t>> assigned, revoked;
  // Both kinds of call in the order they came: a partial revocation can be followed by a
  // lost assignment (a second revocation) before the next assignment.
  std::vector<std::pair<bool, std::vector<uint32_t>>> in_order;  // true: assigned
  std::vector<sl_status> restored;                               // what each restore_group answered
  std::vector<sl_status> dropped;                                // what each drop_group answered
  std::atomic<int> assigned_calls{0}, revoked_calls{0};          // read by the test's other thread
  std::atomic<int> owned{0};  // groups assigned and not revoked since
};
GroupCalls g_calls;
std::vector<std::string> g_values;

const NodeRuntime* node_of(const Task& task, const std::string& id) {
  for (const NodeRuntime& n : task.nodes()) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

sl_status fake_assigned(sl_context* ctx, const uint32_t* groups, size_t count) {
  g_calls.assigned.emplace_back(groups, groups + count);
  g_calls.in_order.emplace_back(true, g_calls.assigned.back());
  const NodeRuntime* src = node_of(*g_calls.task, "src");
  if (src == nullptr) return SL_INTERNAL;
  for (size_t i = 0; i < count; ++i) {
    auto state =
        groups[i] == 1 ? json_parse(R"({"positions":[["t",0,3]]})") : Result<Value>(Value());
    g_calls.restored.push_back(src->vt->restore_group(src->self, ctx, groups[i], state->raw()));
  }
  ++g_calls.assigned_calls;
  g_calls.owned += static_cast<int>(count);
  return SL_OK;
}
sl_status fake_revoked(sl_context* ctx, const uint32_t* groups, size_t count) {
  g_calls.revoked.emplace_back(groups, groups + count);
  g_calls.in_order.emplace_back(false, g_calls.revoked.back());
  const NodeRuntime* src = node_of(*g_calls.task, "src");
  if (src == nullptr) return SL_INTERNAL;
  for (size_t i = 0; i < count; ++i) {
    g_calls.dropped.push_back(src->vt->drop_group(src->self, ctx, groups[i]));
  }
  ++g_calls.revoked_calls;
  g_calls.owned -= static_cast<int>(count);
  return SL_OK;
}

std::string groups_text(const std::vector<uint32_t>& groups) {
  std::string out = "[";
  for (uint32_t g : groups) out += (out.size() > 1 ? "," : "") + std::to_string(g);
  return out + "]";
}

class FromKafkaGroupsTest : public KafkaStoreSharedTest {
 protected:
  void SetUp() override {
    ASSERT_FALSE(broker_.bootstrap().empty()) << "the test broker did not start";
    // The plugin gets a host table whose key-group calls are the fakes above.
    static sl_host_api table = [] {
      sl_host_api t = *host_api_table();
      t.key_groups_assigned = fake_assigned;
      t.key_groups_revoked = fake_revoked;
      return t;
    }();
    PluginLoader loader(*registry_, &table);
    const Status loaded =
        loader.load_file(std::filesystem::path(SLUICE_TEST_PLUGIN_DIR) / "libsluice_kafka.so");
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
    static sl_node_type sink = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "record");
      t.process = [](void*, sl_context*, uint32_t, const sl_batch* batch) -> sl_status {
        for (size_t i = 0; i < batch->count; ++i) {
          sl_str v = host_api_table()->value_str(sl_batch_at(batch, i)->value);
          g_values.emplace_back(v.data, v.size);
        }
        return SL_OK;
      };
      return t;
    }();
    static const sl_node_type* types[] = {&sink};
    static sl_plugin plugin = test_support::in_process_plugin("kafka_keyed_sink", types);
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
    g_calls.task = nullptr;
    g_calls.assigned.clear();
    g_calls.revoked.clear();
    g_calls.in_order.clear();
    g_calls.restored.clear();
    g_calls.dropped.clear();
    g_calls.assigned_calls = 0;
    g_calls.revoked_calls = 0;
    g_calls.owned = 0;
    g_values.clear();
  }

  /// The pipeline of `toml` as a created task (the spec kept in spec_).
  std::unique_ptr<Task> make_task(const std::string& toml, const Clock& clock) {
    auto doc = parse_config_string(toml, "kg.toml");
    EXPECT_TRUE(doc.ok());
    if (!doc.ok()) return nullptr;
    auto spec = validate_config(*doc.value, *registry_);
    for (const auto& d : spec.diagnostics) ADD_FAILURE() << d.to_string();
    if (!spec.value) return nullptr;
    spec_ = std::make_unique<GraphSpec>(std::move(*spec.value));
    spec_->registry = registry_;
    auto task = std::make_unique<Task>(*spec_, TaskOptions{64, 0, 1, &clock});
    g_calls.task = task.get();
    const Status st = task->create();
    EXPECT_TRUE(st.is_ok()) << st.message();
    return st.is_ok() ? std::move(task) : nullptr;
  }

  std::unique_ptr<GraphSpec> spec_;
};

TEST_F(FromKafkaGroupsTest, AssignedGroupsAreRestoredBeforeTheirOffsetsAreChosen) {
  kcat_produce({"k|a0", "k|a1", "k|a2", "k|a3", "k|a4"}, "t", 0);
  kcat_produce({"k|b0", "k|b1", "k|b2"}, "t", 1);
  const std::string toml = R"(name = "kg"
[sources.src]
type = "from_kafka"
brokers = ")" + broker_.bootstrap() +
                           R"("
topics = ["t"]
group_id = "kg"
start = "earliest"
value_format = "string"
stop_at_end = true
close_timeout_ms = 2000
config = { "fetch.wait.max.ms" = "10", "session.timeout.ms" = "6000", "heartbeat.interval.ms" = "500" }
[sinks.out]
type = "record"
inputs = ["src"]
)";
  RealClock clock;
  std::unique_ptr<Task> made = make_task(toml, clock);
  ASSERT_TRUE(made);
  Task& task = *made;
  // Restored at start: t[1] at 1. The assignment's key_groups_assigned then says that no
  // checkpoint holds group 2 (another member had it, and nothing was stored): that wins,
  // and t[1] starts as `start` says, from the beginning.
  ASSERT_TRUE(task.restore_states({{"src", json_parse(R"({"group":"kg","groups":{"2":)"
                                                      R"({"positions":[["t",1,1]]}}})")
                                               .value()}})
                  .is_ok());
  ASSERT_TRUE(task.start().is_ok());
  std::atomic<bool> ended{false};
  std::thread stopper([&] {
    // Bounded: stop_at_end ends the task; this only keeps a broken run from hanging.
    for (int i = 0; i < 600 && !ended; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ended) task.request_stop();
  });
  Status st = task.run();
  ended = true;
  stopper.join();
  ASSERT_TRUE(st.is_ok()) << st.message();

  // One call for both new groups (one assignment), before anything was read; each
  // restore_group made from inside it succeeded.
  ASSERT_EQ(g_calls.assigned.size(), 1u);
  std::vector<uint32_t> groups = g_calls.assigned[0];
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(g_calls.restored, (std::vector<sl_status>{SL_OK, SL_OK}));
  // Leaving the group at the end drops nothing (the task's last snapshot keeps the groups).
  EXPECT_TRUE(g_calls.revoked.empty());
  // t[0] from the restored position 3; t[1] from the beginning.
  std::vector<std::string> values = g_values;
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, (std::vector<std::string>{"a3", "a4", "b0", "b1", "b2"}));
}

TEST_F(FromKafkaGroupsTest, AGroupRevokedToAnotherMemberIsDroppedTheOtherKept) {
  kcat_produce({"k|a0", "k|a1"}, "t", 0);
  kcat_produce({"k|b0", "k|b1"}, "t", 1);
  const std::string source = R"(
[sources.src]
type = "from_kafka"
brokers = ")" + broker_.bootstrap() +
                             R"("
topics = ["t"]
group_id = "kg2"
start = "earliest"
value_format = "string"
close_timeout_ms = 2000
config = { "fetch.wait.max.ms" = "10", "session.timeout.ms" = "6000", "heartbeat.interval.ms" = "500" }
)";
  RealClock clock;
  std::unique_ptr<Task> task = make_task(
      "name = \"kg2\"\n" + source + "[sinks.out]\ntype = \"record\"\ninputs = [\"src\"]\n", clock);
  ASSERT_TRUE(task);
  ASSERT_TRUE(task->start().is_ok());

  // The other member: `sluiced run` (another process) in the same group, once this task
  // has both partitions; the cooperative rebalance then moves one of them there.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sluice-kg2-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path cfg = dir / "other.toml";
  {
    std::ofstream f(cfg);
    f << "name = \"kg2-other\"\n"
      << source << "[sinks.out]\ntype = \"to_kafka\"\ninputs = [\"src\"]\nbrokers = \""
      << broker_.bootstrap() << "\"\ntopic = \"cp\"\n";
  }
  std::atomic<bool> ended{false};
  pid_t other = -1;
  std::thread driver([&] {
    auto wait = [&](const std::atomic<int>& n, int seconds) {
      for (int i = 0; i < seconds * 10 && n == 0 && !ended; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    };
    wait(g_calls.assigned_calls, 30);
    std::string sluiced = SLUICE_TEST_SLUICED;
    std::string run = "run";
    std::string path = cfg.string();
    std::string plugin_flag = "--plugin-dir";
    std::string plugins = SLUICE_TEST_PLUGIN_DIR;
    char* argv[] = {sluiced.data(),     run.data(),     path.data(),
                    plugin_flag.data(), plugins.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir / "other.log").string();
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&other, sluiced.c_str(), &actions, nullptr, argv, environ) != 0) other = -1;
    posix_spawn_file_actions_destroy(&actions);
    wait(g_calls.revoked_calls, 60);
    // Then until the task owns one group (the mock may take both away, "assignment lost",
    // and hand one back), and a little more: nothing may move after that.
    for (int i = 0; i < 400 && g_calls.owned != 1 && !ended; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::seconds(2));
    task->request_stop();
  });
  const Status st = task->run();
  ended = true;
  driver.join();
  if (other > 0) {
    ::kill(other, SIGKILL);
    int status = 0;
    ::waitpid(other, &status, 0);
  }
  // On a failure: the calls in their order and the other member's log (the mock's
  // rebalances under load are what this test depends on).
  std::string history = "calls:";
  for (const auto& [assigned, groups] : g_calls.in_order) {
    history += (assigned ? " assigned" : " revoked") + groups_text(groups);
  }
  {
    std::ifstream in(dir / "other.log");
    const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    history +=
        "\nthe other member's log (end):\n" + log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
  }
  SCOPED_TRACE(history);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_GT(other, 0) << "sluiced did not start";

  // Both groups came with the first assignment. Then one of them went to the other member:
  // revoked (alone, or both when the assignment was lost, one then assigned again), and
  // each revoked group dropped re-entrantly (drop_group from inside the revocation). In the
  // end this task owns one group, as the calls say.
  ASSERT_GE(g_calls.assigned.size(), 1u);
  std::vector<uint32_t> first = g_calls.assigned[0];
  std::sort(first.begin(), first.end());
  EXPECT_EQ(first, (std::vector<uint32_t>{1, 2}));
  ASSERT_GE(g_calls.revoked.size(), 1u)
      << "no revocation within 60 s (is sluiced running? see " << (dir / "other.log") << ")";
  std::set<uint32_t> owned;
  for (const auto& [assigned, groups] : g_calls.in_order) {
    for (uint32_t g : groups) {
      if (assigned) {
        EXPECT_TRUE(owned.insert(g).second) << "group " << g << " assigned while owned";
      } else {
        EXPECT_EQ(owned.erase(g), 1u) << "group " << g << " revoked while not owned";
      }
    }
  }
  EXPECT_EQ(owned.size(), 1u);
  EXPECT_EQ(g_calls.owned, 1);
  for (sl_status st_restore : g_calls.restored) EXPECT_EQ(st_restore, SL_OK);
  EXPECT_FALSE(g_calls.dropped.empty());
  for (sl_status st_drop : g_calls.dropped) EXPECT_EQ(st_drop, SL_OK);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::host
