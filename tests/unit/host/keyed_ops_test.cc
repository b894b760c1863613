// core_ops' keyed operators (key_by, aggregate) and sl_message.key_group (ABI 1.3), with the
// real plugin in a real task: what `sluiced test` cannot show, because its injected
// elements have no key and its expectations compare values only. A source emits words as
// keyed messages tagged with key groups (as from_kafka tags partitions); a sink records
// value, key, key group, event time and headers of what reaches it.
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_registry.hpp"
#include "support/build_plugins.hpp"
#include "support/in_process_plugin.hpp"
#include "value/json.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

Value object(std::vector<std::pair<std::string, Value>> entries) { return Value::object(entries); }

// Message i of `grouped`: value "w<i % words>" (or the int i % words with ints = 1), key
// the same value (none with keyless = 1), key group 1 + i % 3, event time 1000 + i,
// headers {"h": i}.
struct Grouped {
  int64_t next = 0, n = 0, words = 1;
  bool ints = false, keyless = false;
  int64_t group_shift = 0;  // key group 1 + (i + group_shift) % 3
};
int64_t config_int(sl_value config, const char* key, int64_t otherwise) {
  sl_value v;
  return host()->object_get(config, key, std::strlen(key), &v) ? v.as.i : otherwise;
}
sl_status grouped_create(const sl_node_init* init, void** self) {
  *self = new Grouped{0,
                      config_int(init->config, "n", 0),
                      config_int(init->config, "words", 1),
                      config_int(init->config, "ints", 0) != 0,
                      config_int(init->config, "keyless", 0) != 0,
                      config_int(init->config, "group_shift", 0)};
  return SL_OK;
}
void grouped_destroy(void* self) { delete static_cast<Grouped*>(self); }
sl_status grouped_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto* s = static_cast<Grouped*>(self);
  std::vector<Value> held;  // owns values and headers until emit returned
  std::vector<sl_message> out;
  for (uint32_t b = 0; b < budget && s->next < s->n; ++b, ++s->next) {
    const int64_t i = s->next;
    Value word =
        s->ints ? Value::integer(i % s->words) : Value::string("w" + std::to_string(i % s->words));
    std::pair<std::string, Value> header{"h", Value::integer(i)};
    Value headers = Value::object(std::span(&header, 1));
    out.push_back({word.raw(), s->keyless ? sl_null() : word.raw(), headers.raw(), 1000 + i,
                   static_cast<uint64_t>(1 + (i + s->group_shift) % 3)});
    held.push_back(std::move(word));
    held.push_back(std::move(headers));
  }
  *state = s->next < s->n ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return host()->emit(ctx, out.data(), out.size());
}

// record: one line per message: value, key, key group, event time, headers.
std::map<std::string, std::vector<std::string>> g_sink;
sl_status record_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  sl_str id = host()->node_id(ctx);
  auto& lines = g_sink[std::string(id.data, id.size)];
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    lines.push_back(json_dump(m->value) + " " + json_dump(m->key) + " g" +
                    std::to_string(m->key_group) + " " + std::to_string(m->timestamp_ns) + " " +
                    json_dump(m->headers));
  }
  return SL_OK;
}

// tagged: map_keys gives "k" + the int value; its process refuses, so a pipeline through
// it works only when the host chains it.
sl_status tagged_map_keys(void*, sl_context*, const sl_value* in, size_t count, sl_value* out) {
  for (size_t i = 0; i < count; ++i) {
    const std::string key = "k" + std::to_string(in[i].as.i);
    out[i] = host()->string_create(key.data(), key.size());
  }
  return SL_OK;
}
sl_status tagged_process(void*, sl_context* ctx, uint32_t, const sl_batch*) {
  static const char msg[] = "process called";
  host()->set_error(ctx, msg, sizeof msg - 1);
  return SL_FAILED_PRECONDITION;
}

const sl_param k_grouped_params[] = {
    {sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "words", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "ints", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "keyless", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "group_shift", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr}};

class KeyedOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sink.clear();
    Status loaded = test_support::load_build_plugin(*registry_, "libsluice_core_ops.so");
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
    static sl_node_type grouped = test_support::source_node_type(
        "grouped", k_grouped_params, grouped_create, grouped_destroy, grouped_poll);
    static sl_node_type record = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "record");
      t.process = record_process;
      return t;
    }();
    static sl_node_type tagged = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_OPERATOR, "tagged");
      t.process = tagged_process;
      t.map_keys = tagged_map_keys;
      return t;
    }();
    static const sl_node_type* types[] = {&grouped, &record, &tagged};
    static sl_plugin plugin = test_support::in_process_plugin("keyed_test_nodes", types);
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
  }

  struct Run {
    Status status;
    std::map<std::string, std::vector<std::string>> sinks;
    std::map<std::string, Value> states;  // snapshots of the stateful nodes at the end
    std::map<std::string, std::pair<uint64_t, uint64_t>> counters;  // id -> (in, out)
  };
  // `source` goes into [sources.src] after type = "grouped"; `ops` are the operators; the
  // sink `out` reads `last`.
  // `between` runs after start and before run (the task's nodes are live).
  Run run(const std::string& source, const std::string& ops, const std::string& last,
          const std::vector<std::pair<std::string, Value>>* restore = nullptr,
          const std::function<void(Task&)>& between = nullptr) {
    g_sink.clear();
    const std::string toml = "[runtime]\nbatch_size = 7\n[sources.src]\ntype = \"grouped\"\n" +
                             source + "\n" + ops +
                             "\n[sinks.out]\ntype = \"record\"\ninputs = [\"" + last + "\"]\n";
    auto doc = parse_config_string(toml, "keyed.toml");
    EXPECT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, *registry_);
    for (const auto& d : spec.diagnostics) ADD_FAILURE() << d.to_string();
    spec.value->registry = registry_;  // the functions key_by and aggregate bind
    Task task(*spec.value, TaskOptions{7, 0, 1, &clock_});
    Run r;
    r.status = task.create();
    for (const NodeRuntime& n : task.nodes()) {
      r.counters[n.id] = {n.counters->messages_in.load(), n.counters->messages_out.load()};
    }
    if (r.status.is_ok() && restore != nullptr) r.status = task.restore_states(*restore);
    if (r.status.is_ok()) r.status = task.start();
    if (r.status.is_ok() && between) between(task);
    if (r.status.is_ok()) r.status = task.run();
    if (r.status.is_ok()) {
      auto states = task.snapshot_states();
      EXPECT_TRUE(states.is_ok()) << states.status().message();
      if (states.is_ok()) {
        for (auto& [id, v] : states.value()) r.states[id] = v;
      }
    }
    for (const NodeRuntime& n : task.nodes()) {
      r.counters[n.id] = {n.counters->messages_in.load(), n.counters->messages_out.load()};
    }
    r.sinks = g_sink;
    return r;
  }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  VirtualClock clock_{0};
};

const char* k_count = R"([operators.counts]
type = "aggregate"
inputs = ["src"]
function = "count"
start = 0
)";

TEST_F(KeyedOpsTest, AggregateEmitsEachKeysCountWithTheInputsKeyGroupTimeAndHeaders) {
  // Word i % 3 in group 1 + i % 3: each word in one group, as records keyed by word are in
  // one partition. The changelog of each word, every message's own metadata kept.
  Run r = run("n = 7\nwords = 3", k_count, "counts");
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  const std::vector<std::string> want{R"(1 "w0" g1 1000 {"h":0})", R"(1 "w1" g2 1001 {"h":1})",
                                      R"(1 "w2" g3 1002 {"h":2})", R"(2 "w0" g1 1003 {"h":3})",
                                      R"(2 "w1" g2 1004 {"h":4})", R"(2 "w2" g3 1005 {"h":5})",
                                      R"(3 "w0" g1 1006 {"h":6})"};
  EXPECT_EQ(r.sinks["out"], want);
}

TEST_F(KeyedOpsTest, OneKeyInTwoKeyGroupsHasAStateInEach) {
  // Input not partitioned by key (w0 arrives in groups 1, 3, 2, ...): each group counts
  // its own, as two members owning those partitions would.
  Run r = run("n = 9\nwords = 2", k_count, "counts");
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  const std::vector<std::string> want{
      R"(1 "w0" g1 1000 {"h":0})", R"(1 "w1" g2 1001 {"h":1})", R"(1 "w0" g3 1002 {"h":2})",
      R"(1 "w1" g1 1003 {"h":3})", R"(1 "w0" g2 1004 {"h":4})", R"(1 "w1" g3 1005 {"h":5})",
      R"(2 "w0" g1 1006 {"h":6})", R"(2 "w1" g2 1007 {"h":7})", R"(2 "w0" g3 1008 {"h":8})"};
  EXPECT_EQ(r.sinks["out"], want);
}

TEST_F(KeyedOpsTest, StateIsKeptPerKeyGroupAndRestoredPerKeyGroup) {
  // 30 messages of 3 words; word i % 3 always comes in group 1 + i % 3 here, so each group
  // holds one word: as from_kafka's partitions of records keyed by word.
  Run first = run("n = 30\nwords = 3", k_count, "counts");
  ASSERT_TRUE(first.status.is_ok()) << first.status.message();
  const Value& state = first.states["counts"];
  const std::string json = json_dump(state.raw());
  EXPECT_EQ(json_dump(state.get("version").value().raw()), "1");
  const auto groups = state.get("groups");
  ASSERT_TRUE(groups && groups->is_object()) << json;
  ASSERT_EQ(groups->size(), 3u) << json;
  for (int g = 1; g <= 3; ++g) {
    const auto table = groups->get(std::to_string(g));
    ASSERT_TRUE(table) << "group " << g << ": " << json;
    const std::string want_key = "\"w" + std::to_string(g - 1) + "\"";
    EXPECT_EQ(json_dump(table->get("keys").value().raw()), "[" + want_key + "]") << json;
    EXPECT_EQ(json_dump(table->get("states").value().raw()), "[10]") << json;
  }
  // One group's state alone (as the host will move a partition's group): restored, its
  // word counts on from 10; the other words start from `start`.
  Value only_g2 = object(
      {{"version", Value::integer(1)}, {"groups", object({{"2", groups->get("2").value()}})}});
  std::vector<std::pair<std::string, Value>> restore{{"counts", only_g2}};
  Run second = run("n = 6\nwords = 3", k_count, "counts", &restore);
  ASSERT_TRUE(second.status.is_ok()) << second.status.message();
  ASSERT_EQ(second.sinks["out"].size(), 6u);
  EXPECT_EQ(second.sinks["out"][0].substr(0, 7), R"(1 "w0" )");
  EXPECT_EQ(second.sinks["out"][1].substr(0, 8), R"(11 "w1" )");
  EXPECT_EQ(second.sinks["out"][2].substr(0, 7), R"(1 "w2" )");
  EXPECT_EQ(second.sinks["out"][4].substr(0, 8), R"(12 "w1" )");
}

// The node's own callbacks (sl_node_type.restore_group / drop_group), as the host calls them
// when a source's partitions are assigned or revoked: on the live node of `id`.
struct KeyedCalls {
  Task& task;
  const NodeRuntime& node(const std::string& id) const {
    for (const NodeRuntime& n : task.nodes()) {
      if (n.id == id) return n;
    }
    ADD_FAILURE() << "no node " << id;
    return task.nodes().front();
  }
  sl_status restore_group(const std::string& id, uint32_t group, const Value& state) const {
    const NodeRuntime& n = node(id);
    EXPECT_NE(n.vt->restore_group, nullptr);
    return n.vt->restore_group(n.self, n.ctx.get(), group, state.raw());
  }
  sl_status drop_group(const std::string& id, uint32_t group) const {
    const NodeRuntime& n = node(id);
    EXPECT_NE(n.vt->drop_group, nullptr);
    return n.vt->drop_group(n.self, n.ctx.get(), group);
  }
};

Value group_table(const std::string& key, int64_t count) {
  const std::vector<Value> keys{Value::string(key)};
  const std::vector<Value> states{Value::integer(count)};
  return object({{"keys", Value::array(keys)}, {"states", Value::array(states)}});
}

TEST_F(KeyedOpsTest, AggregateIsAKeyedNodeType) {
  Run r = run("n = 1", k_count, "counts", nullptr, [](Task& task) {
    const NodeRuntime& n = KeyedCalls{task}.node("counts");
    EXPECT_EQ(n.vt->flags, SL_NODE_STATEFUL | SL_NODE_KEYED_STATE);
  });
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
}

TEST_F(KeyedOpsTest, RestoreGroupReplacesOneGroupAndDropGroupForgetsOneGroup) {
  // w0 in g1, w1 in g2, w2 in g3, 10 each, restored at start; then, as assignments and
  // revocations would: g1 replaced (w0 at 100), g2 dropped, g3 restored as null (empty).
  Run first = run("n = 30\nwords = 3", k_count, "counts");
  ASSERT_TRUE(first.status.is_ok()) << first.status.message();
  std::vector<std::pair<std::string, Value>> restore{{"counts", first.states["counts"]}};
  Run second = run("n = 6\nwords = 3", k_count, "counts", &restore, [](Task& task) {
    KeyedCalls calls{task};
    EXPECT_EQ(calls.restore_group("counts", 1, group_table("w0", 100)), SL_OK);
    EXPECT_EQ(calls.drop_group("counts", 2), SL_OK);
    EXPECT_EQ(calls.restore_group("counts", 3, Value()), SL_OK);
  });
  ASSERT_TRUE(second.status.is_ok()) << second.status.message();
  ASSERT_EQ(second.sinks["out"].size(), 6u);
  EXPECT_EQ(second.sinks["out"][0].substr(0, 9), R"(101 "w0" )");
  EXPECT_EQ(second.sinks["out"][1].substr(0, 7), R"(1 "w1" )");
  EXPECT_EQ(second.sinks["out"][2].substr(0, 7), R"(1 "w2" )");
  EXPECT_EQ(second.sinks["out"][3].substr(0, 9), R"(102 "w0" )");
  EXPECT_EQ(second.sinks["out"][4].substr(0, 7), R"(2 "w1" )");
  EXPECT_EQ(second.sinks["out"][5].substr(0, 7), R"(2 "w2" )");
}

TEST_F(KeyedOpsTest, AGroupRestoredAloneAndADroppedGroupLeavesTheOthers) {
  // Nothing restored at start; g2 arrives alone (w1 at 10); then g1, which has keys by
  // now, is dropped while g2 and g3 keep counting. The snapshot holds what is left.
  Run r = run("n = 3\nwords = 3", k_count, "counts", nullptr, [](Task& task) {
    EXPECT_EQ(KeyedCalls{task}.restore_group("counts", 2, group_table("w1", 10)), SL_OK);
  });
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  ASSERT_EQ(r.sinks["out"].size(), 3u);
  EXPECT_EQ(r.sinks["out"][0].substr(0, 7), R"(1 "w0" )");
  EXPECT_EQ(r.sinks["out"][1].substr(0, 8), R"(11 "w1" )");
  EXPECT_EQ(r.sinks["out"][2].substr(0, 7), R"(1 "w2" )");

  std::vector<std::pair<std::string, Value>> restore{{"counts", r.states["counts"]}};
  Run after = run("n = 0", k_count, "counts", &restore, [](Task& task) {
    EXPECT_EQ(KeyedCalls{task}.drop_group("counts", 1), SL_OK);
    EXPECT_EQ(KeyedCalls{task}.drop_group("counts", 7), SL_OK);  // never held: no-op
  });
  ASSERT_TRUE(after.status.is_ok()) << after.status.message();
  const Value groups = after.states["counts"].get("groups").value();
  EXPECT_EQ(json_dump(groups.raw()),
            R"({"2":{"keys":["w1"],"states":[11]},"3":{"keys":["w2"],"states":[1]}})");
}

TEST_F(KeyedOpsTest, ABadGroupStateIsRefusedAndLeavesTheGroupAsItWas) {
  Run first = run("n = 3\nwords = 3", k_count, "counts");
  ASSERT_TRUE(first.status.is_ok()) << first.status.message();
  std::vector<std::pair<std::string, Value>> restore{{"counts", first.states["counts"]}};
  Run r = run("n = 1", k_count, "counts", &restore, [](Task& task) {
    KeyedCalls calls{task};
    const std::vector<Value> two{Value::string("a"), Value::string("b")};
    const std::vector<Value> one{Value::integer(1)};
    Value bad = object({{"keys", Value::array(two)}, {"states", Value::array(one)}});
    EXPECT_EQ(calls.restore_group("counts", 1, bad), SL_INVALID_ARGUMENT);
    EXPECT_EQ(calls.restore_group("counts", 1, Value::integer(3)), SL_INVALID_ARGUMENT);
  });
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  ASSERT_EQ(r.sinks["out"].size(), 1u);
  EXPECT_EQ(r.sinks["out"][0].substr(0, 7), R"(2 "w0" )");
}

TEST_F(KeyedOpsTest, BytesKeysStayBytesThroughASnapshot) {
  // Kafka keys are bytes; a restored key must still equal them (bytes "w0" != string "w0").
  const char* ops = R"([operators.keyed]
type = "key_by"
inputs = ["src"]
function = "identity"
[operators.counts]
type = "aggregate"
inputs = ["keyed"]
function = "count"
start = 0
)";
  Value bytes_key = Value::bytes(std::string_view("w0"));
  const std::vector<Value> keys{bytes_key};
  const std::vector<Value> states{Value::integer(7)};
  Value state = object({{"version", Value::integer(1)},
                        {"groups", object({{"1", object({{"keys", Value::array(keys)},
                                                         {"states", Value::array(states)}})}})}});
  std::vector<std::pair<std::string, Value>> restore{{"counts", state}};
  Run r = run("n = 1\nwords = 1", ops, "counts", &restore);
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  // The string key "w0" is another key than the restored bytes one: it starts at 1.
  ASSERT_EQ(r.sinks["out"].size(), 1u);
  EXPECT_EQ(r.sinks["out"][0].substr(0, 7), R"(1 "w0" )");
  const Value& after = r.states["counts"];
  const Value g1 = after.get("groups").value().get("1").value();
  ASSERT_EQ(g1.get("keys").value().size(), 2u) << json_dump(after.raw());
  bool found_bytes = false;
  for (size_t i = 0; i < 2; ++i) {
    if (g1.get("keys").value().at(i).raw().kind == SL_KIND_BYTES) {
      found_bytes = true;
      EXPECT_EQ(json_dump(g1.get("states").value().at(i).raw()), "7");
    }
  }
  EXPECT_TRUE(found_bytes) << json_dump(after.raw());
}

TEST_F(KeyedOpsTest, KeyBySetsTheKeyAndKeepsValueGroupTimeAndHeaders) {
  const char* ops = R"([operators.keyed]
type = "key_by"
inputs = ["src"]
lua = "x * 10"
)";
  Run r = run("n = 3\nwords = 5\nints = 1\nkeyless = 1", ops, "keyed");
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  const std::vector<std::string> want{R"(0 0 g1 1000 {"h":0})", R"(1 10 g2 1001 {"h":1})",
                                      R"(2 20 g3 1002 {"h":2})"};
  EXPECT_EQ(r.sinks["out"], want);
}

TEST_F(KeyedOpsTest, SumOfIntsPerKeyAndItsOverflowGoesToTheFunction) {
  const char* ops = R"([operators.sums]
type = "aggregate"
inputs = ["src"]
function = "sum"
start = 9223372036854775800
)";
  Run r = run("n = 12\nwords = 3\nints = 1", ops, "sums");
  // Keys 0..2, four messages each: key 0 adds 0s; key 1 reaches ...804; key 2 overflows at
  // its fourth message (...800 + 8 > INT64_MAX = ...807): the int path hands it to sum.
  EXPECT_FALSE(r.status.is_ok());
  EXPECT_NE(r.status.message().find("does not fit in a 64-bit int"), std::string::npos)
      << r.status.message();
}

// key_by joins operator chains (sl_node_type.map_keys, ABI 1.3): map -> key_by -> filter
// -> map runs over bare values, the keys carried beside them. The same pipeline with
// on_error = "skip" (never chained) is the reference: same messages, same counters.
std::string chain_ops(const std::string& policy) {
  std::string ops;
  auto op = [&](const char* id, const char* type, const char* input, const std::string& fn) {
    ops += std::string("[operators.") + id + "]\ntype = \"" + type + "\"\ninputs = [\"" + input +
           "\"]\n" + fn + "\n" + policy + "\n";
  };
  op("inc", "map", "src", R"(function = { name = "add", args = { value = 1 } })");
  op("keyed", "key_by", "inc", R"x(lua = "'k' .. (x % 4)")x");
  op("odd", "filter", "keyed", R"(function = { name = "mod", args = { value = 2 } })");
  op("text", "map", "odd", R"(function = "to_string")");
  op("counts", "aggregate", "text", "function = \"count\"\nstart = 0");
  return ops;
}

TEST_F(KeyedOpsTest, KeyByInAChainGivesWhatProcessGives) {
  const std::string source = "n = 40\nwords = 1000\nints = 1";
  Run chained = run(source, chain_ops(""), "counts");
  Run reference = run(source, chain_ops("on_error = \"skip\""), "counts");
  ASSERT_TRUE(chained.status.is_ok()) << chained.status.message();
  ASSERT_TRUE(reference.status.is_ok()) << reference.status.message();
  EXPECT_EQ(chained.sinks, reference.sinks);
  EXPECT_EQ(chained.counters, reference.counters);
  // 1..40, the odd ones (20), keyed k1 or k3 by x % 4, counted per key group (1 + i % 3):
  // the last, 39 (i = 38, group 3), is the 4th k3 of group 3 (3, 15, 27, 39).
  ASSERT_EQ(chained.sinks["out"].size(), 20u);
  EXPECT_EQ(chained.sinks["out"].front(), R"(1 "k1" g1 1000 {"h":0})");
  EXPECT_EQ(chained.sinks["out"].back(), R"(4 "k3" g3 1038 {"h":38})");
}

TEST_F(KeyedOpsTest, TheHostChainsMapKeysAndCarriesTheKeysThroughFilters) {
  // `tagged` refuses process: the run works only because the host chains it.
  const char* ops = R"([operators.tagged]
type = "tagged"
inputs = ["src"]
[operators.even]
type = "filter"
inputs = ["tagged"]
function = { name = "mod", args = { value = 2 } }
)";
  Run r = run("n = 6\nwords = 100\nints = 1\nkeyless = 1", ops, "even");
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  const std::vector<std::string> want{R"(1 "k1" g2 1001 {"h":1})", R"(3 "k3" g1 1003 {"h":3})",
                                      R"(5 "k5" g3 1005 {"h":5})"};
  EXPECT_EQ(r.sinks["out"], want);
  EXPECT_EQ(r.counters["tagged"], std::make_pair(uint64_t{6}, uint64_t{6}));
  EXPECT_EQ(r.counters["even"], std::make_pair(uint64_t{6}, uint64_t{3}));
}

// zip of co-partitioned inputs keeps the key group its parts share; parts from different
// groups give a message of no group (0). Held elements keep their group through a snapshot.
TEST_F(KeyedOpsTest, ZipKeepsTheKeyGroupOnlyWhenItsPartsAgree) {
  auto ops = [](int shift) {
    return "[sources.b]\ntype = \"grouped\"\nn = 3\nints = 1\nwords = 10\ngroup_shift = " +
           std::to_string(shift) +
           "\n[operators.pairs]\ntype = \"zip\"\ninputs = [\"src\", \"b\"]\n";
  };
  Run same = run("n = 3\nints = 1\nwords = 10", ops(0), "pairs");
  ASSERT_TRUE(same.status.is_ok()) << same.status.message();
  const std::vector<std::string> want_same{"[0,0] null g1 1000 null", "[1,1] null g2 1001 null",
                                           "[2,2] null g3 1002 null"};
  EXPECT_EQ(same.sinks["out"], want_same);
  Run shifted = run("n = 3\nints = 1\nwords = 10", ops(1), "pairs");
  ASSERT_TRUE(shifted.status.is_ok()) << shifted.status.message();
  const std::vector<std::string> want_none{"[0,0] null g0 1000 null", "[1,1] null g0 1001 null",
                                           "[2,2] null g0 1002 null"};
  EXPECT_EQ(shifted.sinks["out"], want_none);
}

}  // namespace
}  // namespace sluice::host
