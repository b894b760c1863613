// [checkpoint] validation: defaults, the store's own keys, and file:line:col errors.
#include "checkpoint/store.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "support/in_process_plugin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::host {
namespace {

sl_status create(const sl_node_init*, void** self) {
  *self = nullptr;
  return SL_OK;
}
void destroy(void*) {}
sl_status poll(void*, sl_context*, uint32_t, int32_t* state) {
  *state = SL_SOURCE_DONE;
  return SL_OK;
}
sl_status process(void*, sl_context*, uint32_t, const sl_batch*) { return SL_OK; }

// A graph to go with each [checkpoint] table (after it, so that line numbers stay).
constexpr const char* k_graph =
    "\n[sources.s]\ntype = \"src\"\n[sinks.k]\ntype = \"snk\"\ninputs = [\"s\"]\n";

class CheckpointConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static const sl_node_type src = [] {
      sl_node_type t{};
      t.struct_size = sizeof t;
      t.role = SL_ROLE_SOURCE;
      t.name = "src";
      t.create = create;
      t.destroy = destroy;
      t.poll = poll;
      return t;
    }();
    static const sl_node_type snk = [] {
      sl_node_type t = src;
      t.role = SL_ROLE_SINK;
      t.name = "snk";
      t.poll = nullptr;
      t.process = process;
      t.min_inputs = t.max_inputs = 1;
      return t;
    }();
    static const sl_node_type* types[] = {&src, &snk};
    static const sl_plugin plugin = test_support::in_process_plugin("ck_config_nodes", types);
    ASSERT_TRUE(checkpoint::register_builtin_stores(registry_).is_ok());
    ASSERT_TRUE(registry_.add_plugin(&plugin, "<test>", nullptr).is_ok());
  }
  Diagnosed<GraphSpec> validate(const std::string& toml) {
    auto doc = parse_config_string(toml + k_graph, "c.toml");
    EXPECT_TRUE(doc.ok());
    return validate_config(*doc.value, registry_);
  }
  std::vector<std::string> errors(const std::string& toml) {
    std::vector<std::string> out;
    for (const auto& d : validate(toml).diagnostics) out.push_back(d.to_string());
    return out;
  }
  PluginRegistry registry_;
};

TEST_F(CheckpointConfigTest, OffWithoutTheTable) {
  auto spec = validate("name = \"p\"\n");
  ASSERT_TRUE(spec.value.has_value());
  EXPECT_FALSE(spec.value->checkpoint.enabled);
}

TEST_F(CheckpointConfigTest, DefaultsAndStoreOptions) {
  auto spec = validate("[checkpoint]\n");
  ASSERT_TRUE(spec.value.has_value());
  const CheckpointSettings& cp = spec.value->checkpoint;
  EXPECT_TRUE(cp.enabled);
  EXPECT_EQ(cp.store, "fs");
  EXPECT_EQ(cp.interval_ms, 10000);
  EXPECT_EQ(cp.keep, 3u);
  EXPECT_FALSE(cp.options.get("dir").has_value());  // fs picks its default at open

  spec =
      validate("[checkpoint]\nstore = \"fs\"\ninterval_ms = 250\nkeep = 5\ndir = \"state/wc\"\n");
  ASSERT_TRUE(spec.value.has_value());
  EXPECT_EQ(spec.value->checkpoint.interval_ms, 250);
  EXPECT_EQ(spec.value->checkpoint.keep, 5u);
  EXPECT_EQ(spec.value->checkpoint.options.get("dir")->as_str(), "state/wc");
  EXPECT_EQ(spec.value->checkpoint.member, "");

  spec = validate("[checkpoint]\nmember = \"worker-2.eu\"\n");
  ASSERT_TRUE(spec.value.has_value());
  EXPECT_EQ(spec.value->checkpoint.member, "worker-2.eu");
}

TEST_F(CheckpointConfigTest, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(errors("[checkpoint]\ninterval_ms = 0\nkeep = \"3\"\ndir = \"../up\"\nspeed = 1\n"
                   "member = \"node 1\"\n"),
            (std::vector<std::string>{
                "c.toml:2:15: error: key 'checkpoint.interval_ms': 0 is out of range; valid "
                "values are >= 1",
                "c.toml:3:8: error: key 'checkpoint.keep': expected int (1..1000000), got string",
                "c.toml:4:7: error: key 'checkpoint.dir': '../up' must not contain '..' (give "
                "the directory itself)",
                "c.toml:5:1: error: key 'checkpoint.speed': unknown key 'speed'; valid "
                "[checkpoint] keys (store 'fs') are: store, interval_ms, keep, member, dir",
                "c.toml:6:10: error: key 'checkpoint.member': may hold only A-Z a-z 0-9 . _ -",
            }));
  EXPECT_EQ(errors("[checkpoint]\nstore = \"kafak\"\n"),
            (std::vector<std::string>{
                "c.toml:2:9: error: key 'checkpoint.store': unknown checkpoint store 'kafak'; "
                "valid stores (built in, or from the loaded plugins) are: fs",
            }));
  EXPECT_EQ(errors("checkpoint = 3\n"),
            (std::vector<std::string>{
                "c.toml:1:14: error: key 'checkpoint': expected a table ([checkpoint]), got int",
            }));
}

}  // namespace
}  // namespace sluice::host
