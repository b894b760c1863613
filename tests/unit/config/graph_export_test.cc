// DOT and JSON renderings of a GraphSpec, and the topology helpers.
#include "graph/graph_export.hpp"
#include "config/config_validator.hpp"
#include "graph/redact.hpp"
#include "graph/topology.hpp"
#include "test_plugin.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::host {
namespace {

GraphSpec validated(std::string_view text) {
  PluginRegistry registry;
  testing::register_test_plugin(registry);
  auto parsed = parse_config_string(text, "/p/g.toml");
  EXPECT_TRUE(parsed.ok());
  auto result = validate_config(*parsed.value, registry);
  for (const auto& d : result.diagnostics) ADD_FAILURE() << d.to_string();
  // The registry dies here; these tests only read ids, types and configs,
  // except `plugin`, which the JSON test checks while the registry lives.
  GraphSpec g = std::move(*result.value);
  for (auto& n : g.nodes) n.info = nullptr;
  return g;
}

constexpr std::string_view k_zip_graph = R"(
name = "zipped"
[sources.a]
type = "from_iterable"
values = [1]
[sources.b]
type = "from_iterable"
values = ["x"]
[operators.z]
type = "zip"
inputs = ["b", "a"]
[sinks.out]
type = "print"
inputs = ["z"]
)";

TEST(GraphExport, Dot) {
  GraphSpec g = validated(k_zip_graph);
  EXPECT_EQ(to_dot(g),
            "digraph \"zipped\" {\n"
            "  rankdir=LR;\n"
            "  node [fontname=\"sans-serif\"];\n"
            "  \"a\" [label=\"a\\nfrom_iterable\", shape=invhouse];\n"
            "  \"b\" [label=\"b\\nfrom_iterable\", shape=invhouse];\n"
            "  \"z\" [label=\"z\\nzip\", shape=box];\n"
            "  \"out\" [label=\"out\\nprint\", shape=house];\n"
            "  \"b\" -> \"z\" [label=\"0\"];\n"
            "  \"a\" -> \"z\" [label=\"1\"];\n"
            "  \"z\" -> \"out\";\n"
            "}\n");
}

TEST(GraphExport, Json) {
  PluginRegistry registry;
  testing::register_test_plugin(registry);
  auto parsed = parse_config_string(k_zip_graph, "/p/g.toml");
  ASSERT_TRUE(parsed.ok());
  auto result = validate_config(*parsed.value, registry);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(
      to_json(*result.value),
      R"({"name":"zipped","nodes":[)"
      R"({"id":"a","role":"source","type":"from_iterable","plugin":"config_test_plugin","inputs":[],"config":{"values":[1]}},)"
      R"({"id":"b","role":"source","type":"from_iterable","plugin":"config_test_plugin","inputs":[],"config":{"values":["x"]}},)"
      R"({"id":"z","role":"operator","type":"zip","on_error":"fail","plugin":"config_test_plugin","inputs":["b","a"],"config":{}},)"
      R"({"id":"out","role":"sink","type":"print","on_error":"fail","plugin":"config_test_plugin","inputs":["z"],"config":{"prefix":""}}],)"
      R"("edges":[{"from":"b","port":"main","to":"z","input":0},{"from":"a","port":"main","to":"z","input":1},)"
      R"({"from":"z","port":"main","to":"out","input":0}]})");
}

// A hand-built spec with characters that need escaping in both formats.
GraphSpec awkward_graph() {
  GraphSpec g;
  g.name = "say \"hi\"\\";
  NodeSpec src;
  src.id = "s\"1";
  src.role = SL_ROLE_SOURCE;
  src.type = "t\\x";
  src.config = Value::object({});
  NodeSpec sink;
  sink.id = "k";
  sink.role = SL_ROLE_SINK;
  sink.type = "line\nbreak";
  sink.inputs.push_back(InputRef{"s\"1", {}, "s\"1", OutputPort::main});
  std::vector<std::pair<std::string, Value>> cfg{{"q\"", Value::string("a\\b\n")}};
  sink.config = Value::object(cfg);
  g.nodes = {src, sink};
  return g;
}

TEST(GraphExport, DotEscapes) {
  EXPECT_EQ(to_dot(awkward_graph()),
            "digraph \"say \\\"hi\\\"\\\\\" {\n"
            "  rankdir=LR;\n"
            "  node [fontname=\"sans-serif\"];\n"
            "  \"s\\\"1\" [label=\"s\\\"1\\nt\\\\x\", shape=invhouse];\n"
            "  \"k\" [label=\"k\\nline\\nbreak\", shape=house];\n"
            "  \"s\\\"1\" -> \"k\";\n"
            "}\n");
}

TEST(GraphExport, JsonEscapes) {
  EXPECT_EQ(
      to_json(awkward_graph()),
      R"({"name":"say \"hi\"\\","nodes":[)"
      R"({"id":"s\"1","role":"source","type":"t\\x","plugin":null,"inputs":[],"config":{}},)"
      R"({"id":"k","role":"sink","type":"line\nbreak","on_error":"fail","plugin":null,"inputs":["s\"1"],"config":{"q\"":"a\\b\n"}}],)"
      R"("edges":[{"from":"s\"1","port":"main","to":"k","input":0}]})");
}

TEST(Redact, SecretKeys) {
  for (std::string_view k :
       {"password", "sasl.password", "ssl.key.password", "SASL.Username",
        "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config", "auth_token", "client_secret",
        "api_key", "ssl.keystore.password", "aws_credentials", "private_key",
        "sasl.oauthbearer.token", "access-token"}) {
    EXPECT_TRUE(is_secret_key(k)) << k;
  }
  for (std::string_view k : {"bootstrap.servers", "sasl.mechanisms", "sasl.mechanism", "topic",
                             "ssl.key.location", "path", "keys", "max_tokens_per_s"}) {
    EXPECT_FALSE(is_secret_key(k)) << k;
  }
}

// The issue's case: librdkafka settings in a `config = {...}` table show in /graph and
// `sluiced graph --format json`; secret ones must not.
TEST(GraphExport, JsonRedactsSecretsAtAnyDepth) {
  GraphSpec g = awkward_graph();
  std::vector<std::pair<std::string, Value>> kafka{{"bootstrap.servers", Value::string("b:9092")},
                                                   {"sasl.mechanisms", Value::string("PLAIN")},
                                                   {"sasl.password", Value::string("hunter2")},
                                                   {"ssl.key.password", Value::string("pem-pass")}};
  std::vector<std::pair<std::string, Value>> nested{{"password", Value::string("p2")},
                                                    {"user", Value::string("u")}};
  std::vector<Value> list{Value::object(nested)};
  std::vector<std::pair<std::string, Value>> cfg{{"topic", Value::string("t")},
                                                 {"config", Value::object(kafka)},
                                                 {"accounts", Value::array(list)},
                                                 {"token", Value::integer(42)}};
  g.nodes[1].config = Value::object(cfg);
  const std::string json = to_json(g);
  EXPECT_NE(json.find(R"("config":{"topic":"t","config":{"bootstrap.servers":"b:9092",)"
                      R"("sasl.mechanisms":"PLAIN","sasl.password":"<redacted>",)"
                      R"("ssl.key.password":"<redacted>"},"accounts":[{"password":"<redacted>",)"
                      R"("user":"u"}],"token":"<redacted>"})"),
            std::string::npos)
      << json;
  for (std::string_view secret : {"hunter2", "pem-pass", "p2", "42"}) {
    EXPECT_EQ(json.find(secret), std::string::npos) << secret;
  }
  // The spec itself keeps the values (the nodes need them).
  EXPECT_EQ(g.nodes[1].config.get("token")->as_int(), 42);
}

GraphSpec graph_of(const std::vector<std::pair<std::string, std::vector<std::string>>>& nodes) {
  GraphSpec g;
  for (const auto& [id, inputs] : nodes) {
    NodeSpec n;
    n.id = id;
    for (const auto& in : inputs) n.inputs.push_back(InputRef{in, {}, in, OutputPort::main});
    g.nodes.push_back(std::move(n));
  }
  return g;
}

TEST(Topology, StableOrderSkipsUnknownInputs) {
  GraphSpec g =
      graph_of({{"s1", {}}, {"s2", {}}, {"x", {"s2", "nope"}}, {"y", {"s1"}}, {"k", {"x", "y"}}});
  EXPECT_EQ(stable_topo_order(g), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(find_cycles(g).empty());
}

TEST(Topology, CyclesInDataFlowOrder) {
  // c1 reads c3, c2 reads c1, c3 reads c2: data flows c1 -> c2 -> c3 -> c1.
  // d reads itself; e is downstream of the first cycle only.
  GraphSpec g = graph_of({{"s", {}},
                          {"c1", {"s", "c3"}},
                          {"c2", {"c1"}},
                          {"c3", {"c2"}},
                          {"d", {"d"}},
                          {"e", {"c3"}}});
  EXPECT_EQ(stable_topo_order(g), (std::vector<size_t>{0}));
  EXPECT_EQ(find_cycles(g), (std::vector<std::vector<size_t>>{{1, 2, 3}, {4}}));
}

}  // namespace
}  // namespace sluice::host
