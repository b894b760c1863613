// key_by's repartition_topic, expanded at load (config/repartition_expansion.hpp): the nodes
// it adds and the options it sets, in the document and in the validated graph, and the
// errors, each at the key_by's file:line:col. The real core_ops and kafka plugins declare the
// params the generated nodes are checked against.
#include "config/repartition_expansion.hpp"
#include "config/config_loader.hpp"
#include "config/config_validator.hpp"
#include "executor/host_api.hpp"
#include "graph/graph_export.hpp"
#include "pipeline/pipeline_loader.hpp"
#include "registry/plugin_registry.hpp"
#include "support/build_plugins.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace sluice::host {
namespace {

namespace fs = std::filesystem;

// Where `needle` first starts in `text`, as the validator counts (1-based line and column).
std::pair<uint32_t, uint32_t> line_col(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  uint32_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, static_cast<uint32_t>(at - line_start + 1)};
}

const char* k_word_count = R"toml(name = "wc"
[sources.in]
type = "from_kafka"
brokers = "127.0.0.1:9"
topics = ["in"]
group_id = "g"
value_format = "string"
config = { "session.timeout.ms" = 6000, "security.protocol" = "plaintext" }

[operators.keyed]
type = "key_by"
inputs = ["in"]
lua = "x:sub(1, 3)"
repartition_topic = "by-word"

[operators.counts]
type = "aggregate"
inputs = ["keyed"]
function = "count"
start = 0

[sinks.out]
type = "to_kafka"
inputs = ["counts"]
brokers = "127.0.0.1:9"
topic = "out"

[sinks.raw]
type = "to_kafka"
inputs = ["keyed"]
brokers = "127.0.0.1:9"
topic = "raw"
)toml";

class RepartitionExpansionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(fs::path(SLUICE_TEST_PLUGIN_DIR) / "libsluice_kafka.so")) {
      GTEST_SKIP() << "built without the kafka plugin (SLUICE_BUILD_KAFKA=OFF)";
    }
    load_plugin(*registry_, "libsluice_core_ops.so");
    load_plugin(*registry_, "libsluice_kafka.so");
    load_plugin(*core_only_, "libsluice_core_ops.so");
  }

  static void load_plugin(PluginRegistry& registry, const char* name) {
    Status loaded = test_support::load_build_plugin(registry, name);
    ASSERT_TRUE(loaded.is_ok()) << loaded.message();
  }

  static ConfigDocument parse(const std::string& text) {
    auto doc = parse_config_string(text, "rp.toml");
    EXPECT_TRUE(doc.ok());
    return std::move(*doc.value);
  }

  // As sluiced loads a file: load_config (parse, expand, validate).
  Diagnosed<GraphSpec> load(const std::string& text, const PluginRegistry* registry = nullptr) {
    const fs::path file = fs::path(::testing::TempDir()) / "rp.toml";
    std::ofstream(file) << text;
    return load_config(file, registry ? *registry : *registry_);
  }

  // Whether the kafka plugin's from_kafka has the options the expansion sets (they come with
  // issue 13's from_kafka work; until then the generated nodes cannot validate).
  bool from_kafka_has_origin_options() const {
    const NodeTypeInfo* from_kafka = registry_->find_node_type("from_kafka");
    return from_kafka && from_kafka->find_param("origin_header") &&
           from_kafka->find_param("dedup_origin");
  }

  std::shared_ptr<PluginRegistry> registry_ = std::make_shared<PluginRegistry>();
  std::shared_ptr<PluginRegistry> core_only_ = std::make_shared<PluginRegistry>();
};

std::string str(const toml::node* node) {
  return node && node->is_string() ? node->as_string()->get() : std::string("<absent>");
}

TEST_F(RepartitionExpansionTest, AddsASinkAndASourceAndTheReadersReadTheSource) {
  ConfigDocument doc = parse(k_word_count);
  EXPECT_TRUE(expand_repartitions(doc).empty());

  const toml::table* sink = doc.root["sinks"]["keyed.repartition"].as_table();
  ASSERT_NE(sink, nullptr);
  EXPECT_EQ(str(sink->get("type")), "to_kafka");
  EXPECT_EQ(str(sink->get("brokers")), "127.0.0.1:9");  // the upstream's
  EXPECT_EQ(str(sink->get("topic")), "by-word");
  EXPECT_EQ(str(sink->get("value_format")), "json");
  EXPECT_FALSE(sink->contains("key"));  // the message key (key_by's) is the record key
  ASSERT_NE(sink->get_as<toml::array>("inputs"), nullptr);
  EXPECT_EQ(str(sink->get_as<toml::array>("inputs")->get(0)), "keyed");
  // A producer gets the upstream consumer's connection settings only.
  const toml::table* sink_config = sink->get_as<toml::table>("config");
  ASSERT_NE(sink_config, nullptr);
  EXPECT_TRUE(sink_config->contains("security.protocol"));
  EXPECT_FALSE(sink_config->contains("session.timeout.ms"));

  const toml::table* source = doc.root["sources"]["keyed.repartitioned"].as_table();
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(str(source->get("type")), "from_kafka");
  EXPECT_EQ(str(source->get("brokers")), "127.0.0.1:9");
  EXPECT_EQ(str(source->get_as<toml::array>("topics")->get(0)), "by-word");
  EXPECT_EQ(str(source->get("group_id")), "g.keyed");
  EXPECT_EQ(str(source->get("value_format")), "json");
  EXPECT_EQ(source->get("dedup_origin")->value<bool>(), std::optional(true));
  EXPECT_EQ(source->get_as<toml::table>("config")->size(), 2U);  // the upstream's, whole

  // The readers of key_by read what came back; the string kept its place in the file.
  const toml::array* counts_in = doc.root["operators"]["counts"]["inputs"].as_array();
  EXPECT_EQ(str(counts_in->get(0)), "keyed.repartitioned");
  EXPECT_EQ(counts_in->get(0)->source().begin.line, 18U);
  EXPECT_EQ(str(doc.root["sinks"]["out"]["inputs"][0].node()), "counts");
  EXPECT_EQ(str(doc.root["sinks"]["raw"]["inputs"][0].node()), "keyed.repartitioned");
  // The upstream source tags its records with their origin.
  EXPECT_EQ(doc.root["sources"]["in"]["origin_header"].value<bool>(), std::optional(true));

  // Where the generated pieces come from.
  const GeneratedFrom* from = doc.generated_from("keyed.repartitioned", "group_id");
  ASSERT_NE(from, nullptr);
  EXPECT_EQ(from->node_id, "keyed");
  EXPECT_EQ(from->key, "repartition_topic");
  EXPECT_EQ(from->pos.line, 14U);
  EXPECT_EQ(from->pos.column, 21U);
  EXPECT_NE(doc.generated_from("in", "origin_header"), nullptr);
  EXPECT_EQ(doc.generated_from("in", "brokers"), nullptr);  // written by the user

  // Expanding again changes nothing.
  EXPECT_TRUE(expand_repartitions(doc).empty());
  EXPECT_EQ(doc.root["sources"].as_table()->size(), 2U);
  EXPECT_EQ(str(doc.root["operators"]["counts"]["inputs"][0].node()), "keyed.repartitioned");
}

TEST_F(RepartitionExpansionTest, OwnBrokersGroupAndConfigWin) {
  ConfigDocument doc = parse(R"toml(name = "pipe"
[sources.nums]
type = "from_iterable"
values = ["a", "b"]
[operators.keyed]
type = "key_by"
inputs = ["nums"]
function = "identity"
repartition_topic = "t"
brokers = "b:1"
repartition_config = { "client.id" = "me", "socket.timeout.ms" = 5000 }
[operators.after]
type = "map"
inputs = ["keyed"]
function = "identity"
[sinks.out]
type = "print"
inputs = ["after"]
)toml");
  EXPECT_TRUE(expand_repartitions(doc).empty());
  const toml::table* source = doc.root["sources"]["keyed.repartitioned"].as_table();
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(str(source->get("brokers")), "b:1");
  // No group upstream: the pipeline's name stands in for it.
  EXPECT_EQ(str(source->get("group_id")), "pipe.keyed");
  EXPECT_EQ(source->get_as<toml::table>("config")->size(), 2U);
  EXPECT_EQ(doc.root["sinks"]["keyed.repartition"]["config"].as_table()->size(), 2U);
  EXPECT_FALSE(doc.root["sources"]["nums"].as_table()->contains("origin_header"));

  ConfigDocument named = parse(R"toml([sources.in]
type = "from_kafka"
brokers = "a:1"
topics = ["in"]
group_id = "g"
[operators.keyed]
type = "key_by"
inputs = ["in"]
function = "identity"
repartition_topic = "t"
repartition_group_id = "readers"
)toml");
  EXPECT_TRUE(expand_repartitions(named).empty());
  EXPECT_EQ(str(named.root["sources"]["keyed.repartitioned"]["group_id"].node()), "readers");
}

TEST_F(RepartitionExpansionTest, TheLoadedGraphHasTheGeneratedNodesAndEdges) {
  if (!from_kafka_has_origin_options()) {
    GTEST_SKIP() << "from_kafka does not declare origin_header/dedup_origin yet";
  }
  auto loaded = load(k_word_count);
  for (const auto& d : loaded.diagnostics) ADD_FAILURE() << d.to_string();
  ASSERT_TRUE(loaded.ok());
  const GraphSpec& g = *loaded.value;
  const NodeSpec* sink = g.find("keyed.repartition");
  const NodeSpec* source = g.find("keyed.repartitioned");
  ASSERT_NE(sink, nullptr);
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(sink->role, SL_ROLE_SINK);
  EXPECT_EQ(source->role, SL_ROLE_SOURCE);
  EXPECT_EQ(sink->generated_by, "keyed");
  EXPECT_EQ(source->generated_by_key, "repartition_topic");
  EXPECT_EQ(g.find("keyed")->generated_by, "");
  ASSERT_EQ(sink->inputs.size(), 1U);
  EXPECT_EQ(sink->inputs[0].node, "keyed");
  EXPECT_EQ(g.find("counts")->inputs[0].node, "keyed.repartitioned");
  EXPECT_EQ(g.find("raw")->inputs[0].node, "keyed.repartitioned");
  EXPECT_EQ(g.find("raw")->inputs[0].id, "keyed.repartitioned");
  EXPECT_EQ(source->config.get("dedup_origin")->as_bool(), true);
  EXPECT_EQ(source->config.get("group_id")->as_str(), "g.keyed");
  EXPECT_EQ(g.find("in")->config.get("origin_header")->as_bool(), true);
  EXPECT_EQ(sink->config.get("value_format")->as_str(), "json");
  const std::string dot = to_dot(g);
  EXPECT_NE(dot.find(R"("keyed.repartition" -> "keyed.repartitioned" [label="topic by-word")"),
            std::string::npos)
      << dot;
  EXPECT_NE(to_json(g).find(R"("generated_by":{"node":"keyed","key":"repartition_topic"})"),
            std::string::npos);
}

// The one-line form sluiced prints for the first error.
std::string first_error(const Diagnosed<GraphSpec>& r) {
  for (const auto& d : r.diagnostics) {
    if (d.severity == Severity::error) return d.to_string();
  }
  return "<no error>";
}

TEST_F(RepartitionExpansionTest, WithoutAKafkaSourceUpstreamBrokersAreNeeded) {
  const std::string text = R"toml([sources.nums]
type = "from_iterable"
values = ["a"]
[operators.keyed]
type = "key_by"
inputs = ["nums"]
function = "identity"
repartition_topic = "t"
[sinks.out]
type = "print"
inputs = ["keyed"]
)toml";
  auto r = load(text);
  EXPECT_FALSE(r.ok());
  const auto [line, col] = line_col(text, "\"t\"");
  EXPECT_EQ(first_error(r),
            fmt::format("{}:{}:{}: error: node 'keyed': key 'repartition_topic': needs the "
                        "brokers of the repartition topic: no from_kafka source is upstream of "
                        "this key_by to take them from; set `brokers` on it",
                        (fs::path(::testing::TempDir()) / "rp.toml").string(), line, col));
}

TEST_F(RepartitionExpansionTest, SluicedsLoaderExpandsToo) {
  // load_pipeline (what every sluiced command calls) runs the expansion and keeps its errors.
  const std::string text = R"toml([sources.nums]
type = "from_iterable"
values = ["a"]
[operators.keyed]
type = "key_by"
inputs = ["nums"]
function = "identity"
repartition_topic = "t"
[sinks.out]
type = "print"
inputs = ["keyed"]
)toml";
  const fs::path file = fs::path(::testing::TempDir()) / "rp_pipeline.toml";
  std::ofstream(file) << text;
  auto r = load_pipeline(file, {fs::path(SLUICE_TEST_PLUGIN_DIR)});
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1U) << r.diagnostics[0].to_string();
  EXPECT_EQ(r.diagnostics[0].node_id, "keyed");
  EXPECT_EQ(r.diagnostics[0].pos.line, 8U);
  EXPECT_NE(r.diagnostics[0].message.find("set `brokers` on it"), std::string::npos);

  // With brokers the nodes are there (validated when from_kafka has the origin options).
  std::ofstream(file) << std::string(text).insert(text.find("[sinks"), "brokers = \"b:1\"\n");
  r = load_pipeline(file, {fs::path(SLUICE_TEST_PLUGIN_DIR)});
  if (from_kafka_has_origin_options()) {
    for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r.value->spec.find("keyed.repartitioned"), nullptr);
    EXPECT_EQ(r.value->spec.find("out")->inputs[0].node, "keyed.repartitioned");
  } else {
    for (const auto& d : r.diagnostics) {
      EXPECT_EQ(d.node_id, "keyed") << d.to_string();
      EXPECT_NE(d.message.find("dedup_origin"), std::string::npos) << d.to_string();
    }
  }
}

TEST_F(RepartitionExpansionTest, AFindingOnAGeneratedNodeIsReportedAtTheKeyBy) {
  // Without the kafka plugin the generated to_kafka and from_kafka are unknown types: said at
  // the key_by's repartition_topic, naming what was generated.
  auto r = load(k_word_count, core_only_.get());
  EXPECT_FALSE(r.ok());
  const auto [line, col] = line_col(k_word_count, "\"by-word\"");
  bool sink_seen = false;
  bool source_seen = false;
  for (const auto& d : r.diagnostics) {
    if (d.message.find("'keyed.repartition'") != std::string::npos) {
      sink_seen = true;
      EXPECT_EQ(d.pos.line, line);
      EXPECT_EQ(d.pos.column, col);
      EXPECT_EQ(d.node_id, "keyed");
      EXPECT_EQ(d.key, "repartition_topic");
      EXPECT_TRUE(
          d.message.starts_with("the to_kafka sink 'keyed.repartition' it adds (writing "
                                "to 'by-word'): key 'type': unknown sink type "
                                "'to_kafka'"))
          << d.message;
    }
    if (d.message.find("'keyed.repartitioned'") != std::string::npos) {
      source_seen = true;
      EXPECT_EQ(d.pos.line, line);
    }
  }
  EXPECT_TRUE(sink_seen && source_seen) << first_error(r);
}

TEST_F(RepartitionExpansionTest, ErrorsOfTheExpansionAtTheirKeys) {
  // Upstream sources on different brokers, with no `brokers` to settle it.
  const std::string two = R"toml([sources.a]
type = "from_kafka"
brokers = "a:1"
topics = ["x"]
[sources.b]
type = "from_kafka"
brokers = "b:1"
topics = ["y"]
[operators.both]
type = "union"
inputs = ["a", "b"]
[operators.keyed]
type = "key_by"
inputs = ["both"]
function = "identity"
repartition_topic = "t"
)toml";
  ConfigDocument doc = parse(two);
  auto diags = expand_repartitions(doc);
  ASSERT_EQ(diags.size(), 1U);
  EXPECT_EQ(diags[0].node_id, "keyed");
  EXPECT_EQ(diags[0].key, "repartition_topic");
  EXPECT_EQ(diags[0].pos.line, line_col(two, "\"t\"").first);
  EXPECT_NE(diags[0].message.find("disagree on brokers ('a' has 'a:1', 'b' has 'b:1'); set "
                                  "`brokers` on this key_by"),
            std::string::npos)
      << diags[0].message;
  EXPECT_FALSE(doc.root["sinks"].is_table());  // nothing was added

  // origin_header = false on a source whose records are repartitioned.
  const std::string off = R"toml([sources.in]
type = "from_kafka"
brokers = "a:1"
topics = ["x"]
origin_header = false
[operators.keyed]
type = "key_by"
inputs = ["in"]
function = "identity"
repartition_topic = "t"
)toml";
  ConfigDocument off_doc = parse(off);
  diags = expand_repartitions(off_doc);
  ASSERT_EQ(diags.size(), 1U);
  EXPECT_EQ(diags[0].node_id, "in");
  EXPECT_EQ(diags[0].key, "origin_header");
  EXPECT_EQ(diags[0].pos.line, 5U);
  EXPECT_EQ(diags[0].pos.column, 17U);

  // Two key_bys sharing a topic; key_by keys without repartition_topic.
  const std::string shared = R"toml([sources.in]
type = "from_kafka"
brokers = "a:1"
topics = ["x"]
[operators.k1]
type = "key_by"
inputs = ["in"]
function = "identity"
repartition_topic = "t"
[operators.k2]
type = "key_by"
inputs = ["in"]
function = "identity"
repartition_topic = "t"
[operators.k3]
type = "key_by"
inputs = ["in"]
function = "identity"
brokers = "a:1"
)toml";
  ConfigDocument shared_doc = parse(shared);
  diags = expand_repartitions(shared_doc);
  ASSERT_EQ(diags.size(), 2U);
  EXPECT_EQ(diags[0].node_id, "k2");
  EXPECT_EQ(diags[0].pos.line, 14U);
  EXPECT_NE(diags[0].message.find("already the repartition topic of key_by 'k1'"),
            std::string::npos);
  EXPECT_EQ(diags[1].node_id, "k3");
  EXPECT_EQ(diags[1].key, "brokers");
  EXPECT_EQ(diags[1].pos.line, 19U);
  EXPECT_NE(diags[1].message.find("is used only with repartition_topic"), std::string::npos);
}

TEST_F(RepartitionExpansionTest, ValidatingWithoutTheExpansionIsRefused) {
  // validate_config alone would build a key_by that quietly does not repartition.
  ConfigDocument doc = parse(k_word_count);
  auto r = validate_config(doc, *registry_);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(first_error(r).find("node 'keyed': key 'repartition_topic': was not expanded"),
            std::string::npos)
      << first_error(r);
}

TEST_F(RepartitionExpansionTest, ChainedRepartitionsReadEachOthersSources) {
  // k2 reads k1: expanded after it whatever the file order, it takes its brokers and group
  // from k1's source, which it tags with origins.
  ConfigDocument doc = parse(R"toml([operators.k2]
type = "key_by"
inputs = ["k1"]
function = "identity"
repartition_topic = "t2"
[sources.in]
type = "from_kafka"
brokers = "a:1"
topics = ["x"]
group_id = "g"
[operators.k1]
type = "key_by"
inputs = ["in"]
function = "identity"
repartition_topic = "t1"
)toml");
  EXPECT_TRUE(expand_repartitions(doc).empty());
  EXPECT_EQ(str(doc.root["operators"]["k2"]["inputs"][0].node()), "k1.repartitioned");
  EXPECT_EQ(str(doc.root["sources"]["k2.repartitioned"]["group_id"].node()), "g.k1.k2");
  EXPECT_EQ(doc.root["sources"]["k1.repartitioned"]["origin_header"].value<bool>(),
            std::optional(true));
}

}  // namespace
}  // namespace sluice::host
