// The SDK's helpers against the real host: sluice_util.h (the C helpers, exercised by
// sdk_util_c_nodes.c, which is compiled as strict C11) and the C++ layer's batch helpers
// (Context::emit_mapped / emit_selected, Batch::gather_values, Config::task_index and the
// other accessors, in sdk_helpers_cxx_nodes.cc). The node types run in real tasks between
// a source whose messages carry a key, headers, an event time and a key group, and a sink
// that records all of them: what a user checks is that the helpers keep them.
#include "checkpoint/store.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/clock.hpp"
#include "executor/host_api.hpp"
#include "executor/task.hpp"
#include "registry/plugin_registry.hpp"
#include "sdk_helpers_cxx_nodes.hpp"
#include "sdk_util_c_nodes.h"
#include "support/in_process_plugin.hpp"
#include "value/json.hpp"

#include <gtest/gtest.h>

#include <sluice/sluice_util.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

const sl_host_api* host() { return host_api_table(); }

// src: n messages: value i % mod (or the string "s" at string_at), key "k<i>", headers
// {"h": i}, event time 1000 + i, key group 1 + i % 4.
struct Src {
  int64_t next = 0, n = 0, mod = 0, string_at = -1;
};
int64_t config_int(sl_value config, const char* key, int64_t otherwise) {
  sl_value v;
  return host()->object_get(config, key, std::strlen(key), &v) ? v.as.i : otherwise;
}
sl_status src_create(const sl_node_init* init, void** self) {
  *self = new Src{0, config_int(init->config, "n", 0), config_int(init->config, "mod", 0),
                  config_int(init->config, "string_at", -1)};
  return SL_OK;
}
void src_destroy(void* self) { delete static_cast<Src*>(self); }
sl_status src_poll(void* self, sl_context* ctx, uint32_t budget, int32_t* state) {
  auto* s = static_cast<Src*>(self);
  std::vector<Value> held;  // owns keys, headers and strings until emit returned
  std::vector<sl_message> out;
  for (uint32_t b = 0; b < budget && s->next < s->n; ++b, ++s->next) {
    const int64_t i = s->next;
    Value key = Value::string("k" + std::to_string(i));
    std::pair<std::string, Value> header{"h", Value::integer(i)};
    Value headers = Value::object(std::span(&header, 1));
    Value value = i == s->string_at ? Value::string("s") : Value::integer(s->mod ? i % s->mod : i);
    sl_message m{value.raw(), key.raw(), headers.raw(), 1000 + i, {}};
    m.key_group = 1 + static_cast<uint64_t>(i % 4);
    out.push_back(m);
    held.push_back(std::move(key));
    held.push_back(std::move(headers));
    held.push_back(std::move(value));
  }
  *state = s->next < s->n ? SL_SOURCE_MORE : SL_SOURCE_DONE;
  return host()->emit(ctx, out.data(), out.size());
}

// record: one line per message: value, key, event time, headers (JSON), key group.
std::vector<std::string> g_lines;
size_t g_batches = 0;  // process calls of the sink: one per emit call upstream
sl_status record_process(void*, sl_context*, uint32_t, const sl_batch* batch) {
  ++g_batches;
  for (size_t i = 0; i < batch->count; ++i) {
    const sl_message* m = sl_batch_at(batch, i);
    g_lines.push_back(json_dump(m->value) + " " + json_dump(m->key) + " " +
                      std::to_string(m->timestamp_ns) + " " + json_dump(m->headers) + " " +
                      std::to_string(m->key_group));
  }
  return SL_OK;
}

// What src's message i looks like with value `value` (JSON) after a helper kept the rest.
std::string line(int64_t i, const std::string& value) {
  return value + " \"k" + std::to_string(i) + "\" " + std::to_string(1000 + i) +
         " {\"h\":" + std::to_string(i) + "} " + std::to_string(1 + i % 4);
}

const sl_param k_src_params[] = {
    {sizeof(sl_param), "n", SL_PARAM_INT, SL_PARAM_REQUIRED, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "mod", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr},
    {sizeof(sl_param), "string_at", SL_PARAM_INT, 0, nullptr, "", 0, 0, 0.0, 0.0, nullptr}};

class SdkHelpersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_lines.clear();
    test_support::set_sdk_host(host());
    static sl_node_type src =
        test_support::source_node_type("src", k_src_params, src_create, src_destroy, src_poll);
    static sl_node_type record = [] {
      sl_node_type t = test_support::bare_node_type(SL_ROLE_SINK, "record");
      t.process = record_process;
      return t;
    }();
    static std::vector<const sl_node_type*> types = [] {
      std::vector<const sl_node_type*> all{&src, &record};
      uint32_t n = 0;
      const sl_node_type* const* c_types = c_util_node_types(&n);
      all.insert(all.end(), c_types, c_types + n);
      for (const sl_node_type* t : test_support::cxx_helper_node_types()) all.push_back(t);
      return all;
    }();
    static sl_plugin plugin = [] {
      sl_plugin p{};
      p.struct_size = sizeof p;
      p.abi_major = SL_ABI_MAJOR;
      p.abi_minor = SL_ABI_MINOR;
      p.name = "sdk_helpers_test_nodes";
      p.node_types = types.data();
      p.node_type_count = static_cast<uint32_t>(types.size());
      return p;
    }();
    ASSERT_TRUE(registry_->add_plugin(&plugin, "<test>", nullptr).is_ok());
    ASSERT_TRUE(checkpoint::register_builtin_stores(*registry_).is_ok());  // [checkpoint]
  }

  // src (n messages, batches of batch_size) → `op` (a TOML table body) → record.
  static std::string pipeline(int64_t n, uint32_t batch_size, const std::string& op,
                              const std::string& extra = "") {
    return extra + "[runtime]\nbatch_size = " + std::to_string(batch_size) +
           "\n[sources.src]\ntype = \"src\"\nn = " + std::to_string(n) +
           "\n[operators.op]\ninputs = [\"src\"]\n" + op +
           "\n[sinks.out]\ntype = \"record\"\ninputs = [\"op\"]\n";
  }

  std::optional<GraphSpec> spec(const std::string& toml) {
    auto doc = parse_config_string(toml, "helpers.toml");
    EXPECT_TRUE(doc.ok());
    if (!doc.ok()) return std::nullopt;
    auto s = validate_config(*doc.value, *registry_);
    for (const auto& d : s.diagnostics) ADD_FAILURE() << d.to_string();
    if (s.value) s.value->registry = registry_;
    return std::move(s.value);
  }

  // Runs the pipeline to its end as task `index` of `count`; the sink's lines in g_lines.
  Status run(const std::string& toml, uint32_t index = 0, uint32_t count = 1) {
    g_lines.clear();
    g_batches = 0;
    auto s = spec(toml);
    if (!s) return Status(SL_INVALID_ARGUMENT, "invalid config");
    Task task(*s, TaskOptions{s->runtime.batch_size, index, count, &clock_});
    Status st = task.create();
    if (st.is_ok()) st = task.start();
    if (st.is_ok()) st = task.run();
    return st;
  }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  RealClock clock_;
};

// --- the C helpers, called directly ------------------------------------------------------

TEST_F(SdkHelpersTest, CConfigGettersReadValuesAndDefaults) {
  std::string error;
  sl_context ctx{nullptr, 0, &error};  // set_error writes into `error`
  auto config =
      json_parse(R"({"n":5,"ratio":2,"pi":3.5,"flag":true,"name":"abc","list":[1,2],"gone":null})");
  ASSERT_TRUE(config.is_ok());
  const char* failed = c_util_check_config(host(), &ctx, config.value().raw());
  EXPECT_EQ(failed, nullptr) << failed;
  EXPECT_EQ(error, "");
}

TEST_F(SdkHelpersTest, CConfigGettersNameTheKeyInTheirErrors) {
  auto config = json_parse(R"({"n":5,"flag":true,"name":"abc"})");
  ASSERT_TRUE(config.is_ok());
  const char* expected[] = {
      "key 'absent' is required",
      "key 'name' must be an int (got string)",
      "key 'name' must be a number (got string)",
      "key 'n' must be a bool (got int)",
      "key 'n' must be a string (got int)",
      "key 'name' must be an array (got string)",
      "key 'flag' must be a number (got bool)",
  };
  for (int which = 0; which < 7; ++which) {
    std::string error;
    sl_context ctx{nullptr, 0, &error};
    EXPECT_EQ(c_util_config_fail(host(), &ctx, config.value().raw(), which), SL_INVALID_ARGUMENT)
        << which;
    EXPECT_EQ(error, expected[which]) << which;
  }
}

TEST_F(SdkHelpersTest, CMapInsertsFindsErasesAndIterates) {
  for (int64_t n : {1, 2, 3, 7, 12, 13, 100, 5000}) {
    const char* failed = c_util_check_map(host(), n);
    EXPECT_EQ(failed, nullptr) << "n = " << n << ": " << failed;
  }
}

TEST_F(SdkHelpersTest, CMapSnapshotRoundTripsThroughJson) {
  std::string error;
  sl_context ctx{nullptr, 0, &error};
  for (int64_t n : {0, 1, 50, 1000}) {
    const char* failed = c_util_check_snapshot(host(), &ctx, n);
    EXPECT_EQ(failed, nullptr) << "n = " << n << ": " << failed;
  }
  EXPECT_EQ(error, "map state: an entry is not a [key, state] pair");
}

// --- the C helpers in a running task ------------------------------------------------------

TEST_F(SdkHelpersTest, CEmitSelectedKeepsKeyHeadersTimeAndKeyGroup) {
  // Batches of 150: a subset larger than the 64 messages built on the stack, all of a
  // batch (emitted as it is), and none of it; each batch's subset in one emit call.
  struct Case {
    std::string op;
    std::vector<int64_t> kept;
  };
  std::vector<Case> cases;
  {
    Case every3{"type = \"c_every\"\nevery = 3\noffset = 1\n", {}};
    for (int64_t i = 1; i < 400; i += 3) every3.kept.push_back(i);
    Case all{"type = \"c_every\"\nevery = 1\n", {}};
    for (int64_t i = 0; i < 400; ++i) all.kept.push_back(i);
    Case most{"type = \"c_every\"\nevery = 5\nnegate = true\nlabel = \"x\"\n", {}};
    for (int64_t i = 0; i < 400; ++i) {
      if (i % 5 != 0) most.kept.push_back(i);
    }
    Case none{"type = \"c_every\"\nevery = 1\nnegate = true\n", {}};
    cases = {every3, all, most, none};
  }
  for (const Case& c : cases) {
    Status st = run(pipeline(400, 150, c.op));
    ASSERT_TRUE(st.is_ok()) << st.message();
    std::vector<std::string> want;
    for (int64_t i : c.kept) want.push_back(line(i, std::to_string(i)));
    EXPECT_EQ(g_lines, want) << c.op;
    EXPECT_EQ(g_batches, c.kept.empty() ? 0u : 3u) << c.op;
  }
}

TEST_F(SdkHelpersTest, CConfigErrorFailsCreateNamingTheKey) {
  Status st = run(pipeline(3, 7, "type = \"c_scale\"\nfactor = \"two\"\n"));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("key 'factor' must be a number (got string)"), std::string::npos)
      << st.message();
  st = run(pipeline(3, 7, "type = \"c_every\"\nevery = 0\n"));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("key 'every' must be positive"), std::string::npos) << st.message();
}

TEST_F(SdkHelpersTest, CEmitMappedKeepsKeyHeadersTimeAndKeyGroup) {
  Status st = run(pipeline(200, 150, "type = \"c_scale\"\nfactor = 1.5\n"));
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(g_lines.size(), 200u);
  EXPECT_EQ(g_lines[0], line(0, "0.0"));
  EXPECT_EQ(g_lines[1], line(1, "1.5"));
  EXPECT_EQ(g_lines[64], line(64, "96.0"));  // past the 64 messages built on the stack
  EXPECT_EQ(g_lines[199], line(199, "298.5"));
  EXPECT_EQ(g_batches, 2u);  // one emit call per batch
}

TEST_F(SdkHelpersTest, CMapStateSurvivesSnapshotAndRestore) {
  // c_count over values i % 3: emits [value, how often seen]; forgets a value at 5.
  const std::string toml = [&] {
    std::string t = pipeline(9, 4, "type = \"c_count\"\nforget_at = 5\n");
    return t.replace(t.find("n = 9\n"), 6, "n = 9\nmod = 3\n");
  }();
  auto s = spec(toml);
  ASSERT_TRUE(s.has_value());
  Task::NodeStates saved;
  {
    g_lines.clear();
    Task task(*s, TaskOptions{4, 0, 1, &clock_});
    ASSERT_TRUE(task.create().is_ok());
    ASSERT_TRUE(task.start().is_ok());
    ASSERT_TRUE(task.run().is_ok());
    EXPECT_EQ(g_lines.back(), line(8, "[2,3]"));
    auto states = task.snapshot_states();
    ASSERT_TRUE(states.is_ok()) << states.status().message();
    saved = states.value();
  }
  g_lines.clear();
  Task again(*s, TaskOptions{4, 0, 1, &clock_});
  ASSERT_TRUE(again.create().is_ok());
  Status restored = again.restore_states(saved);
  ASSERT_TRUE(restored.is_ok()) << restored.message();
  ASSERT_TRUE(again.start().is_ok());
  ASSERT_TRUE(again.run().is_ok());
  // Each value was seen 3 times before: 4, then 5 (forgotten at 5), then 1 again.
  ASSERT_EQ(g_lines.size(), 9u);
  EXPECT_EQ(g_lines[0], line(0, "[0,4]"));
  EXPECT_EQ(g_lines[3], line(3, "[0,5]"));
  EXPECT_EQ(g_lines[6], line(6, "[0,1]"));
  EXPECT_EQ(g_lines[8], line(8, "[2,1]"));
}

// --- the C++ helpers ----------------------------------------------------------------------

TEST_F(SdkHelpersTest, EmitMappedKeepsKeyHeadersTimeAndKeyGroup) {
  Status st = run(pipeline(200, 150, "type = \"cxx_times_ten\"\n"));
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(g_lines.size(), 200u);
  for (int64_t i : {0, 63, 64, 149, 150, 199}) {
    EXPECT_EQ(g_lines[static_cast<size_t>(i)], line(i, std::to_string(i * 10)));
  }
  EXPECT_EQ(g_batches, 2u);
}

TEST_F(SdkHelpersTest, EmitMappedAndSelectedReturnTheFunctionsFailure) {
  std::string toml = pipeline(100, 150, "type = \"cxx_times_ten\"\n");
  toml.replace(toml.find("n = 100\n"), 8, "n = 100\nstring_at = 70\n");
  Status st = run(toml);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("cxx_times_ten: not an int"), std::string::npos) << st.message();
  EXPECT_EQ(g_lines.size(), 0u);  // nothing of the failing batch went out

  toml = pipeline(100, 150, "type = \"cxx_even\"\n");
  toml.replace(toml.find("n = 100\n"), 8, "n = 100\nstring_at = 70\n");
  st = run(toml);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("cxx_even: not an int"), std::string::npos) << st.message();
  EXPECT_EQ(g_lines.size(), 0u);
}

TEST_F(SdkHelpersTest, EmitSelectedKeepsKeyHeadersTimeAndKeyGroup) {
  Status st = run(pipeline(300, 150, "type = \"cxx_even\"\n"));
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::vector<std::string> want;
  for (int64_t i = 0; i < 300; i += 2) want.push_back(line(i, std::to_string(i)));
  EXPECT_EQ(g_lines, want);
  EXPECT_EQ(g_batches, 2u);

  st = run(pipeline(20, 7, "type = \"cxx_every_third\"\n"));  // batches 0-6, 7-13, 14-19
  ASSERT_TRUE(st.is_ok()) << st.message();
  want.clear();
  for (int64_t i : {0, 3, 6, 7, 10, 13, 14, 17}) want.push_back(line(i, std::to_string(i)));
  EXPECT_EQ(g_lines, want);
}

TEST_F(SdkHelpersTest, ConfigExposesTaskPipelineAndCheckpointing) {
  Status st = run(pipeline(2, 7, "type = \"cxx_tag\"\n", "name = \"p1\"\n"), 1, 3);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(g_lines.size(), 2u);
  EXPECT_EQ(g_lines[1], line(1, "[1,1,3,\"p1\",false]"));
  const std::string checkpointed =
      "name = \"p2\"\n[checkpoint]\ndir = \"" + ::testing::TempDir() + "\"\n";
  st = run(pipeline(1, 7, "type = \"cxx_tag\"\n", checkpointed), 2, 4);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(g_lines.size(), 1u);
  EXPECT_EQ(g_lines[0], line(0, "[0,2,4,\"p2\",true]"));
}

}  // namespace
}  // namespace sluice::host
