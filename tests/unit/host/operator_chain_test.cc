// Operator chaining (host/src/executor/operator_chain.cc) with the real core_ops plugin:
// a run of map/filter/remove nodes runs over bare values through map_values / select_values.
// What a user checks: the sink gets the same values, keys, headers and event times as
// when each operator runs through process (nodes with on_error = "skip" are never chained,
// so the same pipeline with it is the reference), every node's message counters are the
// same, strings made and dropped inside a chain are released (ASan/LSan in CI), fan-out
// ends a chain, and a failure inside a chain names the node that failed.
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
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

// keyed: emits n messages: value i (or INT64_MAX for i == overflow_at), key "k<i>",
// event time 1000 + i, headers {"h": i}; `step` per poll.
struct Keyed {
  int64_t next = 0, n = 0, overflow_at = -1;
  bool bare = false;  // emit_values: bare values, no key, headers or event time
};
int64_t config_int(sl_value config, const char* key, int64_t otherwise) {
  sl_value v;
  return host()->object_get(config, key, std::strlen(key), &v) ? v.as.i : otherwise;
}
sl_status keyed_create(const sl_node_init* init, void** self) {
  *self =
      new Keyed{0, config_int(init->config, "n", 0), config_int(init->config, "overflow_at", -1),
                config_int(init->config, "bare", 0) != 0};
  return SL_OK;
}
void keyed_destroy(void* self) { delete static_cast<Keyed*>(self); }
sl_status keyed_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto* s = static_cast<Keyed*>(self);
  std::vector<Value> held;  // owns keys and headers until emit returned
  std::vector<sl_message> out;
  for (uint32_t b = 0; b < budget && s->next < s->n; ++b, ++s->next) {
    const int64_t i = s->next;
    Value key = Value::string("k" + std::to_string(i));
    std::pair<std::string, Value> header{"h", Value::integer(i)};
    Value headers = Value::object(std::span(&header, 1));
    out.push_back(
        {sl_int(i == s->overflow_at ? INT64_MAX : i), key.raw(), headers.raw(), 1000 + i, 0});
    held.push_back(std::move(key));
    held.push_back(std::move(headers));
  }
  *state = s->next < s->n ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  if (s->bare) {
    std::vector<sl_value> values;
    for (const sl_message& m : out) values.push_back(m.value);
    return host()->emit_values(ctx, values.data(), values.size());
  }
  return host()->emit(ctx, out.data(), out.size());
}

// record: one line per message: value as JSON, key, event time, headers as JSON.
std::map<std::string, std::vector<std::string>> g_sink;
sl_status record_process(void*, sl_context* ctx, uint32_t, const sl_batch* batch) {
  sl_str id = host()->node_id(ctx);
  auto& lines = g_sink[std::string(id.data, id.size)];
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    lines.push_back(json_dump(m->value) + " " + json_dump(m->key) + " " +
                    std::to_string(m->timestamp_ns) + " " + json_dump(m->headers));
  }
  return SL_OK;
}

// twice: map_values doubles ints; its process refuses, so a pipeline through it works
// only when the host chains it.
sl_status twice_map_values(void*, sl_context*, const sl_value* in, size_t count, sl_value* out) {
  for (size_t i = 0; i < count; ++i) out[i] = sl_int(in[i].as.i * 2);
  return SL_OK;
}
sl_status twice_process(void*, sl_context* ctx, uint32_t, const sl_batch*) {
  static const char msg[] = "process called";
  host()->set_error(ctx, msg, sizeof msg - 1);
  return SL_FAILED_PRECONDITION;
}

const sl_param k_keyed_params[] = {
    {sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "overflow_at", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "bare", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr}};

class OperatorChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_sink.clear();
    Status loaded = test_support::load_build_plugin(*registry_, "libsluice_core_ops.so");
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
    static sl_node_type keyed = test_support::source_node_type(
        "keyed", k_keyed_params, keyed_create, keyed_destroy, keyed_poll);
    static sl_node_type record = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "record");
      t.process = record_process;
      return t;
    }();
    static sl_node_type twice = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_OPERATOR, "twice");
      t.process = twice_process;
      t.map_values = twice_map_values;
      return t;
    }();
    static const sl_node_type* types[] = {&keyed, &record, &twice};
    static sl_plugin plugin = test_support::in_process_plugin("chain_test_nodes", types);
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
  }

  // map(add 1) → filter(gt 2) → map(to_string) → filter(truthy) → map(strip), and a
  // second branch from `inc`. `policy` goes on every operator.
  static std::string pipeline(const std::string& policy, int64_t overflow_at = -1) {
    std::string ops;
    auto op = [&](const char* id, const char* type, const char* input, const char* fn) {
      ops += std::string("[operators.") + id + "]\ntype = \"" + type + "\"\ninputs = [\"" + input +
             "\"]\n" + (fn ? std::string("function = ") + fn + "\n" : "") + policy + "\n";
    };
    op("inc", "map", "src", "{ name = \"add\", args = { value = 1 } }");
    op("big", "filter", "inc", "{ name = \"gt\", args = { value = 2 } }");
    op("text", "map", "big", "\"to_string\"");
    op("nonempty", "filter", "text", nullptr);
    op("last", "map", "nonempty", "\"strip\"");
    op("odd", "filter", "inc", "{ name = \"mod\", args = { value = 2 } }");
    return "[runtime]\nbatch_size = 7\n[sources.src]\ntype = \"keyed\"\nn = 50\n" +
           (overflow_at >= 0 ? "overflow_at = " + std::to_string(overflow_at) + "\n" : "") + ops +
           "[sinks.out]\ntype = \"record\"\ninputs = [\"last\"]\n" +
           "[sinks.odds]\ntype = \"record\"\ninputs = [\"odd\"]\n";
  }

  struct Outcome {
    Status status;
    std::map<std::string, std::vector<std::string>> sinks;
    std::map<std::string, std::pair<uint64_t, uint64_t>> counters;  // id → (in, out)
    std::map<std::string, uint64_t> timed_calls;  // id → batch-latency observations
    std::map<std::string, std::pair<uint64_t, uint64_t>> bytes;  // id → (bytes in, bytes out)
  };
  Outcome run(const std::string& toml) {
    g_sink.clear();
    auto doc = parse_config_string(toml, "chain.toml");
    EXPECT_TRUE(doc.ok());
    auto spec = validate_config(*doc.value, *registry_);
    for (const auto& d : spec.diagnostics) ADD_FAILURE() << d.to_string();
    spec.value->registry = registry_;  // the functions the maps and filters bind
    Task task(*spec.value, TaskOptions{7, 0, 1, &clock_});
    Outcome o;
    o.status = task.create();
    if (o.status.is_ok()) o.status = task.start();
    if (o.status.is_ok()) o.status = task.run();
    for (const NodeRuntime& n : task.nodes()) {
      o.counters[n.id] = {n.counters->messages_in.load(), n.counters->messages_out.load()};
      o.bytes[n.id] = {n.counters->bytes_in.load(), n.counters->bytes_out.load()};
      for (const auto& bucket : n.counters->latency_buckets) o.timed_calls[n.id] += bucket.load();
    }
    o.sinks = g_sink;
    return o;
  }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  RealClock clock_;
};

TEST_F(OperatorChainTest, ChainedNodesGiveWhatProcessGives) {
  Outcome chained = run(pipeline(""));
  Outcome reference = run(pipeline("on_error = \"skip\""));  // never chained
  ASSERT_TRUE(chained.status.is_ok()) << chained.status.message();
  ASSERT_TRUE(reference.status.is_ok()) << reference.status.message();
  // 0..49 + 1 = 1..50, > 2: 3..50 as strings, keys, event times and headers of the input.
  ASSERT_EQ(chained.sinks["out"].size(), 48u);
  EXPECT_EQ(chained.sinks["out"].front(), "\"3\" \"k2\" 1002 {\"h\":2}");
  EXPECT_EQ(chained.sinks["out"].back(), "\"50\" \"k49\" 1049 {\"h\":49}");
  EXPECT_EQ(chained.sinks, reference.sinks);
  EXPECT_EQ(chained.sinks["odds"].size(), 25u);  // the branch from `inc`: 1, 3, ..., 49
  EXPECT_EQ(chained.counters, reference.counters);
  EXPECT_EQ(chained.counters["inc"], std::make_pair(uint64_t{50}, uint64_t{50}));
  EXPECT_EQ(chained.counters["big"], std::make_pair(uint64_t{50}, uint64_t{48}));
  EXPECT_EQ(chained.counters["last"], std::make_pair(uint64_t{48}, uint64_t{48}));
  EXPECT_EQ(chained.counters["out"].first, 48u);
  // Payload bytes (value/value.hpp): a chain counts them as process would, without a pass
  // of its own per operator. 8 per int; "3" .. "50" are 7 + 41 * 2 = 89 bytes of text.
  EXPECT_EQ(chained.bytes, reference.bytes);
  EXPECT_EQ(chained.bytes["inc"], std::make_pair(uint64_t{50 * 8}, uint64_t{50 * 8}));
  EXPECT_EQ(chained.bytes["big"], std::make_pair(uint64_t{50 * 8}, uint64_t{48 * 8}));
  EXPECT_EQ(chained.bytes["text"], std::make_pair(uint64_t{48 * 8}, uint64_t{89}));
  EXPECT_EQ(chained.bytes["last"], std::make_pair(uint64_t{89}, uint64_t{89}));
  EXPECT_EQ(chained.bytes["out"].first, 89u);
  EXPECT_EQ(chained.bytes["odds"].first, 25u * 8);
  // Every node of the chain has its batch latency sampled, not only the chain's first.
  for (const char* id : {"inc", "big", "text", "nonempty", "last"}) {
    EXPECT_GT(chained.timed_calls[id], 0u) << id;
  }
}

// core_ops' remove is a filter with its test negated: it offers select_values, so a run of
// removes chains as filters do (through the int kernel and through a bound function), and
// chained it gives what process gives.
TEST_F(OperatorChainTest, RemoveChainsAsFilterDoes) {
  for (const char* type : {"filter", "remove"}) {
    const NodeTypeInfo* info = registry_->find_node_type(type);
    ASSERT_NE(info, nullptr) << type;
    EXPECT_NE(info->vtable.select_values, nullptr) << type;
  }
  const auto pipeline = [](const std::string& policy) {
    std::string ops;
    auto op = [&](const char* id, const char* type, const char* input, const char* fn) {
      ops += std::string("[operators.") + id + "]\ntype = \"" + type + "\"\ninputs = [\"" + input +
             "\"]\nfunction = " + fn + "\n" + policy + "\n";
    };
    op("inc", "map", "src", "{ name = \"add\", args = { value = 1 } }");
    op("small", "remove", "inc", "{ name = \"gt\", args = { value = 40 } }");   // compare kernel
    op("even", "remove", "small", "{ name = \"mod\", args = { value = 2 } }");  // arithmetic
    op("text", "map", "even", "\"to_string\"");
    op("not8", "remove", "text", "{ name = \"eq\", args = { value = \"8\" } }");  // bound fn
    return "[runtime]\nbatch_size = 7\n[sources.src]\ntype = \"keyed\"\nn = 50\n" + ops +
           "[sinks.out]\ntype = \"record\"\ninputs = [\"not8\"]\n";
  };
  Outcome chained = run(pipeline(""));
  Outcome reference = run(pipeline("on_error = \"skip\""));  // never chained
  ASSERT_TRUE(chained.status.is_ok()) << chained.status.message();
  ASSERT_TRUE(reference.status.is_ok()) << reference.status.message();
  // 1..50, not > 40, not odd, as strings, not "8": "2", "4", "6", "10", ..., "40".
  ASSERT_EQ(chained.sinks["out"].size(), 19u);
  EXPECT_EQ(chained.sinks["out"].front(), "\"2\" \"k1\" 1001 {\"h\":1}");
  EXPECT_EQ(chained.sinks["out"][3], "\"10\" \"k9\" 1009 {\"h\":9}");
  EXPECT_EQ(chained.sinks["out"].back(), "\"40\" \"k39\" 1039 {\"h\":39}");
  EXPECT_EQ(chained.sinks, reference.sinks);
  EXPECT_EQ(chained.counters, reference.counters);
  EXPECT_EQ(chained.counters["small"], std::make_pair(uint64_t{50}, uint64_t{40}));
  EXPECT_EQ(chained.counters["even"], std::make_pair(uint64_t{40}, uint64_t{20}));
  EXPECT_EQ(chained.counters["not8"], std::make_pair(uint64_t{20}, uint64_t{19}));
}

TEST_F(OperatorChainTest, BareValuesFromEmitValuesGoStraightIntoAChain) {
  auto bare = [](std::string toml) {
    return toml.replace(toml.find("n = 50\n"), 7, "n = 50\nbare = 1\n");
  };
  Outcome chained = run(bare(pipeline("")));
  Outcome reference = run(bare(pipeline("on_error = \"skip\"")));
  ASSERT_TRUE(chained.status.is_ok()) << chained.status.message();
  ASSERT_EQ(chained.sinks["out"].size(), 48u);
  EXPECT_EQ(chained.sinks["out"].front(),
            "\"3\" null " + std::to_string(SL_NO_TIMESTAMP) + " null");
  EXPECT_EQ(chained.sinks, reference.sinks);
  EXPECT_EQ(chained.counters, reference.counters);
  EXPECT_EQ(chained.counters["src"].second, 50u);
  EXPECT_EQ(chained.bytes, reference.bytes);
  EXPECT_EQ(chained.bytes["last"].second, 89u);
}

TEST_F(OperatorChainTest, NodesWithMapValuesAreChained) {
  const std::string toml =
      "[sources.src]\ntype = \"keyed\"\nn = 3\n"
      "[operators.a]\ntype = \"twice\"\ninputs = [\"src\"]\n"
      "[operators.b]\ntype = \"twice\"\ninputs = [\"a\"]\n"
      "[sinks.out]\ntype = \"record\"\ninputs = [\"b\"]\n";
  Outcome o = run(toml);
  ASSERT_TRUE(o.status.is_ok()) << o.status.message();
  EXPECT_EQ(o.sinks["out"],
            (std::vector<std::string>{"0 \"k0\" 1000 {\"h\":0}", "4 \"k1\" 1001 {\"h\":1}",
                                      "8 \"k2\" 1002 {\"h\":2}"}));
  // With an error policy the host calls process, one message at a time.
  std::string with_policy = toml;
  with_policy.replace(with_policy.find("[sinks.out]"), 0, "on_error = \"skip\"\n");
  o = run(with_policy);
  ASSERT_TRUE(o.status.is_ok()) << o.status.message();
  EXPECT_TRUE(o.sinks["out"].empty());  // b's process refused every message: all skipped
}

TEST_F(OperatorChainTest, AFailureInsideAChainNamesTheNode) {
  // INT64_MAX + 1 overflows in `inc`, the head of the chain.
  Outcome o = run(pipeline("", 20));
  ASSERT_FALSE(o.status.is_ok());
  EXPECT_NE(o.status.message().find("node 'inc' (map): process failed: "), std::string::npos)
      << o.status.message();
  // What came before the failing batch went through.
  EXPECT_FALSE(o.sinks["out"].empty());
}

TEST_F(OperatorChainTest, SkipOnAChainedNodesNeighbourKeepsTheRestChained) {
  // `inc` skips the overflowing element (and so is not chained); the rest still chain.
  std::string toml = pipeline("", 20);
  toml.replace(toml.find("[operators.big]"), 0, "on_error = \"skip\"\n");
  Outcome o = run(toml);
  ASSERT_TRUE(o.status.is_ok()) << o.status.message();
  EXPECT_EQ(o.sinks["out"].size(), 47u);  // 3..50 without 21
  EXPECT_EQ(o.counters["inc"], std::make_pair(uint64_t{50}, uint64_t{49}));
}

}  // namespace
}  // namespace sluice::host
